#!/usr/bin/env python3
"""Write a copy of HEDGE_DATA_DIR's uci/bostonHousing without its 16 censored targets (MEDV = 50.0).

    python3 scripts/boston-uncensored.py SRC_DATA_DIR DST_DATA_DIR

Boston's median values were top-coded at 50 (in thousands of dollars) when the data were
collected; many pipelines drop those rows. The copy keeps every other file; the standard
split files are dropped because their row numbers no longer apply (hedge's active-learning
protocol draws its own split per seed). The source is only read.
"""
import os, shutil, sys

if len(sys.argv) != 3:
    sys.exit(__doc__)
src, dst = sys.argv[1], sys.argv[2]
s = os.path.join(src, "uci", "bostonHousing", "data")
d = os.path.join(dst, "uci", "bostonHousing", "data")
if os.path.exists(d):
    sys.exit(f"{d} exists; choose an empty destination")
os.makedirs(d)
for name in os.listdir(s):
    if name == "data.txt" or name.startswith("index_train_") or name.startswith("index_test_"):
        continue
    shutil.copy(os.path.join(s, name), d)
target = int(open(os.path.join(s, "index_target.txt")).read().split()[0])
rows = [line for line in open(os.path.join(s, "data.txt")) if line.strip()]
kept = [line for line in rows if float(line.split()[target]) != 50.0]
with open(os.path.join(d, "data.txt"), "w") as f:
    f.writelines(kept)
print(f"{len(rows)} rows, {len(rows) - len(kept)} censored (target = 50.0) dropped, {len(kept)} written to {d}")
