"""The main job's timings (studies/hib/quickstart-timing.toml runs them): for each SETTING, the
run runs/quickstart-timing-SETTING and the wall-clock seconds of its step in the study's
steps.jsonl, written to results/hib/quickstart/SETTING.json.

    python3 scripts/quickstart-timing.py STUDY_FOLDER SETTING...
"""
import json
import os
import sys

from machine import cpu_model

ENVIRONMENT = {"avx2": "ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2", "native": ""}


def main(study, settings):
    with open(os.path.join(study, "steps.jsonl")) as f:
        seconds = {row["name"]: row["seconds"] for row in map(json.loads, filter(str.strip, f))}
    for setting in settings:
        run = f"runs/quickstart-timing-{setting}"

        def load(name):
            with open(f"{run}/{name}") as f:
                return json.load(f)

        state, config, check = load("state.json"), load("config.json"), load("verification.json")
        result = {
            "setting": setting,
            "environment": ENVIRONMENT.get(setting, ""),
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "conv_precision": config["hib"]["conv_precision"],
            "hidden_units": config["hib"]["hidden_units"],
            "steps": state["step"],
            "train_seconds": state["seconds"],
            "quickstart_wall_seconds": seconds[setting],
            "ap_clean": check["variants"]["clean"]["verification_ap"],
            "ap_corrupt": check["variants"]["corrupt"]["verification_ap"],
            "split": check["split"],
            "command": "hedge study studies/hib/quickstart-timing.toml",
        }
        path = f"results/hib/quickstart/{setting}.json"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
        os.replace(path + ".tmp", path)
        print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
