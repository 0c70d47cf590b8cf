# SPDX-License-Identifier: GPL-2.0-or-later
"""The Loader class: libcoordl as a Python iterable of (images, labels).

Images are zero-copy: each batch's image array is a numpy view of one of
the loader's pre-allocated buffers (a torch tensor made with
torch.from_numpy shares it too). A batch is valid until the next batch is
requested from the same loader, or until set_epoch(), load_state_dict() or
close(): the buffer then goes back to the loader to be refilled, as in the
C API (coordl_next / coordl_release). Pass copy=True for private copies
that may be kept. Labels (int64, ready for torch's cross-entropy) and
dataset indices (uint64) are small and always copied.

The buffers' memory itself is freed only once no view of it remains, so a
view kept after close() reads stale pixels but never freed memory.

In a group of jobs that share prepared batches (coordinated prep: the tasks
of a Slurm job array under Synergy, see coordl(3)), a batch's images are a
view of the group's staging area, shared with the other jobs: the numpy
array is read-only (and so is a torch tensor made from it; writing it would
fault). Take copy=True, or copy the tensor, to change images in place.
stats() then shows batches_prepared (by this job's workers) and
batches_received (prepared by the others), and group_note() says why a
loader that was told of a group runs on its own.

Why not keep a buffer for as long as Python references it? libcoordl fills
its buffers as a ring and refuses (EBUSY) to hand out a batch whose buffer
the caller still holds; the loop variable of `for images, labels in
loader` still holds the previous batch while the next is requested, which
at an epoch boundary can be the very buffer needed next.

Returning a buffer whose last reference dies in another thread (the
garbage collector runs wherever that happens) is deferred to the consumer
thread, because libcoordl's consumer calls are not documented as safe to
run concurrently with coordl_next().
"""

import errno as _errno
import os
import sys
import threading
import warnings

import ctypes

import numpy as np

from . import _abi


class CoordlError(OSError):
    """A libcoordl call failed: errno from the C library, text from its
    coordl_error_t (which names the bad input)."""

    def __init__(self, err, text):
        super().__init__(err, text or os.strerror(err))

    def __str__(self):
        return self.strerror


class CacheWarning(RuntimeWarning):
    """The loader's cache is not what was asked for (the named cache is in
    use for another dataset, has no room, or its file is unsafe; or the
    grant file cannot be read): the loader runs on with a private cache or
    none. The message is libcoordl's coordl_cache_note()."""


class GroupWarning(RuntimeWarning):
    """The loader was told of a group (SYNERGY_GROUP) but runs on its own
    (the staging area is too small, its file is unsafe, ...). The message
    is libcoordl's coordl_group_note()."""


def _raise(call, err_struct):
    e = ctypes.get_errno() or _errno.EIO
    text = err_struct.text.decode("utf-8", "replace") if err_struct else ""
    raise CoordlError(e, text or "%s: %s" % (call, os.strerror(e)))


_SOURCES = {"auto": _abi.SOURCE_AUTO, "imagefolder": _abi.SOURCE_IMAGEFOLDER,
            "filelist": _abi.SOURCE_FILELIST, "shards": _abi.SOURCE_SHARDS}
_LAYOUTS = {"nchw_f32": _abi.LAYOUT_NCHW_F32, "nhwc_u8": _abi.LAYOUT_NHWC_U8}
_MODES = {"train": _abi.MODE_TRAIN, "eval": _abi.MODE_EVAL,
          "raw": _abi.MODE_RAW, "synthetic": _abi.MODE_SYNTHETIC}
_CACHE_USES = {"auto": _abi.CACHE_AUTO, "job": _abi.CACHE_JOB,
               "none": _abi.CACHE_NONE}
_ENUMS = {"source": _SOURCES, "layout": _LAYOUTS, "mode": _MODES,
          "cache_use": _CACHE_USES}
_STATE_KEYS = ("seed", "epoch", "position", "rank", "world_size")


def _config_to_dict(cfg):
    out = {}
    for name, _ in _abi.Config._fields_:
        v = getattr(cfg, name)
        if name in ("mean", "std"):
            v = tuple(v)
        elif isinstance(v, bytes):
            v = v.decode("utf-8", "surrogateescape")
        out[name] = v
    return out


