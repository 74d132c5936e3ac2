#!/usr/bin/env python3
"""Which classes a trained HIB model lays on top of each other, and by which digits they differ (issue 79).

    .venv/bin/python scripts/hib-class-merges.py [RUN_DIR ...] [--out FILE]

With the hidden layer, the N = 2, D = 2 table's KNN varies between seeds far more than before.
This script looks at where a seed loses: it embeds the instance test split (clean) with each
run's chosen weights (`hedge.hib.Run(RUN).embed_split("test", weights=RUN/model_best.safetensors)`,
the weights the table scores), takes each image's embedding mean (a mixture's weighted mean of its components'
means), and per class the centroid of its images and their mean distance to it (the class's
radius). A class is merged with its nearest other class when the two centroids lie closer than
the class's radius: the two clouds overlap more than they are apart. For each merged pair it
records the positions where the two classes' numbers differ and, where that is one position, the
two digits (`3-8`: a 3 in one class where the other has an 8). A 1-NN reading (Euclidean distance
between means, each image left out of its own gallery) per class shows where the errors fall; it
is a diagnostic, not Table 1's KNN, which ranks by match probability. The same 1-NN is also read
on groups of images fixed across the runs: for each digit pair merged in any run, the images whose
number holds either digit; and the images whose number holds none of those digits.

Default runs: every Table 1 run (`point|mog1|mog2-seedK`) of `results/hib/n2-d2/` and
`results/hib/n2-d2-wd1e-1/` that has ended (its `eval.json` exists). Writes
`results/hib/class-merges.json` (temp file, then rename; with each run's class centroids) and a
figure of the centroids, `results/hib/class-merges.png`; `hedge report` renders the JSON
(`results/hib/report/class-merges.md`). Needs the hedge package and numpy (the project's `.venv`
has them); reads `HEDGE_DATA_DIR` (default `./data`).
"""
import argparse
import glob
import json
import os
import re
import sys

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TABLE_RUN = re.compile(r"^(point|mog1|mog2)-seed(\d+)$")
DEFAULT_TABLES = ("results/hib/n2-d2", "results/hib/n2-d2-wd1e-1")


def default_runs():
    runs = []
    for table in DEFAULT_TABLES:
        for run in sorted(glob.glob(os.path.join(ROOT, table, "runs", "*"))):
            if TABLE_RUN.match(os.path.basename(run)) and os.path.exists(os.path.join(run, "eval.json")):
                runs.append(run)
    return runs


def class_numbers(digits):
    """The number each class index stands for (the instance test table's `chosen_numbers`)."""
    data_dir = os.environ.get("HEDGE_DATA_DIR", "./data")
    path = os.path.join(data_dir, "n-digit-mnist", "standard_datasets", f"dataset_mnist_{digits}_instance_test.npz")
    if not os.path.exists(path):
        sys.exit(f"error: {path} not found; set HEDGE_DATA_DIR to the folder holding n-digit-mnist/")
    return np.load(path)["chosen_numbers"]


def embed(run):
    """The run's clean instance test images embedded with its chosen weights: (means, labels)."""
    from hedge import hib

    weights = os.path.join(run, "model_best.safetensors")
    if not os.path.exists(weights):
        sys.exit(f"error: {weights} not found: the run has not chosen weights (has it ended?)")
    embedding, labels = hib.Run(run).embed_split("test", weights=weights)
    return means_of(embedding), labels


def means_of(embedding):
    """Each image's embedding mean: a mixture's components weighted, (images, D)."""
    mean = embedding.mean.numpy()
    if mean.ndim == 2:
        return mean
    return (mean * embedding.weights.numpy()[:, :, None]).sum(axis=1)


