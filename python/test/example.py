# SPDX-License-Identifier: GPL-2.0-or-later
"""example.py: examples/train_resnet_emulated.py runs and reports stalls.

Runs the example training loop on a small generated dataset, with the
emulated GPU and with the tiny real CNN, and checks it prints one row per
epoch with a stall percentage in [0, 100], says that the GPU is emulated,
and fails with the path in its message on a missing dataset.
"""

import os
import subprocess
import sys

import taputil
from taputil import diag, done_testing, is_, ok

taputil.require_library()
try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

EXAMPLE = os.path.join(taputil.SRCDIR, "examples", "train_resnet_emulated.py")
env = dict(os.environ,
           PYTHONPATH=os.path.join(taputil.SRCDIR, "python"))


def run(*args):
    r = subprocess.run([sys.executable, EXAMPLE] + list(args), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    return r.returncode, r.stdout, r.stderr


def epoch_rows(out):
    rows = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0].isdigit():
            rows.append(f)
    return rows


with taputil.Dataset(classes=2, images=16, seed=5) as ds:
    rc, out, err = run(ds.root, "--epochs", "1", "--batch-size", "4",
                       "--threads", "1", "--gpu-rate", "2000",
                       "--output", "numpy")
    is_(rc, 0, "numpy batches need no torch: exits 0")
    rows = epoch_rows(out)
    ok("numpy batches" in out and len(rows) == 1 and rows[0][2] == "16",
       "numpy run: one epoch row of 16 images")
    # wall_s is printed to the millisecond: allow for its rounding.
    ok(rows and float(rows[0][2]) / (float(rows[0][3]) + 0.0005) * 0.99 <=
       float(rows[0][4]) <=
       float(rows[0][2]) / max(float(rows[0][3]) - 0.0005, 1e-9) * 1.01,
       "images / wall_s = images/s: %s" % (rows[0] if rows else out))
    # A validation loader beside the training one (issue 12), under the
    # environment the plugin sets: both run, the training one is cached.
    with taputil.Dataset(classes=2, images=8, seed=6) as vds:
        cdir = os.path.join(vds.dir, "cache")
        os.mkdir(cdir)
        venv = dict(env, SYNERGY_CACHE_NAME="job_9", SYNERGY_CACHE_BYTES="8M",
                    SYNERGY_CACHE_DIR=cdir)
        r = subprocess.run([sys.executable, EXAMPLE, ds.root, "--epochs", "2",
                            "--batch-size", "4", "--threads", "1",
                            "--gpu-rate", "4000", "--output", "numpy",
                            "--val", vds.root], env=venv,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        vrows = [line.split() for line in r.stdout.splitlines()
                 if line.split() and line.split()[0] == "val"]
        rows = epoch_rows(r.stdout)
        ok(r.returncode == 0 and len(rows) == 2 and len(vrows) == 2 and
           rows[1][7] == "100.0" and vrows[1][7] == "0.0",
           "issue 12: --val under the Synergy environment: train and val "
           "rows, epoch 1 all hits, validation uncached")
        if r.returncode:
            diag(r.stderr)
    if not HAVE_TORCH:
        diag("torch is not installed for this Python: torch runs not tried")
        done_testing()
        sys.exit(0)
    rc, out, err = run(ds.root, "--epochs", "2", "--batch-size", "4",
                       "--threads", "1", "--gpu-rate", "2000")
    is_(rc, 0, "emulated run exits 0")
    if rc:
        diag(err)
    ok("EMULATED" in out, "the output says the GPU is emulated")
    rows = epoch_rows(out)
    is_([r[0] for r in rows], ["0", "1"], "one row per epoch")
    ok(rows and all(0.0 <= float(r[5]) <= 100.0 for r in rows),
       "stall %% is a percentage: %s" % [r[5] for r in rows])
    diag(out)

    rc, out, err = run(ds.root, "--epochs", "1", "--batch-size", "4",
                       "--threads", "1", "--model", "tiny",
                       "--max-batches", "2")
    is_(rc, 0, "tiny real model run exits 0")
    rows = epoch_rows(out)
    ok(len(rows) == 1 and rows[0][1] == "2" and rows[0][6] != "-",
       "tiny model: 2 batches trained with a loss reported")
    diag(out or err)

    missing = os.path.join(ds.dir, "absent")
    rc, out, err = run(missing)
    is_(rc, 1, "a missing dataset exits 1")
    ok(missing in err, "... naming the path: %s" % err.strip())

done_testing()
