"""The generated blocks of hedge's Markdown files, one module per pillar (see scripts/docs.py)."""
