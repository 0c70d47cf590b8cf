# SPDX-License-Identifier: GPL-2.0-or-later
"""coordl: Python binding of libcoordl, the Synergy data loader.

A pure-ctypes binding over the C ABI in coordl.h (no compiled extension).
Typical use in a PyTorch training loop:

    import torch, coordl
    with coordl.Loader("/data/imagenet/train", batch_size=64) as loader:
        for epoch in range(epochs):
            loader.set_epoch(epoch)
            for images, labels in loader:     # torch tensors, NCHW float32
                loss = criterion(model(images.cuda()), labels.cuda())
                ...
            print(loader.stats()["stall"])

Checkpoints with exact resume (coordl.CheckFreq, see coordl.checkfreq):

    cf = coordl.CheckFreq(model=model, optimizer=opt, loader=loader)
    cf.resume()
    ... opt.step(); cf.step()

Images are zero-copy views of the loader's buffers, valid until the next
batch is requested; pass copy=True to keep batches (see coordl.loader).
libcoordl is found through $COORDL_LIBRARY, the build tree, the install
libdir, or the system.
"""

from .loader import Batch, CacheWarning, CoordlError, GroupWarning, Loader
from .checkfreq import (CheckFreq, CheckpointWarning, choose_interval,
                        load_latest)
from ._abi import library_path


def version():
    """The loaded libcoordl's version string, e.g. "0.1.0"."""
    from . import _abi
    return _abi.load().coordl_version().decode()


__all__ = ["Loader", "Batch", "CoordlError", "CacheWarning", "GroupWarning", "version",
           "library_path", "CheckFreq", "CheckpointWarning", "choose_interval",
           "load_latest"]