def merges(points, labels, numbers, digits):
    classes = np.unique(labels)
    centroids = np.stack([points[labels == c].mean(axis=0) for c in classes])
    radius = np.array([np.linalg.norm(points[labels == c] - centroids[i], axis=1).mean() for i, c in enumerate(classes)])
    apart = np.linalg.norm(centroids[:, None, :] - centroids[None, :, :], axis=2)
    np.fill_diagonal(apart, np.inf)
    nearest = apart.argmin(axis=1)
    pairs = set()
    for i in np.where(apart[np.arange(len(classes)), nearest] < radius)[0]:
        pairs.add(tuple(sorted((int(classes[i]), int(classes[nearest[i]])))))
    found = []
    for a, b in sorted(pairs):
        na, nb = str(int(numbers[a])).zfill(digits), str(int(numbers[b])).zfill(digits)
        differ = [k for k in range(digits) if na[k] != nb[k]]
        swap = "-".join(sorted((na[differ[0]], nb[differ[0]]))) if len(differ) == 1 else None
        found.append({"classes": [a, b], "numbers": [na, nb], "positions": differ, "digits": swap})
    # 1-NN with each image left out of its own gallery, per class.
    squared = (points**2).sum(axis=1)
    nearest_image = np.empty(len(points), dtype=np.int64)
    for start in range(0, len(points), 1000):  # a thousand rows of distances at a time
        rows = slice(start, min(start + 1000, len(points)))
        gaps = squared[rows, None] + squared[None, :] - 2.0 * points[rows] @ points.T
        gaps[np.arange(gaps.shape[0]), np.arange(rows.start, rows.stop)] = np.inf
        nearest_image[rows] = gaps.argmin(axis=1)
    right = labels[nearest_image] == labels
    per_class = np.array([right[labels == c].mean() for c in classes])
    return found, right, per_class, classes, centroids


