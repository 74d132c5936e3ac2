#!/usr/bin/env python3
"""Why python/tests/conftest.py's gallery fixture chooses its target risk (issue 78): over SEEDS
seeds of its 40-step MoG-2 model, on the precision path HEDGE_CONV_PRECISION forces (or `auto`
takes), how many of the 80 probes a fixed target risk of 0.5 abstains on, against the target
`splitting_target_risk` chooses from the validation curve.

    HEDGE_DATA_DIR=../shared/data HEDGE_CONV_PRECISION=bf16 .venv/bin/python scripts/gallery-fixture-seeds.py 8
"""
import os
import pathlib
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python" / "tests"))
from conftest import gallery_images, gallery_run, read_idx, splitting_target_risk  # noqa: E402

from hedge import hib  # noqa: E402

seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
data = pathlib.Path(os.environ.get("HEDGE_DATA_DIR", "data"))
images = read_idx(data / "mnist" / "t10k-images-idx3-ubyte.gz").astype(np.float32)[:, None] / 255.0
labels = read_idx(data / "mnist" / "t10k-labels-idx1-ubyte.gz").astype(np.int64)
gallery, validation, probes = gallery_images((images, labels), 60)
path = os.environ.get("HEDGE_CONV_PRECISION", "auto")
for seed in range(seeds):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        run = gallery_run(tmp / "run", (images, labels), seed=seed, progress=False)
        index = hib.Index.build(run, gallery[0], tmp / "index", gallery_labels=gallery[1], validation=validation[0],
                                validation_labels=validation[1], target_risk=1.0, candidates=20, top_k=3,
                                ef_search=4096)
        every, _ = index.search(*probes)
        fixed, _ = index.search(*probes, target_risk=0.5)
        chosen = splitting_target_risk(index.manifest["calibration"], [r.eta for r in every])
        split, _ = index.search(*probes, target_risk=chosen)
        print(f"{path} seed {seed}: target 0.5 abstains on {sum(r.abstained for r in fixed)}/{len(fixed)}; "
              f"the fixture's target {chosen:.3f} on {sum(r.abstained for r in split)}/{len(split)}", flush=True)
