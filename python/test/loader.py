# SPDX-License-Identifier: GPL-2.0-or-later
"""loader.py: the coordl Python binding over a generated ImageFolder set.

Iterates whole epochs and checks shapes, dtypes, value ranges, labels
(their histogram is the number of files per sorted class), len(),
set_epoch determinism across thread counts, automatic advance to the next
epoch, exact resume from state_dict(), sharding, the effective config,
stats(), set_threads, errors raised with the C library's message, the
natural loop across epoch boundaries, copies, views that outlive close(),
and corrupt files replaced and reported.
"""

import errno
import os

import taputil
from taputil import diag, done_testing, is_, ok, raises

coordl = taputil.require_library()
import numpy as np  # noqa: E402 (require_library checked it)

BATCH = 8


def epoch_indices(loader):
    """Dataset indices of the rest of the current epoch, in order."""
    out = []
    for b in loader.batches():
        out.extend(int(i) for i in b.indices)
    return out


with taputil.Dataset(classes=3, images=45, seed=11) as ds:
    files_per_class = [
        len([f for f in os.listdir(os.path.join(ds.root, c))
             if f.lower().endswith((".jpg", ".jpeg"))])
        for c in ds.classes]
    diag("classes %s, jpeg files per class %s" % (ds.classes, files_per_class))

    # --- one epoch: sizes, shapes, dtypes, values, labels --------------------
    with coordl.Loader(ds.root, batch_size=BATCH, threads=2, seed=5,
                       output="numpy") as ld:
        n = ld.num_samples
        is_(ld.num_classes, len(ds.classes), "num_classes = class folders")
        is_(ld.dataset_items, n, "one rank: its shard is the whole dataset")
        is_(len(ld), (n + BATCH - 1) // BATCH,
            "len() = batches per epoch (partial last batch kept)")
        cfg = ld.config
        is_((cfg["batch_size"], cfg["threads"], cfg["seed"]), (BATCH, 2, 5),
            "effective config carries the options given")
        ok(cfg["path"] == ds.root, "effective config names the dataset path")

        shapes_ok = dtypes_ok = finite_ok = range_ok = True
        labels, indices, batches, replaced = [], [], 0, 0
        lo = min((0 - m) / s for m, s in zip(cfg["mean"], cfg["std"]))
        hi = max((1 - m) / s for m, s in zip(cfg["mean"], cfg["std"]))
        for b in ld.batches():
            batches += 1
            replaced += b.replaced
            shapes_ok &= b.images.shape == (b.n, 3, 224, 224)
            shapes_ok &= b.labels.shape == (b.n,) == b.indices.shape
            dtypes_ok &= (b.images.dtype == np.float32
                          and b.labels.dtype == np.int64
                          and b.indices.dtype == np.uint64)
            finite_ok &= bool(np.isfinite(b.images).all())
            range_ok &= bool(b.images.min() >= lo - 1e-3
                             and b.images.max() <= hi + 1e-3)
            labels.extend(int(x) for x in b.labels)
            indices.extend(int(x) for x in b.indices)
        is_(batches, len(ld), "an epoch yields len() batches")
        is_(len(labels), n, "an epoch yields num_samples samples")
        ok(shapes_ok, "images are (n, 3, 224, 224), labels and indices (n,)")
        ok(dtypes_ok, "images float32, labels int64, indices uint64")
        ok(finite_ok, "every pixel is finite")
        ok(range_ok, "pixels lie within the normalized range [%.2f, %.2f]"
           % (lo, hi))
        if replaced == 0:
            is_(sorted(indices), list(range(n)),
                "every dataset index exactly once per epoch")
            is_([labels.count(c) for c in range(len(ds.classes))],
                files_per_class,
                "label histogram = files per class (sorted class names)")
        else:
            diag("%d corrupt items replaced; skipping the exact checks"
                 % replaced)
        st = ld.stats()
        is_((st["samples"], st["batches"]), (n, len(ld)),
            "stats(): samples and batches of the epoch")
        ok(st["epoch_wall"] > 0 and st["stall"] >= 0
           and st["stall"] <= st["epoch_wall"] + 1e-6,
           "stats(): 0 <= stall <= epoch_wall")
        ok(set(st) >= {"images_per_s", "cache_hits", "storage_bytes",
                       "prep_time", "threads", "total_samples"},
           "stats() is a dict with the coordl_stats_t fields")

        # Iterating again after the end starts the next epoch.
        first = ld.next_batch()
        ok(first is None, "next_batch() is None at the end of the epoch")
        epochs = {int(b.epoch) for b in ld.batches()}
        is_(epochs, {1}, "iterating an exhausted loader runs the next epoch")
        order0 = indices

    # --- determinism: order depends on (seed, epoch), not threads ----------
    orders = {}
    for threads in (1, 2):
        with coordl.Loader(ds.root, batch_size=BATCH, threads=threads,
                           seed=5, output="numpy") as ld:
            for e in (0, 3):
                ld.set_epoch(e)
                orders[threads, e] = epoch_indices(ld)
    is_(orders[1, 3], orders[2, 3], "set_epoch(3): same order with 1 and 2 "
        "threads")
    is_(orders[1, 0], order0, "set_epoch(0) repeats the first epoch's order")
    ok(orders[1, 0] != orders[1, 3], "epochs 0 and 3 have different orders")

    # --- state_dict resume yields exactly the remaining samples -----------
    with coordl.Loader(ds.root, batch_size=BATCH, threads=2, seed=9,
                       output="numpy") as a:
        a.set_epoch(2)
        full = epoch_indices(a)
        a.set_epoch(2)
        it = a.batches()
        head = [int(i) for _ in range(2) for i in next(it).indices]
        state = a.state_dict()
        it.close()
    is_(state["position"], 2 * BATCH, "state_dict position = samples taken")
    is_((state["epoch"], state["seed"]), (2, 9), "state_dict epoch and seed")
    with coordl.Loader(ds.root, batch_size=BATCH, threads=1, seed=9,
                       output="numpy") as b:
        b.load_state_dict(state)
        rest = epoch_indices(b)
        is_(head + rest, full,
            "resume from state_dict yields exactly the remaining samples")
        bad = dict(state, seed=10)
        e = raises(coordl.CoordlError, lambda: b.load_state_dict(bad),
                   "load_state_dict with another seed is refused")
        if e is not None:
            is_(e.errno, errno.EINVAL, "... with EINVAL")
        raises(KeyError, lambda: b.load_state_dict({"epoch": 1}),
               "load_state_dict without every key raises KeyError")

    # --- sharding: disjoint, equal-length shards ---------------------------
    shards = []
    for rank in (0, 1):
        with coordl.Loader(ds.root, batch_size=BATCH, seed=5, rank=rank,
                           world_size=2, output="numpy") as ld:
            ld.set_epoch(1)
            shards.append(epoch_indices(ld))
    is_(len(shards[0]), len(shards[1]), "rank 0 and 1 shards are equal length")
    ok(len(shards[0]) >= n // 2, "shards cover half the dataset each")
    if n % 2 == 0:
        ok(not set(shards[0]) & set(shards[1]), "shards are disjoint")

    # --- layout, threads, copies, buffer lifetime ---------------------------
    with coordl.Loader(ds.root, batch_size=BATCH, layout="nhwc_u8",
                       threads=1, output="numpy") as ld:
        images, labels = next(iter(ld))
        is_((images.shape, images.dtype), ((BATCH, 224, 224, 3), np.uint8),
            "layout='nhwc_u8' yields (n, 224, 224, 3) uint8")
        ld.set_threads(2)
        is_(ld.threads, 2, "set_threads(2) takes effect")
        e = raises(coordl.CoordlError, lambda: ld.set_threads(0),
                   "set_threads(0) is refused")
        if e is not None:
            ok(str(e) != "", "... with a message: %s" % e)
        kept = images
    # The loader is closed and the batch given back, but its memory stays
    # mapped while the view exists: reading it must not crash (the batch
    # buffers are large enough to be unmapped when freed).
    ok(bool(np.isfinite(kept.astype(np.float64).sum()))
       and kept.shape == (BATCH, 224, 224, 3),
       "reading an image view after close() is memory-safe")
    raises(ValueError, lambda: len(ld), "a closed loader raises ValueError")
    del kept, images

    # Regression: the loop variables still hold the previous batch while
    # the next is requested; across an epoch boundary that batch's buffer
    # can be the one the loader needs next (batches % prefetch == 1).
    with coordl.Loader(ds.root, batch_size=BATCH, threads=1,
                       output="numpy") as probe:
        nb = len(probe)
    prefetch = next(p for p in range(2, 64) if nb % p == 1) if nb > 2 else 2
    with coordl.Loader(ds.root, batch_size=BATCH, prefetch=prefetch,
                       threads=1, output="numpy") as ld:
        counts = []
        for epoch in range(3):
            ld.set_epoch(epoch)
            k = 0
            for images, labels in ld:
                k += 1
            counts.append(k)
        is_(counts, [nb] * 3, "natural loop over 3 epochs with prefetch=%d "
            "(%d batches) never trips on the held batch" % (prefetch, nb))

    # The same from a consumer thread other than the one that created the
    # loader (a training script's prefetch thread, for example).
    import threading
    with coordl.Loader(ds.root, batch_size=BATCH, prefetch=prefetch,
                       threads=1, output="numpy") as ld:
        counts = []

        def consume():
            try:
                for epoch in range(3):
                    ld.set_epoch(epoch)
                    counts.append(sum(1 for _ in ld))
            except Exception as e:      # reported by the check below
                counts.append(repr(e))
        t = threading.Thread(target=consume)
        t.start()
        t.join()
        is_(counts, [nb] * 3, "the same loop in another thread")

    # copy=True: every batch may be kept, and keeping them is not altered
    # by the batches that follow.
    with coordl.Loader(ds.root, batch_size=BATCH, prefetch=2, threads=1,
                       output="numpy", copy=True) as ld:
        held, sums = [], []
        for images, _ in ld:
            held.append(images)
            sums.append(float(images.astype(np.float64).sum()))
        is_(len(held), len(ld), "copy=True: every batch of an epoch is kept")
        is_([float(h.astype(np.float64).sum()) for h in held], sums,
            "copy=True: kept batches are unchanged by later batches")
        ok(all(h.flags.owndata for h in held),
           "copy=True: arrays own their memory")

    # Raw mode (fetch only, as the profiler uses it): no images, the
    # encoded size of each sample instead; one epoch reads every byte once.
    with coordl.Loader(ds.root, batch_size=BATCH, mode="raw", threads=1,
                       output="numpy") as ld:
        got = list(ld.batches())
        ok(all(b.images is None and b.sizes is not None for b in got),
           "mode='raw': images None, encoded sizes given")
        is_(sum(int(b.sizes.sum()) for b in got), ld.dataset_bytes,
            "mode='raw': sizes of an epoch sum to the dataset's bytes")
        del got

    # --- errors --------------------------------------------------------------
    missing = os.path.join(ds.dir, "no-such-dataset")
    e = raises(coordl.CoordlError, lambda: coordl.Loader(missing),
               "a missing dataset raises CoordlError")
    if e is not None:
        is_(e.errno, errno.ENOENT, "... with errno ENOENT")
        ok(missing in str(e), "... and the path in the message")
        diag(str(e))
    raises(TypeError, lambda: coordl.Loader(ds.root, batchsize=4),
           "an unknown option raises TypeError")
    raises(ValueError, lambda: coordl.Loader(ds.root, layout="nchw"),
           "an unknown layout name raises ValueError")
    e = raises(coordl.CoordlError,
               lambda: coordl.Loader(ds.root, batch_size=-1),
               "a negative batch size is refused")
    if e is not None:
        ok("batch" in str(e), "... naming the bad field: %s" % e)
    ok(coordl.version().count(".") == 2, "version() is x.y.z: %s"
       % coordl.version())

# --- corrupt items are replaced, counted and reported ------------------------
with taputil.Dataset(classes=2, images=16, seed=4, corrupt=3) as ds:
    with coordl.Loader(ds.root, batch_size=BATCH, threads=2,
                       output="numpy") as ld:
        n, replaced, sizes = ld.num_samples, 0, []
        for b in ld.batches():
            replaced += b.replaced
            sizes.append(b.n)
            finite = bool(np.isfinite(b.images).all())
        is_(sum(sizes), n, "with corrupt files an epoch still has every "
            "sample")
        ok(finite, "replacement samples are finite images")
        st = ld.stats()
        # Each of the 3 corrupt files is drawn once per epoch, so at least
        # 3 samples are replaced; a replacement may itself be corrupt and
        # be counted again by stats().
        ok(replaced >= 3 and st["corrupt"] >= replaced,
           "3 corrupt files: Batch.replaced %d >= 3, stats() corrupt %d >= "
           "replaced" % (replaced, st["corrupt"]))
        what = ld.last_corrupt()
        ok(what is not None and "corrupt" in what,
           "last_corrupt() names the file: %s" % what)

done_testing()
