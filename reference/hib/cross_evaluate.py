"""Cross-evaluation (issue 79): the reference's own evaluation (`hib_reference.evaluate`) of a
hedge run's weights. Where hedge and the reference disagree on a Table 1 cell, this separates the
two possible sources: the same hedge weights scored by both evaluations show whether the
difference is in the evaluation; a difference that stays is in the trained weights.

    .venv/bin/python reference/hib/cross_evaluate.py RUN [RUN...]

RUN is a hedge run folder (config.json, model.safetensors, eval-final.json). Writes
RUN/reference_eval_of_hedge.json: the reference's numbers for hedge's weights, beside the numbers
hedge's evaluation gave the same weights (eval-final.json). Reads HEDGE_DATA_DIR (default ./data).
The parameters map one to one (hedge's trunk.conv1/conv2, head and match.a_raw/b to the
reference's conv1/conv2, out and a_raw/b); the output layout is the same ([mean D, raw variance D]
for one Gaussian); variances are softplus(raw) + hedge's min_variance as in hedge.
"""

import json
import os
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hib_reference as ref  # noqa: E402

NAMES = {
    "trunk.conv1.weight": "conv1.weight",
    "trunk.conv1.bias": "conv1.bias",
    "trunk.conv2.weight": "conv2.weight",
    "trunk.conv2.bias": "conv2.bias",
    "head.weight": "out.weight",
    "head.bias": "out.bias",
    "match.a_raw": "a_raw",
    "match.b": "b",
}


def reference_network(run: Path, precision: str | None = None) -> "ref.Embedder":
    """The reference's network holding the hedge run's weights (convolutions in the run's
    precision unless `precision` says otherwise)."""
    config = json.loads((run / "config.json").read_text())["hib"]
    # `components` counts only for `mog`: a `gaussian` model is one Gaussian (MoG-1).
    if config["model"] not in ("point", "gaussian") or config.get("channels", [32, 64]) != [32, 64]:
        raise SystemExit(f"{run}: only point and one-Gaussian models of the paper's widths map onto the reference")
    run_precision = config.get("conv_precision") if config.get("conv_precision") in ("f32", "bf16") else "f32"
    settings = ref.Settings(
        recipe="plain",
        model=config["model"],
        digits=config["digits"],
        dim=config["dim"],
        samples=config["samples"],
        precision=precision or run_precision,
    ).resolve()
    model = ref.Embedder(settings)
    weights = load_file(str(run / "model.safetensors"))
    unknown = sorted(set(weights) - set(NAMES))
    if unknown:
        raise SystemExit(f"{run}/model.safetensors: parameters the reference has no place for: {unknown}")
    model.load_state_dict({NAMES[k]: v for k, v in weights.items()}, strict=True)
    min_variance = float(config.get("min_variance", 1e-6))
    if model.gaussian and abs(min_variance - 1e-6) > 1e-12:
        raise SystemExit(f"{run}: min_variance {min_variance} differs from the reference's 1e-6")
    model.settings = settings
    return model.eval()


def cross_evaluate(run: Path, data_dir: Path) -> dict:
    model = reference_network(run)
    settings = model.settings
    torch.set_num_threads(settings.threads)
    test = ref.load_table(data_dir, settings.digits, "test")
    with torch.no_grad():
        ours = ref.evaluate(model, settings, test)
    hedge = json.loads((run / "eval-final.json").read_text())
    return {
        "run": str(run),
        "reference_evaluation": ours,
        "hedge_evaluation": {
            "verification_ap": hedge["verification_ap"],
            "knn_leave_one_out": hedge["knn_accuracy"],
            "knn_kept": hedge["knn_kept"],
        },
    }


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    data_dir = Path(os.environ.get("HEDGE_DATA_DIR", "data"))
    for run in map(Path, sys.argv[1:]):
        result = cross_evaluate(run, data_dir)
        out = run / "reference_eval_of_hedge.json"
        ref.write_atomically(out, json.dumps(result, indent=2) + "\n")
        print(json.dumps(result["reference_evaluation"]))


if __name__ == "__main__":
    main()
