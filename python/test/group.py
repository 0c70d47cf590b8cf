# SPDX-License-Identifier: GPL-2.0-or-later
"""group.py: issue 15, coordinated prep through the Python binding.

Two training loaders in one process under SYNERGY_GROUP (as the plugin sets
it for the tasks of a job array) give exactly the batches a loader alone
gives; nothing changes in the loop; stats() shows batches_prepared and
batches_received and the group's members; the shared images are read-only
numpy arrays (copy=True gives writable private copies); torch tensors of
them come without a warning when torch is installed; a member in another
process killed with SIGKILL mid-epoch does not block the survivor, which
reaps it; a group that cannot be joined emits a coordl.GroupWarning and the
loader runs on alone.
"""

import gc
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings

import taputil
from taputil import done_testing, is_, ok

coordl = taputil.require_library()
np = taputil.require_numpy()


def epoch_batches(ld):
    out = []
    for b in ld.batches():
        out.append((b.seq, bytes(b.indices.tobytes()), b.images.tobytes(),
                    b.images.flags.writeable))
    return out


with taputil.Dataset(classes=3, images=36, seed=9) as ds, \
        tempfile.TemporaryDirectory(prefix="coordl-pygroup-") as gdir:
    for v in ("SYNERGY_CACHE_NAME", "SYNERGY_CACHE_BYTES",
              "SYNERGY_CACHE_GRANT", "SYNERGY_GROUP_WINDOW"):
        os.environ.pop(v, None)
    common = dict(batch_size=4, out_size=24, threads=1, seed=3,
                  output="numpy")
    os.environ.pop("SYNERGY_GROUP", None)
    alone = coordl.Loader(ds.root, **common)
    ref = epoch_batches(alone)
    ok(alone.stats()["group_members"] == 0 and
       alone.stats()["batches_received"] == 0,
       "outside a group the group fields are 0")
    ok(all(w for _, _, _, w in ref), "a loader alone hands out writable images")
    alone.close()

    os.environ["SYNERGY_GROUP"] = "u0-a42"
    os.environ["SYNERGY_GROUP_DIR"] = gdir
    os.environ["SYNERGY_GROUP_BYTES"] = "2M"
    a = coordl.Loader(ds.root, **common)
    b = coordl.Loader(ds.root, **common)
    is_(a.stats()["group_members"], 2, "two loaders form one group")
    got_a, got_b = [], []
    ia, ib = a.batches(), b.batches()
    for x, y in zip(ia, ib):
        got_a.append((x.seq, bytes(x.indices.tobytes()), x.images.tobytes(),
                      x.images.flags.writeable))
        got_b.append((y.seq, bytes(y.indices.tobytes()), y.images.tobytes(),
                      y.images.flags.writeable))
    strip = [(s, i, d) for s, i, d, _ in ref]
    ok([(s, i, d) for s, i, d, _ in got_a] == strip and
       [(s, i, d) for s, i, d, _ in got_b] == strip,
       "both members get exactly the batches of a loader alone")
    ok(not any(w for _, _, _, w in got_a + got_b),
       "shared images are read-only numpy arrays")
    sa, sb = a.stats(), b.stats()
    total = sa["batches_prepared"] + sb["batches_prepared"]
    ok(abs(total - len(ref)) < 1e-9,
       "the group prepared each batch once (%.2f for %d)" % (total, len(ref)))
    ok(sa["batches_received"] + sb["batches_received"] > 0,
       "stats() shows batches received from the other member (%.2f, %.2f)"
       % (sa["batches_received"], sb["batches_received"]))
    ok(sa["group_shared"] == 1 and sa["group_batches"] == len(ref),
       "stats() shows the member took its batches from the staging area")

    c = coordl.Loader(ds.root, copy=True, **common)
    got_c = epoch_batches(c)
    ok(all(w for _, _, _, w in got_c) and
       [(s, i, d) for s, i, d, _ in got_c] == strip,
       "copy=True gives writable private copies of the shared batches")
    kept = x.images
    first = bytes(kept.tobytes())
    for ld in (a, b, c):
        ld.close()
    ok(len(os.listdir(gdir)) == 2,
       "a closed member whose images are still viewed stays attached")
    ok(bytes(kept.tobytes()) == first,
       "and the view still reads the shared images after close()")
    del x, y, ia, ib, kept
    gc.collect()
    ok(os.listdir(gdir) == [],
       "the last view gone, the group's segment and lock file are removed")

    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    if have_torch:
        t = coordl.Loader(ds.root, **dict(common, output="torch"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            images, labels = next(iter(t))
        ok(tuple(images.shape) == (4, 3, 24, 24) and not caught,
           "torch tensors of shared batches come without a warning")
        t.close()
        del images, labels
    else:
        ok(True, "# SKIP torch is not installed for this Python")

    # A member in another process killed with SIGKILL mid-epoch: the
    # survivor is not blocked and still gets exactly its batches.
    child_src = (
        "import sys, time\n"
        "sys.path.insert(0, %r)\n"
        "import coordl\n"
        "ld = coordl.Loader(%r, batch_size=4, out_size=24, threads=1, seed=3,"
        " output='numpy')\n"
        "it = ld.batches()\n"
        "next(it); next(it)\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n"
        % (os.path.join(taputil.SRCDIR, "python"), ds.root))
    child = subprocess.Popen([sys.executable, "-c", child_src],
                             stdout=subprocess.PIPE, text=True)
    line = child.stdout.readline().strip()
    s = coordl.Loader(ds.root, **common)
    members_before = s.stats()["group_members"]
    got_s = []
    killed_after = None
    t0 = time.monotonic()
    for bt in s.batches():
        got_s.append((bt.seq, bytes(bt.indices.tobytes()), bt.images.tobytes()))
        if len(got_s) == 3:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            killed_after = time.monotonic()
    del bt
    took = time.monotonic() - t0
    ok(line == "ready" and members_before == 2 and killed_after is not None and
       child.returncode == -signal.SIGKILL,
       "a member in another process took batches and was killed with SIGKILL")
    ok(got_s == strip,
       "the survivor got exactly its batches after the kill (%.2f s in all)"
       % took)
    st = s.stats()
    ok(st["group_members"] == 1 and st["group_reaped"] >= 1,
       "the survivor reaped the dead member (%d members, %d reaped)"
       % (st["group_members"], st["group_reaped"]))
    s.close()
    child.stdout.close()
    ok(os.listdir(gdir) == [], "nothing is left of the group after the kill")

    os.environ["SYNERGY_GROUP_BYTES"] = "1K"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = coordl.Loader(ds.root, **common)
    ok(any(issubclass(w.category, coordl.GroupWarning) and
           "fewer than 2 batches" in str(w.message) for w in caught),
       "a staging area that cannot hold two batches emits a GroupWarning")
    ok([(s, i, dd) for s, i, dd, _ in epoch_batches(d)] == strip,
       "and the loader runs on alone with the same batches")
    d.close()
    ok(os.listdir(gdir) == [], "nothing is left in the group directory")

done_testing()
