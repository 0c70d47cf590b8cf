# SPDX-License-Identifier: GPL-2.0-or-later
"""checkfreq-ddp.py: the ranks of a data-parallel job resume together.

Two ranks of python/test/ckptjob.py --torch (DistributedDataParallel over
gloo, each rank on its shard of the loader, CheckFreq per rank with the
interval chosen online by rank 0 and shared) run once straight through,
then again killed -9 together at random times and restarted, then sent
SIGTERM together: each rank's files are its own (rank0-*, rank1-*), the
ranks take the same snapshots and their last checkpoint at the same
iteration (both exit 143, nothing lost), always resume from the same
iteration even when one had written a checkpoint the other had not, and
end bit-identical to the uninterrupted run, every iteration of each rank
having seen the same batch. Skipped without torch.
"""

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import taputil
from taputil import diag, done_testing, is_, ok

coordl = taputil.require_library()
try:
    import torch  # noqa: F401
except ImportError:
    taputil.skip_all("torch is not installed for %s" % sys.executable)

JOB = os.path.join(taputil.HERE, "ckptjob.py")
ITERS = 50


def start(ds, work, tag, run_no, sleep):
    init = os.path.join(work, "init-%s-%d" % (tag, run_no))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    procs = []
    for r in range(2):
        cmd = [sys.executable, JOB, "--torch", "--world", "2", "--rank", str(r),
               "--init", init, "--data", ds.root,
               "--ckpt", os.path.join(work, "ck-" + tag), "--iters", str(ITERS),
               "--log", os.path.join(work, "log-%s-%d" % (tag, r)),
               "--out", os.path.join(work, "out-%s-%d" % (tag, r)),
               "--starts", os.path.join(work, "starts-%s-%d" % (tag, r)),
               "--bound", "0.05", "--sleep", str(sleep), "--verbose"]
        procs.append(subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE,
                                      text=True))
    return procs


def lines(path):
    try:
        with open(path) as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def progress(work, procs, tag, more, timeout=120):
    """Wait until each rank logged `more` iterations beyond now (it runs
    its loop: torch is imported, the ranks met, it resumed)."""
    logs = [os.path.join(work, "log-%s-%d" % (tag, r)) for r in range(2)]
    base = [lines(p) for p in logs]
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        if all(lines(p) >= b + more for p, b in zip(logs, base)):
            return True
        if any(p.poll() is not None for p in procs):
            return False
        time.sleep(0.05)
    return False


def finish(procs):
    rcs, errs = [], []
    for p in procs:
        _, err = p.communicate()
        rcs.append(p.returncode)
        errs.append(err)
    return rcs, errs


def read_log(path):
    by_it = {}
    with open(path) as f:
        for line in f:
            by_it.setdefault(int(line.split()[0]), set()).add(line)
    return by_it


with taputil.Dataset(classes=3, images=40, seed=9) as ds:
    work = tempfile.mkdtemp(prefix="checkfreq-ddp-")
    try:
        rcs, errs = finish(start(ds, work, "ref", 0, 0.0))
        is_(rcs, [0, 0], "the uninterrupted 2-rank run completes")
        if rcs != [0, 0]:
            diag("\n".join(errs))
        files = sorted(f for f in os.listdir(os.path.join(work, "ck-ref"))
                       if f.endswith(".ckpt"))
        ok(any(f.startswith("rank0-") for f in files) and
           any(f.startswith("rank1-") for f in files),
           "each rank writes its own files (%s)" % files)

        rng = random.Random(int(os.environ.get("SEED", "5")))
        kills = 0
        n = 0
        for n in range(1, 4):
            procs = start(ds, work, "int", n, 0.03)
            progress(work, procs, "int", 2)
            time.sleep(rng.uniform(0.0, 0.6))
            alive = [p.poll() is None for p in procs]
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGKILL)
            rcs, _ = finish(procs)
            kills += all(alive)
        diag("killed -9 together %d times" % kills)
        # SIGTERM to both: they agree on one last checkpoint and exit 143.
        n += 1
        procs = start(ds, work, "int", n, 0.03)
        progress(work, procs, "int", 3)
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        rcs, errs = finish(procs)
        is_(rcs, [143, 143], "SIGTERM: both ranks take their last "
            "checkpoint and exit 143")
        if rcs != [143, 143]:
            diag("\n".join(e[-3000:] for e in errs))
        last = []
        for e in errs:
            last += [line for line in e.splitlines() if "SIGTERM: checkpoint" in line]
        its = sorted({line.split("iteration ")[1].split()[0] for line in last})
        ok(len(last) == 2 and len(its) == 1,
           "at the same iteration (%s)" % its)
        n += 1
        rcs, errs = finish(start(ds, work, "int", n, 0.0))
        is_(rcs, [0, 0], "the last run completes")
        if rcs != [0, 0]:
            diag("\n".join(errs))
        for r in range(2):
            with open(os.path.join(work, "starts-int-%d" % r)) as f:
                starts = [tuple(int(x) for x in line.split()) for line in f]
            diag("rank %d starts (resumed, last logged): %s" % (r, starts))
            if r == 0:
                s0 = [s[0] for s in starts]
            else:
                ok([s[0] for s in starts] == s0,
                   "both ranks resumed from the same iteration every time")
            ok(starts[-1][0] == starts[-1][1],
               "rank %d: nothing lost to SIGTERM" % r)
            with open(os.path.join(work, "out-ref-%d" % r), "rb") as f:
                ref = f.read()
            with open(os.path.join(work, "out-int-%d" % r), "rb") as f:
                got = f.read()
            ok(ref == got, "rank %d: final state bit-identical" % r)
            a = read_log(os.path.join(work, "log-ref-%d" % r))
            b = read_log(os.path.join(work, "log-int-%d" % r))
            ok(sorted(b) == sorted(a) and all(b[i] == a[i] for i in a),
               "rank %d: every iteration ran and saw the same batch" % r)
    finally:
        shutil.rmtree(work, ignore_errors=True)

done_testing()
