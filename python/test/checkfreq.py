# SPDX-License-Identifier: GPL-2.0-or-later
"""checkfreq.py: coordl.CheckFreq and the checkpoint binding, piece by piece.

- choose_interval() is libcoordl's policy (a hand-worked case, a refusal);
- bad arguments are refused naming the argument;
- a fixed interval snapshots at its multiples; the files hold the
  sections the format promises (meta, rng, loader, tensors) and a resume
  restores arrays in place, extra state, the loader's exact position and
  the random generators; a resume without a checkpoint starts at 0; a
  checkpoint whose arrays do not match the program is refused;
- the online policy, driven by a fake clock: it times the first
  iterations, takes one checkpoint to measure it, picks the interval the
  bound allows (worked by hand), and moves it when what a checkpoint costs
  changes;
- SIGTERM (and a signal named in SYNERGY_CKPT_SIGNALS) makes the next
  step take a last checkpoint and exit with 143, or return True;
- a full file system (a 256 KiB tmpfs, root only) gives a
  CheckpointWarning, training goes on, the previous checkpoint stays.
"""

import atexit
import ctypes
import os
import random
import shutil
import signal
import subprocess
import tempfile
import warnings

import taputil
from taputil import diag, done_testing, is_, ok, raises

coordl = taputil.require_library()
import numpy as np  # noqa: E402

from coordl import checkfreq  # noqa: E402


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def next_batch(ld):
    """The next batch, going on to the next epoch at an epoch's end."""
    b = ld.next_batch()
    if b is None:
        ld.set_epoch(ld.epoch + 1)
        b = ld.next_batch()
    return b


def drain(cf):
    """Wait (real time) until nothing is being copied or written."""
    cf._engine.lib.coordl_ckpt_flush(cf._engine.ptr, -1.0, None)


# --- the policy through the binding --------------------------------------
c = coordl.choose_interval(0.1, 0.035, 0.01, 0.05, bound=0.035)
is_((c["interval"], c["limit"], c["bound_met"]), (10, "bound", True),
    "choose_interval: 35 ms per checkpoint, 100 ms iterations, 3.5%: k = 10")
c = coordl.choose_interval(1.0, 0.1, 0.5, 4.5, bound=0.05)
is_((c["interval"], c["limit"]), (5, "pipeline"),
    "choose_interval: a 5 s write on 1 s iterations: k = 5")
e = raises(coordl.CoordlError, lambda: coordl.choose_interval(0, 0, 0, 0),
           "choose_interval: iter_s = 0 refused")
ok(e is not None and "iter_s" in str(e), "the error names iter_s (%s)" % e)

work = tempfile.mkdtemp(prefix="checkfreq-py-")
# gone however the test ends (an assertion that raises included)
atexit.register(shutil.rmtree, work, True)
e = raises(ValueError, lambda: coordl.CheckFreq(work, bound=0),
           "CheckFreq: bound 0 refused")
raises(ValueError, lambda: coordl.CheckFreq(work, interval=0),
       "CheckFreq: interval 0 refused")
raises(ValueError, lambda: coordl.CheckFreq(work, memory="gpu"),
       "CheckFreq: memory='gpu' refused")
raises(TypeError, lambda: coordl.CheckFreq(work, arrays={"w": [1, 2]}),
       "CheckFreq: arrays that are not ndarrays refused")
saved = os.environ.pop(checkfreq.ENV_CKPT_DIR, None)
e = raises(ValueError, lambda: coordl.CheckFreq(),
           "CheckFreq: no dir and no SYNERGY_CKPT_DIR refused")
ok(e is not None and "SYNERGY_CKPT_DIR" in str(e), "the error says where "
   "the directory comes from")
os.environ[checkfreq.ENV_CKPT_DIR] = os.path.join(work, "fromenv")
cf = coordl.CheckFreq(verbose=False)
is_(cf.dir, os.path.join(work, "fromenv"), "dir defaults to SYNERGY_CKPT_DIR")
cf.close()
if saved is None:
    del os.environ[checkfreq.ENV_CKPT_DIR]
