"""Point, HIB and PCME++ side by side on your own image folder: train each, evaluate each the same
way, and compare accuracy and uncertainty quality.

    .venv/bin/python python/examples/side_by_side.py FOLDER --out DIR [--steps 1000] [--dim 2]

FOLDER holds one sub-folder per identity (ROOT/<identity>/<image>.png; `hedge data
export-images --dataset fashion-mnist --per-class 1000 --out FOLDER` writes one from
Fashion-MNIST). Three runs go to DIR/point, DIR/hib and DIR/csd, trained with the same data, split
and steps; each is evaluated on the identities it never trained on (test_unseen) by
``Run.evaluate`` -- the numbers ``hedge hib eval`` gives -- and DIR/reliability.png draws the three
reliability diagrams of p(match). The printed table says, per model: verification AP and KNN
accuracy (clean / occluded), the ECE of p(match), the AURC of identification and of
verification, and how well the model's uncertainty finds its own identification errors (AUROC).

studies/hib/side-by-side.toml runs the same comparison at equal training time on 3 seeds
(results/hib/side-by-side/); this example is the few-line version of it for a user's images.
"""

import argparse
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from hedge import hib  # noqa: E402

MODELS = {
    "point": {"model": "point"},
    "hib": {"model": "gaussian"},
    "csd": {"model": "gaussian", "loss": "csd"},
}


def cell(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path, required=True, help="new folder for the three runs")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=2)
    parser.add_argument("--unseen-classes", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3, help="repeats of the Monte-Carlo evaluation")
    args = parser.parse_args()

    reports = {}
    for name, settings in MODELS.items():
        config = {**settings, "dim": args.dim, "steps": args.steps, "batch": "grouped", "group_classes": 7,
                  "group_size": 16}
        run = hib.train(args.out / name, data=args.folder, config=config, unseen_classes=args.unseen_classes)
        reports[name] = run.evaluate(repeats=args.repeats)

    print("| model | AP clean / occluded | KNN clean / occluded | ECE | identification AURC | error AUROC "
          "| verification AURC |")
    print("|---|---|---|---|---|---|---|")
    for name, r in reports.items():
        auroc = r.error_auroc.mean if r.error_auroc else None
        verification = r.verification_aurc.mean if r.verification_aurc else None
        print(f"| {name} | {cell(r.verification_ap.clean)} / {cell(r.verification_ap.corrupt)} "
              f"| {cell(r.knn_accuracy.clean)} / {cell(r.knn_accuracy.corrupt)} | {cell(r.ece)} | {cell(r.aurc)} "
              f"| {cell(auroc)} | {cell(verification)} |")

    fig, ax = plt.subplots(figsize=(5.5, 5))
    for name, r in reports.items():
        if r.reliability is not None:
            r.reliability.plot(ax, label=name)
    ax.set_title("Reliability of p(match), identities never trained on")
    # One diagonal is enough: each plot() call draws its own.
    handles, labels = ax.get_legend_handles_labels()
    keep = [i for i, label in enumerate(labels) if label != "perfect calibration" or labels.index(label) == i]
    ax.legend([handles[i] for i in keep], [labels[i] for i in keep])
    fig.tight_layout()
    figure = args.out / "reliability.png"
    fig.savefig(figure, dpi=120)
    print(f"figure {figure}")


if __name__ == "__main__":
    main()
