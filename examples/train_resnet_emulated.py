#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""train_resnet_emulated.py: a PyTorch training loop fed by coordl.

THE GPU IS EMULATED. This machine has no GPU, so by default each batch is
"trained on" by sleeping for batch_size / --gpu-rate seconds, the time a
GPU that trains at that many images/s (ResNet-18 on a V100 is about 1200)
would spend on it. Sleeping uses no CPU, like a real GPU, so the loader's
worker threads keep the cores. With --model tiny the step is instead a real
forward/backward/SGD step of a small CNN on the CPU (which then competes
with the loader for cores).

With --val DIR a validation loader (mode "eval") runs after each training
epoch, as in real training scripts. Under Synergy the job's cache grant goes
to the training loader; the validation loader reads from storage (pass
--val-cache job to give the grant to validation instead: the training
loader then has no cache; see coordl-python(7)).

After each epoch the loop prints, from the loader's own counters, the
throughput and the data stall: the share of the epoch the training loop
spent waiting inside the loader for its next batch. A stall near 0% means
the (emulated) GPU is the bottleneck; a large stall means the job needs more
CPU cores (or cache) for its input pipeline, which is what Synergy grants.

Example:
    tools/coordl-datagen --out /tmp/data --classes 10 --images 1000 --seed 1
    PYTHONPATH=python COORDL_LIBRARY=build/loader/.libs/libcoordl.so \\
        /usr/bin/python3 examples/train_resnet_emulated.py /tmp/data \\
        --epochs 2 --gpu-rate 1200 --threads 2
"""

import argparse
import os
import sys
import time

try:
    import coordl
except ImportError:
    # Run from a source checkout: use the package beside this file.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "python"))
    import coordl


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Train (on an EMULATED GPU by default) with the coordl "
                    "loader and report data stalls per epoch.")
    p.add_argument("data", help="ImageFolder dataset root (or a .cdx shard "
                   "index or a file list)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=0,
                   help="loader worker threads (0: SYNERGY_THREADS, else the "
                        "cpuset)")
    p.add_argument("--cache-bytes", type=int, default=-1,
                   help="MinIO cache bytes (-1: SYNERGY_CACHE_BYTES, else "
                        "none)")
    p.add_argument("--gpu-rate", type=float, default=1200.0,
                   help="images/s of the emulated GPU (default 1200, about "
                        "ResNet-18 training on a V100)")
    p.add_argument("--model", choices=("emulated", "tiny"),
                   default="emulated",
                   help="'emulated': sleep batch/gpu-rate per step; 'tiny': "
                        "a real small CNN trained on the CPU")
    p.add_argument("--max-batches", type=int, default=0,
                   help="stop each epoch after this many batches (0: all)")
    p.add_argument("--val", metavar="DIR",
                   help="a validation dataset, run in eval mode after each "
                        "epoch (its row is labelled 'val')")
    p.add_argument("--val-cache", choices=("auto", "job", "none"),
                   default="auto",
                   help="the validation loader's cache= (default auto: no "
                        "share of the job's cache)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", choices=("auto", "torch", "numpy"),
                   default="auto",
                   help="batch type: torch tensors (needs torch), numpy "
                        "arrays, or auto: torch when it can be imported. "
                        "The emulated model needs neither; importing torch "
                        "adds about 200 MB to the process")
    return p.parse_args(argv)


def tiny_model(torch, classes):
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 5, stride=4), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 16, 3, stride=2), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(16, classes))


def main(argv):
    args = parse_args(argv)
    torch = None
    if args.output != "numpy" or args.model == "tiny":
        try:
            import torch
        except ImportError:
            if args.output == "torch" or args.model == "tiny":
                print("train_resnet_emulated: needs torch (use /usr/bin/python3 "
                      "with Debian's python3-torch)", file=sys.stderr)
                return 2
    output = "torch" if torch is not None else "numpy"
    try:
        # One loader of a job has the job's cache: with --val-cache job
        # the validation loader, so the training loader asks for none.
        loader = coordl.Loader(args.data, batch_size=args.batch_size,
                               threads=args.threads,
                               cache_bytes=args.cache_bytes, seed=args.seed,
                               cache="none" if args.val and
                               args.val_cache == "job" else "auto",
                               output=output)
        val = None
        if args.val:
            val = coordl.Loader(args.val, batch_size=args.batch_size,
                                threads=args.threads, mode="eval",
                                cache=args.val_cache, seed=args.seed,
                                output=output)
    except (coordl.CoordlError, OSError) as e:
        print("train_resnet_emulated: %s" % e, file=sys.stderr)
        return 1

    if args.model == "tiny":
        torch.manual_seed(args.seed)
        model = tiny_model(torch, max(loader.num_classes, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        what = "a tiny CNN trained for real on the CPU"
    else:
        what = "an EMULATED GPU at %.0f images/s (sleep per batch)" \
            % args.gpu_rate
    print("coordl %s (%s): %d samples, %d classes, %d batches/epoch, "
          "%d loader threads, %s batches; compute: %s"
          % (coordl.version(), coordl.library_path(), loader.num_samples,
             loader.num_classes, len(loader), loader.threads, output, what))
    print("%5s %8s %8s %8s %9s %8s %8s %9s %10s"
          % ("epoch", "batches", "images", "wall_s", "images/s", "stall%",
             "loss", "hit%", "storageMB"))
    def row(label, st, loss):
        wall = st["epoch_wall"] or float("nan")
        lookups = st["cache_hits"] + st["cache_misses"]
        print("%5s %8d %8d %8.3f %9.1f %8.1f %8s %9s %10.1f"
              % (label, st["batches"], st["samples"], wall,
                 st["samples"] / wall, 100.0 * st["stall"] / wall, loss,
                 "%.1f" % (100.0 * st["cache_hits"] / lookups)
                 if lookups else "-",
                 st["storage_bytes"] / 1e6))

    with loader:
        for epoch in range(args.epochs):
            loader.set_epoch(epoch)
            loss_sum, steps = 0.0, 0
            for images, labels in loader:
                if args.model == "tiny":
                    opt.zero_grad()
                    loss = torch.nn.functional.cross_entropy(model(images),
                                                             labels)
                    loss.backward()
                    opt.step()
                    loss_sum += loss.item()
                else:
                    time.sleep(images.shape[0] / args.gpu_rate)
                steps += 1
                if args.max_batches and steps >= args.max_batches:
                    break
            row(str(epoch), loader.stats(),
                "%.3f" % (loss_sum / steps) if args.model == "tiny"
                and steps else "-")
            if val is not None:
                # Evaluation: a forward pass, about a third of a step.
                val.set_epoch(epoch)
                for images, _ in val:
                    if args.model == "tiny":
                        with torch.no_grad():
                            model(images)
                    else:
                        time.sleep(images.shape[0] / (3 * args.gpu_rate))
                row("val", val.stats(), "-")
    if val is not None:
        val.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
