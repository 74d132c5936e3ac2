"""Concept-agnostic blocks (`<!-- agnostic:NAME:begin -->`):

- `aif360`: the published AIF360 adversarial-debiasing demo's numbers on Adult, from the
  reference file that says where they were read (results/agnostic/reference/).
"""
from .common import load


def aif360_block():
    r = load("results", "agnostic", "reference", "aif360-adversarial-debiasing.json")
    return (f"{r['method']}, as published: accuracy {r['plain']['accuracy']:.3f} → {r['debiased']['accuracy']:.3f}, "
            f"parity difference {r['plain']['parity_difference']:.3f} → {r['debiased']['parity_difference']:.3f} "
            f"(plain → debiased). Source: {r['source']}. Data: {r['data']}. "
            "(`results/agnostic/reference/aif360-adversarial-debiasing.json`)").replace("-0.", "−0.")


BLOCKS = {"aif360": aif360_block}
