"""The main job's schedule trials (studies/hib/quickstart-schedule.toml trains them): one line a
trained run, STEPS:HIDDEN:SEED, from runs/quickstart-schedule-STEPS-HIDDEN-SEED/ into
results/hib/quickstart/schedule.jsonl; a trial already there is kept.

    python3 scripts/quickstart-schedule.py STEPS:HIDDEN:SEED ...
"""
import json
import os
import sys

OUT = "results/hib/quickstart/schedule.jsonl"


def line(trial):
    run = "runs/quickstart-schedule-" + trial.replace(":", "-")
    with open(f"{run}/config.json") as f:
        config = json.load(f)["hib"]
    with open(f"{run}/verification.json") as f:
        check = json.load(f)["variants"]
    return {
        "trial": trial,
        "steps": config["steps"],
        "hidden_units": config["hidden_units"],
        "seed": config["seed"],
        "conv_precision": config["conv_precision"],
        "ap_clean": check["clean"]["verification_ap"],
        "ap_corrupt": check["corrupt"]["verification_ap"],
        "command": "hedge study studies/hib/quickstart-schedule.toml",
    }


def main(trials):
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    have = set()
    if os.path.exists(OUT):
        with open(OUT) as f:
            have = {json.loads(row)["trial"] for row in f if row.strip()}
    with open(OUT, "a") as f:
        for trial in trials:
            if trial in have:
                print(f"{trial}: already in {OUT}")
                continue
            row = line(trial)
            f.write(json.dumps(row) + "\n")
            print(json.dumps(row))


if __name__ == "__main__":
    main(sys.argv[1:])
