"""Cross-evaluation (issue 79): the reference's own evaluation (`hib_reference.evaluate`) of a
hedge run's weights. Where hedge and the reference disagree on a Table 1 cell, this separates the
two possible sources: the same hedge weights scored by both evaluations show whether the
difference is in the evaluation; a difference that stays is in the trained weights.

    .venv/bin/python reference/hib/cross_evaluate.py RUN [RUN...]
    .venv/bin/python reference/hib/cross_evaluate.py --hedge-eval REF_RUN --like HEDGE_RUN

RUN is a hedge run folder (config.json, model.safetensors, eval-final.json). Writes
RUN/reference_eval_of_hedge.json: the reference's numbers for hedge's weights, beside the numbers
hedge's evaluation gave the same weights (eval-final.json). Reads HEDGE_DATA_DIR (default ./data).

The other direction, `--hedge-eval`: hedge's evaluation (`hedge hib eval --weights`, the binary
named by HEDGE, default ./target/release/hedge) of a reference run's weights, renamed to hedge's
parameter names (REF_RUN/model_as_hedge.safetensors). HEDGE_RUN is a hedge run of the same model
and recipe: its config.json gives hedge the network and the evaluation's settings, and nothing in
it is written. Writes REF_RUN/hedge_eval_of_reference.json: hedge's report for the reference's
weights beside the reference's own numbers (reference_eval.json).
The parameters map one to one (hedge's trunk.conv1/conv2, head and match.a_raw/b to the
reference's conv1/conv2, out and a_raw/b); the output layout is the same ([mean D, raw variance D]
for one Gaussian); variances are softplus(raw) + hedge's min_variance as in hedge.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

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


def hedge_numbers(report: dict) -> dict:
    """The Table 1 numbers of a hedge `EvalReport` (eval-final.json, `hib eval --json`)."""
    return {
        "verification_ap": report["verification_ap"],
        "knn_leave_one_out": report["knn_accuracy"],
        "knn_kept": report["knn_kept"],
    }


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
        "hedge_evaluation": hedge_numbers(hedge),
    }


def as_hedge_names(weights: dict) -> dict:
    """A reference network's parameters under hedge's names (the inverse of NAMES)."""
    to_hedge = {theirs: ours for ours, theirs in NAMES.items()}
    unknown = sorted(set(weights) - set(to_hedge))
    if unknown:
        raise SystemExit(f"parameters hedge has no place for: {unknown}")
    return {to_hedge[k]: v.contiguous() for k, v in weights.items()}


def hedge_evaluate(reference_run: Path, hedge_run: Path) -> dict:
    """hedge's evaluation of the reference run's weights, in the settings of `hedge_run`."""
    # The network the hedge run describes, as the reference builds it: loading the reference's
    # weights into it (strict) checks that the two runs have one architecture.
    model = reference_network(hedge_run)
    weights = load_file(str(reference_run / "model.safetensors"))
    model.load_state_dict(weights, strict=True)
    renamed = reference_run / "model_as_hedge.safetensors"
    save_file(as_hedge_names(weights), str(renamed))
    hedge = os.environ.get("HEDGE", "./target/release/hedge")
    command = [hedge, "hib", "eval", "--run", str(hedge_run), "--weights", str(renamed), "--json"]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    report = json.loads(done.stdout)
    return {
        "reference_run": str(reference_run),
        "hedge_run_for_settings": str(hedge_run),
        "command": " ".join(command),
        "hedge_evaluation": hedge_numbers(report),
        "reference_evaluation": json.loads((reference_run / "reference_eval.json").read_text()),
    }


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    if sys.argv[1] == "--hedge-eval":
        if len(sys.argv) != 5 or sys.argv[3] != "--like":
            raise SystemExit(__doc__)
        reference_run, hedge_run = Path(sys.argv[2]), Path(sys.argv[4])
        result = hedge_evaluate(reference_run, hedge_run)
        out = reference_run / "hedge_eval_of_reference.json"
        ref.write_atomically(out, json.dumps(result, indent=2) + "\n")
        print(json.dumps(result["hedge_evaluation"]))
        return
    data_dir = Path(os.environ.get("HEDGE_DATA_DIR", "data"))
    for run in map(Path, sys.argv[1:]):
        result = cross_evaluate(run, data_dir)
        out = run / "reference_eval_of_hedge.json"
        ref.write_atomically(out, json.dumps(result, indent=2) + "\n")
        print(json.dumps(result["reference_evaluation"]))


if __name__ == "__main__":
    main()