def figure(rows, merged_digits, path):
    """Each run's class centroids labelled with their numbers, coloured by the merged digit pairs
    they hold, each merged pair joined by a line: one panel per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    palette = ["tab:orange", "tab:blue", "tab:green", "tab:red"]
    colour_of = {pair: palette[i % len(palette)] for i, pair in enumerate(merged_digits)}
    cols = min(len(rows), 5)
    lines = (len(rows) + cols - 1) // cols
    fig, axes = plt.subplots(lines, cols, figsize=(3.2 * cols, 3.2 * lines), squeeze=False)
    for ax, row in zip(axes.flat, rows):
        for number, (x, y) in row["centroids"].items():
            held = [p for p in merged_digits if any(d in number for d in p.split("-"))]
            colour = colour_of[held[0]] if len(held) == 1 else ("tab:purple" if held else "0.55")
            ax.text(x, y, number, fontsize=5.5, color=colour, ha="center", va="center")
        for pair in row["merged_pairs"]:
            (ax0, ay0), (bx0, by0) = (row["centroids"][n] for n in pair["numbers"])
            ax.plot([ax0, bx0], [ay0, by0], color="black", linewidth=0.8)
        xs = [c[0] for c in row["centroids"].values()]
        ys = [c[1] for c in row["centroids"].values()]
        pad = 0.08 * max(max(xs) - min(xs), max(ys) - min(ys), 1e-3)
        ax.set_xlim(min(xs) - pad, max(xs) + pad)
        ax.set_ylim(min(ys) - pad, max(ys) + pad)
        ax.set_xticks([])
        ax.set_yticks([])
        table = row["run"].split("/runs/")[0].removeprefix("results/hib/")
        name = {"mog1": "MoG-1", "mog2": "MoG-2"}.get(row["model"], row["model"])
        ax.set_title(f"{table}: {name} seed {row['seed']}\n{len(row['merged_pairs'])} merged, 1-NN {row['nn1_leave_one_out']:.3f}",
                     fontsize=8)
    for ax in list(axes.flat)[len(rows):]:
        ax.axis("off")
    legend = [f"{p.replace('-', ' or ')}" for p in merged_digits]
    handles = [plt.Line2D([], [], color=colour_of[p], marker="s", linestyle="") for p in merged_digits]
    handles += [plt.Line2D([], [], color="tab:purple", marker="s", linestyle=""),
                plt.Line2D([], [], color="0.55", marker="s", linestyle=""),
                plt.Line2D([], [], color="black")]
    legend += ["with digits of both", "with neither", "merged pair"]
    fig.legend(handles, [f"class with a {l}" if i < len(merged_digits) else l for i, l in enumerate(legend)],
               loc="lower center", ncol=len(legend), fontsize=8, frameon=False)
    fig.suptitle("Class centroids of each run (test, clean, chosen weights), labelled with their numbers", fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)
    print(f"wrote {os.path.relpath(path, ROOT)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", help="run directories (default: the N = 2, D = 2 tables' Table 1 runs)")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "hib", "class-merges.json"))
    args = parser.parse_args()
    runs = [os.path.abspath(r) for r in args.runs] or default_runs()
    if not runs:
        sys.exit("error: no ended run to read (give RUN_DIR arguments)")
    rows, kept = [], []
    for run in runs:
        config = json.load(open(os.path.join(run, "config.json")))["hib"]
        if config.get("protocol") != "instance":
            sys.exit(f"error: {run}: protocol {config.get('protocol')!r}; this reading is for the instance protocol")
        digits = int(config["digits"])
        numbers = class_numbers(digits)
        best = json.load(open(os.path.join(run, "best.json")))
        means, labels = embed(run)
        found, right, per_class, classes, centroids = merges(means, labels, numbers, digits)
        nn1 = float(right.mean())
        image_numbers = [str(int(numbers[c])).zfill(digits) for c in labels]
        kept.append((right, image_numbers))
        swaps = {}
        for pair in found:
            key = pair["digits"] or "several digits"
            swaps[key] = swaps.get(key, 0) + 1
        name = os.path.basename(run)
        model, seed = TABLE_RUN.match(name).groups() if TABLE_RUN.match(name) else (config["model"], config["seed"])
        rows.append({
            "run": os.path.relpath(run, ROOT),
            "model": model,
            "seed": int(seed),
            "step": int(best["step"]),
            "nn1_leave_one_out": nn1,
            "classes_under_half": int((per_class < 0.5).sum()),
            "classes": int(len(per_class)),
            "merged_pairs": found,
            "merged_by_digits": dict(sorted(swaps.items())),
            "centroids": {str(int(numbers[c])).zfill(digits): [float(x) for x in centroids[i][:2]]
                          for i, c in enumerate(classes)},
        })
        print(f"{rows[-1]['run']}: 1-NN {nn1:.3f}, {rows[-1]['classes_under_half']} classes under half, "
              f"{len(found)} merged pairs {rows[-1]['merged_by_digits']}")
    # 1-NN by group, the same groups for every run: the images whose number holds either digit of
    # a pair merged in any run (the groups of two pairs overlap), and the images holding none.
    merged_digits = sorted({p["digits"] for r in rows for p in r["merged_pairs"] if p["digits"]})
    for row, (right, image_numbers) in zip(rows, kept):
        groups = {}
        for pair in merged_digits:
            mask = np.array([any(d in n for d in pair.split("-")) for n in image_numbers])
            groups[pair] = float(right[mask].mean())
        if merged_digits:
            either = set("".join(p.replace("-", "") for p in merged_digits))
            mask = np.array([not any(d in n for d in either) for n in image_numbers])
            groups["none of them"] = float(right[mask].mean())
        row["nn1_by_digit_group"] = groups
    result = {
        "split": "test",
        "variant": "clean",
        "weights": "model_best.safetensors",
        "command": "scripts/hib-class-merges.py" + "".join(f" {os.path.relpath(r, ROOT)}" for r in args.runs),
        "runs": rows,
    }
    figure(rows, merged_digits, os.path.splitext(args.out)[0] + ".png")
    tmp_out = args.out + ".tmp"
    with open(tmp_out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    os.replace(tmp_out, args.out)
    print(f"wrote {os.path.relpath(args.out, ROOT)}")


if __name__ == "__main__":
    main()