else:
    os.environ[checkfreq.ENV_CKPT_DIR] = saved
first = coordl.CheckFreq(os.path.join(work, "fromenv"), verbose=False)
e = raises(coordl.CoordlError,
           lambda: coordl.CheckFreq(os.path.join(work, "fromenv"),
                                    verbose=False),
           "a second writer of one directory and name: refused")
ok(e is not None and "another writer" in str(e), "and says why (%s)" % e)
first.close()

with taputil.Dataset(classes=3, images=24, seed=5) as ds:
    # --- a fixed interval, the files, resume ------------------------------
    d = os.path.join(work, "fixed")

    def make(**kw):
        ld = coordl.Loader(ds.root, batch_size=4, threads=1, out_size=16,
                           seed=9, cache_bytes=0, output="numpy")
        arrays = {"w": np.zeros((5, 7)), "b": np.zeros(3, dtype=np.float32)}
        extra = {"count": 0}
        cf = coordl.CheckFreq(d, loader=ld, arrays=arrays, extra=extra,
                              verbose=False, **kw)
        return ld, arrays, extra, cf

    ld, arrays, extra, cf = make(interval=5)
    is_(cf.resume(), 0, "resume without a checkpoint: iteration 0")
    seen = []
    for i in range(13):
        b = next_batch(ld)
        seen.append((b.epoch, b.seq, list(b.indices)))
        arrays["w"] += np.random.rand(5, 7)
        arrays["b"] += random.random()
        extra["count"] += 1
        cf.step()
    drain(cf)
    st = cf.stats()
    is_((st["checkpoints"], st["last_checkpoint"]), (2, 10),
        "interval 5: checkpoints at iterations 5 and 10")
    want_w, want_b = arrays["w"].copy(), arrays["b"].copy()
    # What iteration 11 on sees, for the resume to match.
    img, scan = coordl.load_latest(d)
    is_((img.iteration, img.names), (10, ["meta", "rng", "loader", "tensors"]),
        "the newest file: iteration 10, sections meta, rng, loader, tensors")
    is_(len(img.section("loader")), ctypes.sizeof(coordl._abi.State),
        "the loader section is a coordl_state_t")
    img.close()
    cf.close()
    ld.close()

    ld, arrays, extra, cf = make(interval=5)
    w_obj = arrays["w"]
    is_(cf.resume(), 10, "resume: iteration 10")
    ok(arrays["w"] is w_obj, "arrays are restored in place")
    is_(extra["count"], 10, "extra state restored")
    after = []
    for i in range(3):
        b = next_batch(ld)
        after.append((b.epoch, b.seq, list(b.indices)))
        arrays["w"] += np.random.rand(5, 7)
        arrays["b"] += random.random()
        cf.step()
    is_(after, seen[10:13], "the loader goes on with batches 11-13 exactly")
    ok(np.array_equal(arrays["w"], want_w) and np.array_equal(arrays["b"],
                                                              want_b),
       "with the random generators restored, iterations 11-13 give the same "
       "arrays bit for bit")
    cf.close()
    ld.close()
    ld = coordl.Loader(ds.root, batch_size=4, threads=1, out_size=16, seed=9,
                       cache_bytes=0, output="numpy")
    cf = coordl.CheckFreq(d, loader=ld, arrays={"w": np.zeros((5, 8)),
                                                "b": np.zeros(3, np.float32)},
                          verbose=False)
    e = raises(ValueError, cf.resume, "resume into arrays of another shape: "
               "refused")
    ok(e is not None and "'w'" in str(e), "naming the array (%s)" % e)
    cf.close()
    ld.close()

# --- the online policy on a fake clock -------------------------------------
d = os.path.join(work, "online")
clock = FakeClock()
state = {"w": np.zeros(1000)}
cf = coordl.CheckFreq(d, arrays=state, bound=0.035, clock=clock,
                      verbose=False)