class _Handle:
    """Owns the coordl_loader_t.

    coordl_destroy() frees the batch buffers, so it waits until the caller
    has closed the loader *and* every _Buffer (hence every numpy view of a
    buffer) is gone."""

    def __init__(self, lib, ptr, keep):
        self.lib = lib
        self.ptr = ptr
        self.keep = keep          # bytes the C config points at
        self.views = 0            # live _Buffer objects
        self.closed = False
        # Reentrant: a garbage collection inside a locked section may drop
        # the last reference to another buffer and come back here.
        self.lock = threading.RLock()
        self.pending = []         # batches given back from other threads
        self.owner_thread = threading.get_ident()

    def release(self, bptr):
        """Give a batch back to libcoordl; from any thread."""
        with self.lock:
            if self.ptr is None:
                return
            if threading.get_ident() == self.owner_thread or self.closed:
                self.lib.coordl_release(self.ptr, bptr)
            else:
                self.pending.append(bptr)

    def flush(self):
        """Release batches given back in other threads; called by the
        consumer thread before it asks for a batch."""
        with self.lock:
            while self.pending and self.ptr is not None:
                self.lib.coordl_release(self.ptr, self.pending.pop())

    def view_gone(self):
        with self.lock:
            self.views -= 1
            self._maybe_destroy()

    def close(self):
        with self.lock:
            self.closed = True
            self.flush()
            self._maybe_destroy()

    def _maybe_destroy(self):
        if self.closed and self.views == 0 and self.ptr is not None:
            self.lib.coordl_destroy(self.ptr)
            self.ptr = None


class _Buffer:
    """One coordl_batch_t handed out by coordl_next(): exposes its image
    data through the numpy array interface, gives the batch back once on
    release(), and keeps the loader's memory alive while numpy views of it
    (whose base this object is) exist."""

    def __init__(self, handle, bptr, shape, typestr):
        self._handle = handle
        self._bptr = bptr
        with handle.lock:
            handle.views += 1
        self.__array_interface__ = {
            "version": 3, "shape": shape, "typestr": typestr,
            "data": (bptr.contents.data, bool(bptr.contents.readonly)),
        }

    def release(self):
        if self._bptr is not None:
            bptr, self._bptr = self._bptr, None
            self._handle.release(bptr)

    def __del__(self):
        try:
            self.release()
            self._handle.view_gone()
        except Exception:
            # At interpreter shutdown module globals may already be gone;
            # the process is exiting, so the memory is reclaimed anyway.
            pass


class Batch:
    """One batch: images (numpy view or copy, None in raw mode), labels
    (int64), indices (uint64 dataset indices), sizes (uint64 encoded sizes
    in raw mode, else None), n, epoch, seq, replaced."""

    __slots__ = ("images", "labels", "indices", "sizes", "n", "epoch",
                 "seq", "replaced", "data_bytes", "_buffer")

    def release(self):
        """Give the image buffer back now; `images` must not be used after.
        Optional: requesting the next batch does the same."""
        self.images = None
        if self._buffer is not None:
            buf, self._buffer = self._buffer, None
            buf.release()


