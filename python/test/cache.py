# SPDX-License-Identifier: GPL-2.0-or-later
"""cache.py: issue 12, a training script's loaders under the Synergy
environment, through the Python binding.

With SYNERGY_CACHE_NAME, _BYTES and _DIR set as the plugin sets them, a
training loader and a validation loader on another dataset both start
(before: CoordlError "cache 'job_N' is in use for another dataset"); the
training loader holds the job's cache, the validation loader none; a
second training loader on another dataset runs without a cache and emits a
coordl.CacheWarning naming the reason; cache="none" and cache="job" pick
the loader; a bad cache= value is refused.
"""

import os
import tempfile
import warnings

import taputil
from taputil import done_testing, is_, ok, raises

coordl = taputil.require_library()


def first_epoch(ld):
    return sum(len(labels) for _, labels in ld)


with taputil.Dataset(classes=3, images=24, seed=5) as train_ds, \
        taputil.Dataset(classes=2, images=10, seed=6) as val_ds, \
        tempfile.TemporaryDirectory(prefix="coordl-pycache-") as cdir:
    os.environ["SYNERGY_CACHE_NAME"] = "job_42"
    os.environ["SYNERGY_CACHE_BYTES"] = "16M"
    os.environ["SYNERGY_CACHE_DIR"] = cdir
    os.environ.pop("SYNERGY_CACHE_GRANT", None)
    common = dict(batch_size=4, out_size=32, threads=2, output="numpy")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train = coordl.Loader(train_ds.root, **common)
        val = coordl.Loader(val_ds.root, mode="eval", **common)
    ok(True, "issue 12: a training and a validation loader on another "
       "dataset both start under the Synergy environment")
    is_([str(w.message) for w in caught], [], "and neither warns")
    st = train.stats()
    ok(st["cache_shared"] == 1 and st["cache_bytes_limit"] == 16 << 20,
       "the training loader holds the job's cache with the whole grant")
    st = val.stats()
    ok(st["cache_shared"] == 0 and st["cache_bytes_limit"] == 0 and
       val.cache_note() is None,
       "the validation loader has no cache")
    n_train = first_epoch(train)
    n_val = first_epoch(val)
    n_train2 = first_epoch(train)
    st = train.stats()
    ok(n_train == n_train2 == train.num_samples and n_val == val.num_samples
       and st["cache_hits"] == n_train and st["storage_bytes"] == 0,
       "both run; the training set's second epoch comes from the cache")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        other = coordl.Loader(val_ds.root, **common)
    msgs = [str(w.message) for w in caught
            if issubclass(w.category, coordl.CacheWarning)]
    ok(len(msgs) == 1 and "in use for another dataset" in msgs[0] and
       "without a cache" in msgs[0],
       "issue 12: a second training loader on another dataset runs "
       "without a cache and warns why: %s" % (msgs[0] if msgs else None))
    is_(other.stats()["cache_bytes_limit"], 0, "  its cache bound is 0")
    is_(first_epoch(other), other.num_samples, "  and it runs its epoch")
    other.close()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        none = coordl.Loader(train_ds.root, cache="none", **common)
        job = coordl.Loader(train_ds.root, mode="eval", cache="job", **common)
    is_(caught and [str(w.message) for w in caught], [],
        "cache='none' and cache='job' do not warn")
    is_(none.stats()["cache_bytes_limit"], 0, "cache='none': no cache")
    ok(job.stats()["cache_shared"] == 1 and
       job.stats()["cache_items"] == train.num_samples,
       "cache='job': an eval loader on the same dataset shares the job's "
       "cache")
    is_(job.config["cache_use"], 1, "the effective config says cache_use=1")
    none.close()
    job.close()
    raises(ValueError, lambda: coordl.Loader(train_ds.root, cache="all",
                                             **common),
           "cache='all' is refused")
    raises(TypeError, lambda: coordl.Loader(train_ds.root, cache="none",
                                            cache_use=2, **common),
           "cache= and cache_use= together are refused")
    val.close()
    train.close()
    for v in ("SYNERGY_CACHE_NAME", "SYNERGY_CACHE_BYTES",
              "SYNERGY_CACHE_DIR"):
        del os.environ[v]
    is_(os.listdir(cdir), [], "the cache files are gone with the loaders")

done_testing()