inject = [0.02]     # what the iteration after a snapshot takes extra
snaps = []
for i in range(200):
    clock.t += 0.010
    if cf._last_ckpt and cf._last_ckpt == cf.iteration:
        clock.t += inject[0]
        drain(cf)   # its write is done within this iteration
    cf.step()
    if cf._last_ckpt == cf.iteration:
        snaps.append(cf.iteration)
        if len(snaps) == 2:
            inject[0] = 0.005
gaps = [b - a for a, b in zip(snaps, snaps[1:])]
diag("snapshots at %s, interval now %s" % (snaps, cf.interval))
is_(snaps[0], 9, "profiling: 3 warm-up and 5 timed iterations, then a "
    "checkpoint to measure (iteration 9)")
is_(gaps[0], 58, "20 ms per checkpoint on 10 ms iterations at 3.5%: "
    "k = ceil(0.02 / 0.00035) = 58")
# The costs are smoothed: (0.02 + 0.005) / 2 = 12.5 ms -> k = 36.
is_(gaps[1], 36, "the cost falls to 5 ms: smoothed 12.5 ms, k = 36")
ok(all(a >= b for a, b in zip(gaps, gaps[1:])),
   "the interval follows the falling cost down, never up (%s)" % gaps)
is_(cf.interval, 15, "and settles at ceil(0.005 / 0.00035) = 15")
ok(cf.choice["limit"] == "bound" and cf.choice["bound_met"],
   "the bound set it, and it is met")
cf.close()

# --- signals -------------------------------------------------------------
for sig, env in ((signal.SIGTERM, None), (signal.SIGUSR1, "USR1")):
    d = os.path.join(work, "sig-" + signal.Signals(sig).name)
    if env:
        os.environ[checkfreq.ENV_CKPT_SIGNALS] = env
    state = {"w": np.zeros(10)}
    cf = coordl.CheckFreq(d, arrays=state, interval=1000, verbose=False)
    code = None
    try:
        for i in range(10):
            state["w"] += 1
            if i == 6:
                os.kill(os.getpid(), sig)
            cf.step()
    except SystemExit as ex:
        code = ex.code
    os.environ.pop(checkfreq.ENV_CKPT_SIGNALS, None)
    img, _ = coordl.load_latest(d)
    is_((code, img.iteration if img else None), (143, 7),
        "%s: the next step writes a checkpoint of iteration 7 and exits 143"
        % signal.Signals(sig).name)
    if img:
        img.close()
    ok(signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler),
       "%s: the handler was put back" % signal.Signals(sig).name)

d = os.path.join(work, "sig-return")
cf = coordl.CheckFreq(d, arrays={"w": np.zeros(3)}, interval=1000,
                      exit_code=None, verbose=False)
cf.step()
os.kill(os.getpid(), signal.SIGTERM)
ok(cf.step() is True and cf.stats()["last_checkpoint"] == 2,
   "exit_code=None: step() returns True after the last checkpoint")
cf.close()

# --- a full file system ------------------------------------------------------
mnt = os.path.join(work, "full")
os.makedirs(mnt)
if os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt],
        stderr=subprocess.DEVNULL).returncode == 0:
    try:
        state = {"w": np.zeros(1000)}
        cf = coordl.CheckFreq(mnt, arrays=state, interval=1, keep=1,
                              verbose=False)
        cf.step()
        drain(cf)
        state["big"] = np.zeros(200000)   # 1.6 MB: does not fit
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            cf.step()
            drain(cf)
            cf.step()
            del state["big"]
            cf.step()
            drain(cf)
        msgs = [str(w.message) for w in got
                if issubclass(w.category, coordl.CheckpointWarning)]
        ok(msgs and "No space" in msgs[0],
           "full disk: a CheckpointWarning says so (%s)" % (msgs[:1],))
        is_(cf.stats()["last_checkpoint"], 4,
            "training went on and the next checkpoint that fits is written")
        cf.close()
        is_(sorted(f for f in os.listdir(mnt) if f.endswith(".ckpt")),
            ["ckpt-%020d.ckpt" % 4], "only it is left (keep=1), no "
            "temporary file")
    finally:
        subprocess.run(["umount", mnt])
else:
    taputil.ok(True, "# SKIP a full file system needs root (a tmpfs mount)")

done_testing()
