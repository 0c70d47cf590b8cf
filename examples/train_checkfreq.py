#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""train_checkfreq.py: a PyTorch training loop made preemptible by CheckFreq.

The three lines marked "# CheckFreq" are all a training script adds:

    cf = coordl.CheckFreq(model=model, optimizer=opt, loader=loader,
                          scheduler=sched)     # directory: $SYNERGY_CKPT_DIR
    cf.resume()                                # at start
    ...  opt.step(); cf.step()                 # once per iteration

Kill the job (kill -9, scancel, preemption, a node failure) and start it
again: it goes on from its last checkpoint with the same weights,
optimizer state, learning-rate schedule, random generators and data order
as if it had never stopped. On SIGTERM (Slurm's preemption, scancel, time
limit) it writes a last checkpoint and exits 143. Under Synergy the SPANK
plugin gives each job its checkpoint directory (SYNERGY_CKPT_DIR, kept
across requeues); elsewhere pass --ckpt-dir.

THE GPU IS EMULATED by default: each step waits batch/--gpu-rate seconds
(a GPU computing while the host is idle, which is when CheckFreq copies the
snapshot), and the model is --state-mb MB of parameters that SGD with
momentum updates with synthetic gradients, so the checkpointed state is
that size times two. --model tiny trains a small CNN for real on the CPU.

Example (a requeue by hand: run, kill, run again):
    tools/coordl-datagen --out /tmp/data --classes 10 --images 1000 --seed 1
    PYTHONPATH=python COORDL_LIBRARY=build/loader/.libs/libcoordl.so \\
        /usr/bin/python3 examples/train_checkfreq.py /tmp/data \\
        --ckpt-dir /tmp/ckpt --epochs 3 --state-mb 100 & sleep 20; kill -9 %1
    ... the same command again: "checkfreq: resumed from iteration N"
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
        description="Train (on an EMULATED GPU by default) with coordl and "
                    "CheckFreq checkpoints.")
    p.add_argument("data", help="ImageFolder dataset root (or .cdx, list)")
    p.add_argument("--ckpt-dir", help="checkpoint directory (default: "
                   "$SYNERGY_CKPT_DIR, set by Synergy per job)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--gpu-rate", type=float, default=400.0,
                   help="images/s of the emulated GPU (default 400)")
    p.add_argument("--model", choices=("emulated", "tiny"),
                   default="emulated")
    p.add_argument("--state-mb", type=float, default=100.0,
                   help="emulated model: MB of parameters (default 100)")
    p.add_argument("--bound", type=float, default=0.035,
                   help="checkpoint overhead allowed (default 0.035)")
    p.add_argument("--interval", type=int,
                   help="checkpoint every N iterations instead of choosing")
    return p.parse_args(argv)


def make_model(torch, args, classes):
    if args.model == "tiny":
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 5, stride=4), torch.nn.BatchNorm2d(8),
            torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(), torch.nn.Linear(8, classes))
    # An emulated model: parameters of the size asked for, in 16 MB tensors
    # (a real network's layers), updated by SGD; its forward and backward
    # pass are the GPU's and are emulated by a sleep.
    n = int(args.state_mb * 1e6 / 4)
    sizes = [4 << 20] * (n // (4 << 20)) + ([n % (4 << 20)] if n % (4 << 20)
                                             else [])
    return torch.nn.ParameterList(torch.nn.Parameter(torch.zeros(s))
                                  for s in sizes)


def main(argv):
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("train_checkfreq: needs torch (/usr/bin/python3 with Debian's "
              "python3-torch)", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    loader = coordl.Loader(args.data, batch_size=args.batch_size,
                           threads=args.threads, output="torch", seed=0)
    model = make_model(torch, args, max(loader.num_classes, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.9)

    cf = coordl.CheckFreq(args.ckpt_dir, model=model, optimizer=opt,  # CheckFreq
                          loader=loader, scheduler=sched, bound=args.bound,
                          interval=args.interval)
    cf.resume()                                                    # CheckFreq

    step_s = args.batch_size / args.gpu_rate
    print("%d batches/epoch, %.0f MB of parameters, emulated step %.3f s"
          % (len(loader), sum(p.numel() * 4 for p in model.parameters()) /
             1e6, step_s if args.model == "emulated" else 0), flush=True)
    for epoch in range(loader.epoch, args.epochs):
        t0, n = time.monotonic(), 0
        for images, labels in loader:
            if args.model == "tiny":
                loss = torch.nn.functional.cross_entropy(model(images), labels)
                opt.zero_grad()
                loss.backward()
            else:
                time.sleep(step_s)               # the GPU's forward+backward
                for p in model.parameters():
                    p.grad = torch.full_like(p, 1e-3) if p.grad is None \
                        else p.grad
            opt.step()
            cf.step()                                              # CheckFreq
            n += 1
        sched.step()
        st = cf.stats()
        wall = time.monotonic() - t0
        print("epoch %d: %d iterations in %.1f s (%.3f s each); checkpoint "
              "every %s iterations, %d written, last at iteration %s"
              % (epoch, n, wall, wall / max(n, 1), st["interval"],
                 st["checkpoints"], st["last_checkpoint"]), flush=True)
    cf.close()
    loader.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
