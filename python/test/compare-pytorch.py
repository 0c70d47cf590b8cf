# SPDX-License-Identifier: GPL-2.0-or-later
"""compare-pytorch.py: bench/compare-pytorch.sh runs and prints its table.

A smoke test of the benchmark script on a tiny generated dataset, one
repetition: both loaders run, every row of the table is present with
min <= median <= max, and the ratio lines parse. It asserts nothing about
speed (timing belongs in the benchmark itself, on a quiet machine).
"""

import os
import re
import subprocess

import taputil
from taputil import diag, done_testing, is_, ok

taputil.require_library()
try:
    import torch  # noqa: F401
    import torchvision  # noqa: F401
except ImportError:
    taputil.skip_all("torch and torchvision are not installed for this "
                     "Python")
gen = taputil.datagen()
script = os.path.join(taputil.SRCDIR, "bench", "compare-pytorch.sh")

r = subprocess.run(["sh", script, "--images", "32", "--classes", "3",
                    "--reps", "1", "--batch-size", "16", "--builddir",
                    taputil.BUILDDIR], stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True)
is_(r.returncode, 0, "compare-pytorch.sh exits 0")
if r.returncode:
    diag(r.stderr)
diag(r.stdout)
rows = {}
for line in r.stdout.splitlines():
    f = line.split()
    if len(f) == 6 and f[0] in ("coordl", "torch"):
        rows[f[0], f[1]] = [float(x) for x in f[3:]]
for loader in ("coordl", "torch"):
    for metric in ("images/s", "images/CPU-s"):
        v = rows.get((loader, metric))
        ok(v is not None and 0 < v[0] <= v[1] <= v[2],
           "%s %s: min <= median <= max, all > 0: %s" % (loader, metric, v))
ratios = re.findall(r"ratio coordl/torch, (\S+): ([0-9.]+)x", r.stdout)
is_([m for m, _ in ratios], ["images/s", "images/CPU-s"],
    "both ratio lines are printed")
ok(re.search(r"target >= 4x images/s: (met|NOT met)", r.stdout),
   "the target line is printed")
ok("generating 32 images" in r.stderr and "rep 1: loader=coordl" in r.stderr,
   "it generated the data and logged each run")

r = subprocess.run(["sh", script, "--bogus"], stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True)
ok(r.returncode == 2 and "--bogus" in r.stderr,
   "an unknown option exits 2 naming it")

done_testing()
