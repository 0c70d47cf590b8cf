# SPDX-License-Identifier: GPL-2.0-or-later
"""tensors.py: the coordl binding hands out torch tensors when torch imports.

Checks output="torch" and output="auto" (torch already imported) yield
torch tensors of the right shape and dtype that share the loader's buffer,
that they feed a real forward/backward step, that output="numpy" still
yields numpy arrays, and that a tensor can still be read (stale, but
mapped) after the loader is closed. Skipped when torch is not installed for this Python.
"""

import taputil
from taputil import done_testing, is_, ok

coordl = taputil.require_library()
try:
    import torch
except ImportError:
    taputil.skip_all("torch is not installed for this Python")
import numpy as np  # noqa: E402

BATCH = 4

with taputil.Dataset(classes=2, images=12, seed=3) as ds:
    with coordl.Loader(ds.root, batch_size=BATCH, threads=1,
                       output="torch") as ld:
        images, labels = next(iter(ld))
        ok(isinstance(images, torch.Tensor) and isinstance(labels,
                                                           torch.Tensor),
           "output='torch' yields torch tensors")
        is_((tuple(images.shape), images.dtype),
            ((BATCH, 3, 224, 224), torch.float32), "images NCHW float32")
        is_(labels.dtype, torch.int64, "labels int64 (cross-entropy ready)")

        # A real training step on CPU: a tiny linear classifier.
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(4),
                                    torch.nn.Flatten(),
                                    torch.nn.Linear(3 * 16, 2))
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        ok(bool(torch.isfinite(loss)) and model[2].weight.grad is not None,
           "a batch feeds forward and backward: loss %.3f" % loss.item())

    ok(bool(torch.isfinite(images.double().sum())),
       "reading a tensor after close() is memory-safe")
    del images, labels

    with coordl.Loader(ds.root, batch_size=BATCH, threads=1) as ld:
        images, labels = next(iter(ld))
        ok(isinstance(images, torch.Tensor),
           "output='auto' yields tensors once torch is imported")
    with coordl.Loader(ds.root, batch_size=BATCH, threads=1,
                       output="numpy") as ld:
        images, labels = next(iter(ld))
        ok(isinstance(images, np.ndarray), "output='numpy' yields numpy")

done_testing()
