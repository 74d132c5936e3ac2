"""The tries of studies/bench/f32-peer.toml as one file: for each try (try<N>-<setting>-*.json in
TRIES, the JSON `hedge bench train --json` and the reference's `--bench` print), the images/s of
hedge, PyTorch and PyTorch channels-last, with the CPU, the thread count and torch's version.

    python scripts/bench-f32-peer.py --tries runs/bench-f32-peer --out results/bench/hib-f32-peer.json
"""
import argparse
import json
import os
import re

import torch
from machine import cpu_model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tries", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    tries = {}
    steps = None
    for name in sorted(os.listdir(args.tries)):
        found = re.fullmatch(r"try(\d+)-(\w+?)-(hedge|pytorch|pytorch_channels_last)\.json", name)
        if not found:
            continue
        index, setting, who = int(found[1]), found[2], found[3]
        with open(os.path.join(args.tries, name)) as f:
            report = json.load(f)
        entry = tries.setdefault((index, setting), {"setting": setting})
        if who == "hedge":
            entry["hedge"] = report["train_images_per_s"]
            steps = report.get("steps", steps)
        else:
            entry[who] = report["images_per_second"]
    result = {
        "cpu": cpu_model(),
        "threads": 2,
        "steps_timed": steps if steps is not None else 20,
        "torch": torch.__version__,
        "command": "hedge study studies/bench/f32-peer.toml",
        "tries": [tries[key] for key in sorted(tries, key=lambda k: (k[0], k[1] != "avx2"))],
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    os.replace(args.out + ".tmp", args.out)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