class Loader:
    """Iterate over a dataset through libcoordl.

    Loader(path, batch_size=..., threads=..., ...): path is a directory,
    file list or shard index, or an http://, https:// or s3://BUCKET/PREFIX
    URL; every keyword is a field of coordl_config_t (see coordl.h; remote
    datasets: io_window, io_deadline_ms, max_item_bytes); an omitted one
    keeps the library's default or the Synergy environment's value. source, layout and mode
    also take names: source="auto"|"imagefolder"|"filelist"|"shards",
    layout="nchw_f32"|"nhwc_u8", mode="train"|"eval"|"raw"|"synthetic".

    cache="auto"|"job"|"none" (the cache_use field) says which loader gets
    the job's cache under Synergy: "auto" (default) gives it to a training
    loader (mode "train") and none to others, "job" to this loader
    whatever its mode, "none" to no loader. With a training loader and a
    validation loader, the default does the right thing; say cache="job"
    on the loader that runs most epochs when it is not in "train" mode. A
    loader that cannot have the cache it asked for still runs (with a
    private cache or none) and emits a coordl.CacheWarning saying why.

    output="numpy" yields numpy arrays, "torch" torch tensors (sharing the
    memory, via torch.from_numpy), "auto" torch tensors if torch is already
    imported by the program, else numpy. Images are zero-copy views, valid
    until the next batch is requested; copy=True yields private copies.

    Iterating runs the current epoch from its current position. Once an
    epoch is exhausted, iterating again starts the next epoch, so both
    `for e in range(E): loader.set_epoch(e); for b in loader: ...` and
    `for e in range(E): for b in loader: ...` work.
    """

    def __init__(self, path, output="auto", copy=False, cache=None,
                 **config):
        self._handle = None
        if cache is not None:
            if "cache_use" in config:
                raise TypeError("Loader: give cache= or cache_use=, not both")
            config["cache_use"] = cache
        if output not in ("auto", "numpy", "torch"):
            raise ValueError("output=%r: expected 'auto', 'numpy' or "
                             "'torch'" % (output,))
        self._lib = _abi.load()
        cfg = _abi.Config()
        self._lib.coordl_config_init(ctypes.byref(cfg))
        keep = [os.fsencode(path)]
        cfg.path = keep[0]
        fields = dict(_abi.Config._fields_)
        for key, value in config.items():
            if key not in fields or key == "path":
                raise TypeError("Loader: unknown option %r" % (key,))
            if value is None:
                continue
            if key in _ENUMS and isinstance(value, str):
                table = _ENUMS[key]
                if value not in table:
                    raise ValueError("%s=%r: expected one of %s"
                                     % (key, value, ", ".join(sorted(table))))
                value = table[value]
            elif key == "cache_name":
                keep.append(os.fsencode(value))
                value = keep[-1]
            elif key in ("mean", "std"):
                value = tuple(float(x) for x in value)
                if len(value) != 3:
                    raise ValueError("%s: expected 3 values" % key)
                value = (ctypes.c_float * 3)(*value)
            setattr(cfg, key, value)
        err = _abi.Error()
        ptr = self._lib.coordl_create(ctypes.byref(cfg), ctypes.byref(err))
        if not ptr:
            _raise("coordl_create", err)
        self._handle = _Handle(self._lib, ptr, keep)
        note = self.cache_note()
        if note is not None:
            warnings.warn(note, CacheWarning, stacklevel=2)
        note = self.group_note()
        if note is not None:
            warnings.warn(note, GroupWarning, stacklevel=2)
        self._copy = bool(copy)
        self._torch = None
        if output == "torch" or (output == "auto" and "torch" in sys.modules):
            import torch
            self._torch = torch
        self._exhausted = False
        self._last = None
        self._refresh_shape()

    # -- helpers ---------------------------------------------------------
    def _ptr(self):
        h = self._handle
        if h is None or h.closed:
            raise ValueError("Loader is closed")
        return h.ptr

    def _refresh_shape(self):
        cfg = self._lib.coordl_config(self._ptr()).contents
        s = cfg.out_size
        self._mode = cfg.mode
        if cfg.layout == _abi.LAYOUT_NHWC_U8:
            self._sample_shape, self._typestr = (s, s, 3), "|u1"
        else:
            self._sample_shape, self._typestr = (3, s, s), "<f4"

    # -- sizes -----------------------------------------------------------
    def __len__(self):
        """Batches per epoch for this rank (honours drop_last)."""
        return self._lib.coordl_num_batches(self._ptr())

    @property
    def num_samples(self):
        """Samples per epoch in this rank's shard."""
        return self._lib.coordl_num_samples(self._ptr())

    @property
    def num_classes(self):
        return self._lib.coordl_num_classes(self._ptr())

    @property
    def dataset_items(self):
        return self._lib.coordl_dataset_items(self._ptr())

    @property
    def dataset_bytes(self):
        return self._lib.coordl_dataset_bytes(self._ptr())

    @property
    def config(self):
        """The effective configuration (after environment and defaults)."""
        return _config_to_dict(self._lib.coordl_config(self._ptr()).contents)

    @property
    def epoch(self):
        return self.state_dict()["epoch"]

    # -- control ---------------------------------------------------------
    def set_epoch(self, epoch):
        """Start epoch `epoch` from its beginning (order depends only on
        seed, epoch, rank and world size)."""
        ptr = self._ptr()
        self._release_last()
        err = _abi.Error()
        if self._lib.coordl_set_epoch(ptr, int(epoch),
                                      ctypes.byref(err)) != 0:
            _raise("coordl_set_epoch", err)
        self._exhausted = False

    def set_threads(self, threads):
        """Change the number of worker threads (1..1024) while running."""
        err = _abi.Error()
        if self._lib.coordl_set_threads(self._ptr(), int(threads),
                                        ctypes.byref(err)) != 0:
            _raise("coordl_set_threads", err)

    @property
    def threads(self):
        return self._lib.coordl_get_threads(self._ptr())

    def state_dict(self):
        """The resumable position: a dict of seed, epoch, position (samples
        already handed out this epoch), rank and world_size."""
        st = _abi.State()
        if self._lib.coordl_get_state(self._ptr(), ctypes.byref(st)) != 0:
            _raise("coordl_get_state", None)
        return {k: int(getattr(st, k)) for k in _STATE_KEYS}

    def load_state_dict(self, state):
        """Resume from state_dict(): the next batches hold exactly the
        samples that had not been handed out."""
        missing = [k for k in _STATE_KEYS if k not in state]
        if missing:
            raise KeyError("load_state_dict: missing %s" % ", ".join(missing))
        st = _abi.State(**{k: int(state[k]) for k in _STATE_KEYS})
        ptr = self._ptr()
        self._release_last()
        err = _abi.Error()
        if self._lib.coordl_set_state(ptr, ctypes.byref(st),
                                      ctypes.byref(err)) != 0:
            _raise("coordl_set_state", err)
        self._exhausted = False

    def stats(self):
        """The loader's counters (coordl_stats_t) as a dict; times in s."""
        st = _abi.Stats()
        if self._lib.coordl_get_stats(self._ptr(), ctypes.byref(st)) != 0:
            _raise("coordl_get_stats", None)
        return {name: getattr(st, name) for name, _ in _abi.Stats._fields_}

    def cache_note(self):
        """Why the cache is not what was asked for (see CacheWarning), or
        None when it is."""
        s = self._lib.coordl_cache_note(self._ptr())
        return s.decode("utf-8", "replace") if s is not None else None

    def group_note(self):
        """Why the loader runs on its own although its environment names a
        group (see GroupWarning), or None."""
        s = self._lib.coordl_group_note(self._ptr())
        return s.decode("utf-8", "replace") if s is not None else None

    def last_corrupt(self):
        """Path and reason of the last corrupt item skipped, or None."""
        s = self._lib.coordl_last_corrupt(self._ptr())
        return s.decode("utf-8", "replace") if s is not None else None

    # -- iteration -------------------------------------------------------
    def next_batch(self):
        """The next Batch of the current epoch, or None at its end. The
        previous batch's images are given back to the loader first."""
        ptr = self._ptr()
        h = self._handle
        # The thread that asks for batches is the consumer: releases from
        # it go straight to libcoordl, others wait in h.pending.
        h.owner_thread = threading.get_ident()
        self._release_last()
        h.flush()
        bptr = ctypes.POINTER(_abi.Batch)()
        err = _abi.Error()
        rc = self._lib.coordl_next(ptr, ctypes.byref(bptr), ctypes.byref(err))
        if rc < 0:
            _raise("coordl_next", err)
        if rc == 0:
            self._exhausted = True
            return None
        b = bptr.contents
        n = b.n
        shape = (n,) + self._sample_shape
        buf = _Buffer(h, bptr, shape, self._typestr)
        batch = Batch()
        batch.n = n
        batch.epoch = b.epoch
        batch.seq = b.seq
        batch.replaced = b.replaced
        batch.data_bytes = b.data_bytes
        batch.labels = np.ctypeslib.as_array(b.labels, (n,)).astype(np.int64)
        batch.indices = np.ctypeslib.as_array(b.indices, (n,)).copy()
        batch.sizes = None
        need = n * int(np.prod(self._sample_shape)) * \
            np.dtype(self._typestr).itemsize
        if self._mode == _abi.MODE_RAW:
            # Raw mode carries one uint64 encoded size per sample.
            if b.data and b.data_bytes >= n * 8:
                sizes = ctypes.cast(b.data, ctypes.POINTER(ctypes.c_uint64))
                batch.sizes = np.ctypeslib.as_array(sizes, (n,)).copy()
            batch.images, batch._buffer = None, None
            buf.release()
        elif not b.data or b.data_bytes < need:
            batch.images, batch._buffer = None, None
            buf.release()
        elif self._copy:
            batch.images, batch._buffer = np.array(buf, copy=True), None
            buf.release()
        else:
            batch.images, batch._buffer = np.asarray(buf), buf
            self._last = buf
        return batch

    def _release_last(self):
        """Give back the buffer of the batch handed out last."""
        if self._last is not None:
            buf, self._last = self._last, None
            buf.release()

    def batches(self):
        """Iterate Batch objects (with indices, epoch, seq) over the rest
        of the current epoch, or the next one if it is exhausted."""
        self._advance_if_done()
        while True:
            b = self.next_batch()
            if b is None:
                return
            yield b

    def _advance_if_done(self):
        if self._exhausted:
            self.set_epoch(self.epoch + 1)

    def __iter__(self):
        self._advance_if_done()
        return self

    def __next__(self):
        b = self.next_batch()
        if b is None:
            raise StopIteration
        images, labels = b.images, b.labels
        if self._torch is not None:
            if images is not None:
                if not images.flags.writeable:
                    # A group's shared batch: torch warns that it does not
                    # support read-only tensors; the docstring says why.
                    with warnings.catch_warnings():
                        warnings.filterwarnings(
                            "ignore", message=".*not writable.*")
                        images = self._torch.from_numpy(images)
                else:
                    images = self._torch.from_numpy(images)
            labels = self._torch.from_numpy(labels)
        return images, labels

    # -- lifetime --------------------------------------------------------
    def close(self):
        """Stop the loader. Its memory is freed once no image view of it
        remains. Safe to call twice."""
        if self._handle is not None:
            if not self._handle.closed:
                self._release_last()
            self._handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
