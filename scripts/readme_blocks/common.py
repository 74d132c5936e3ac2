"""What every block module shares: the repository root, JSON reading, number formats."""
import json
import math
import os

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def path(*parts):
    return os.path.join(ROOT, *parts)


def load(*parts):
    with open(path(*parts)) as f:
        return json.load(f)


def load_lines(*parts):
    with open(path(*parts)) as f:
        return [json.loads(line) for line in f if line.strip()]


def exists(*parts):
    return os.path.exists(path(*parts))


def mean_se(values):
    """Mean and standard error (sample sd / √n) of a list of numbers."""
    n = len(values)
    mu = sum(values) / n
    if n < 2:
        return mu, float("nan")
    sd = math.sqrt(sum((x - mu) ** 2 for x in values) / (n - 1))
    return mu, sd / math.sqrt(n)


def pm(mean, se, digits=3, sign=False):
    """`1.234 ± 0.056` (with `sign`, `+1.234 ± 0.056`; minus signs as − )."""
    text = f"{mean:+.{digits}f}" if sign else f"{mean:.{digits}f}"
    return text.replace("-", "−") + f" ± {se:.{digits}f}"


def table(header, rows):
    """A Markdown table from a header list and rows of cells."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)
