#!/usr/bin/env python3
"""How many MNIST digit images the instance protocol's validation images share with training (issue 33).

    .venv/bin/python scripts/hib-digit-overlap.py [--digits 2] [--fraction 0.05] [--draws 20] [--out FILE]

Under `--protocol instance` hedge holds out a share of each class's training images
(`validation_fraction`, 5 % in the recipe) to choose models, never test images. Both come from
the instance train table, which indexes the 60,000 MNIST training digits, and each digit image
recurs in several composites; the test table indexes the 10,000 MNIST test digits. So a held-out
composite is new as a composite but its digit images may all have been trained on, while every
test digit is new. This script counts that share: for `--draws` uniform draws of the held-out
images (the rule of hedge's `split_off_images`: round(fraction x images) per class, uniformly;
hedge draws with ChaCha8 seeded by `validation_seed`, these draws use numpy, so they estimate
the share rather than replay hedge's draw), the fraction of held-out composites with every digit
image, and with at least one, also in a training composite. Writes `results/hib/digit-overlap.json`
(temp file, then rename). Needs numpy (the project's `.venv` has it); reads `HEDGE_DATA_DIR`
(default `./data`).
"""
import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def table(data_dir, digits, part):
    path = os.path.join(data_dir, "n-digit-mnist", "standard_datasets", f"dataset_mnist_{digits}_instance_{part}.npz")
    if not os.path.exists(path):
        sys.exit(f"error: {path} not found; set HEDGE_DATA_DIR to the folder holding n-digit-mnist/")
    return np.load(path)["image_ids"]  # (classes, per class, digits)


def shares(probe_ids, trained_ids):
    """Fractions of probe composites with all / any of their digit images among `trained_ids`."""
    seen = np.zeros(int(max(probe_ids.max(), trained_ids.max())) + 1, dtype=bool)
    seen[trained_ids.reshape(-1)] = True
    hit = seen[probe_ids]  # (composites, digits)
    return float(hit.all(axis=1).mean()), float(hit.any(axis=1).mean())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--digits", type=int, default=2)
    parser.add_argument("--fraction", type=float, default=0.05)
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "hib", "digit-overlap.json"))
    args = parser.parse_args()
    if not 0 < args.fraction < 1:
        sys.exit(f"error: --fraction {args.fraction} must lie strictly between 0 and 1")
    if args.draws < 1:
        sys.exit(f"error: --draws {args.draws} must be at least 1")
    data_dir = os.environ.get("HEDGE_DATA_DIR", "./data")
    train, test = table(data_dir, args.digits, "train"), table(data_dir, args.digits, "test")
    classes, per_class, _ = train.shape
    take = min(max(round(per_class * args.fraction), 1), per_class - 2)
    all_seen, any_seen = [], []
    for draw in range(args.draws):
        rng = np.random.default_rng(draw)
        order = np.argsort(rng.random((classes, per_class)), axis=1)
        held, kept = order[:, :take], order[:, take:]
        held_ids = np.take_along_axis(train, held[:, :, None], axis=1).reshape(-1, args.digits)
        kept_ids = np.take_along_axis(train, kept[:, :, None], axis=1)
        a, b = shares(held_ids, kept_ids)
        all_seen.append(a)
        any_seen.append(b)
    # The test table indexes the MNIST test set (another IDX file), so its ids are not comparable
    # with the training ids and no test digit image is a training one; nothing to count there.
    result = {
        "digits": args.digits,
        "fraction": args.fraction,
        "held_out_per_class": take,
        "draws": args.draws,
        "validation_all_digits_trained": float(np.mean(all_seen)),
        "validation_all_digits_trained_std": float(np.std(all_seen)),
        "validation_any_digit_trained": float(np.mean(any_seen)),
        "validation_any_digit_trained_std": float(np.std(any_seen)),
        "train_composites": int(classes * per_class),
        "test_composites": int(test.shape[0] * test.shape[1]),
        "distinct_training_digit_images": int(np.unique(train).size),
        "command": " ".join([".venv/bin/python", "scripts/hib-digit-overlap.py"] + sys.argv[1:]),
    }
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    os.replace(tmp, args.out)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
