# SPDX-License-Identifier: GPL-2.0-or-later
"""checkfreq_bench.py: one run of the CheckFreq benchmark (bench/checkfreq.sh).

An emulated-GPU training loop: the loader (coordl, real decoding) feeds
batches; the GPU's forward, backward and optimizer step are a sleep of
--step-s (the host idles, as it does while a GPU computes); the model's
state is --state-mb MB in host memory (parameters and momentum buffers,
half each, in tensors of at most 64 MB), the stand-in for the device
memory a snapshot copies. It checkpoints in one of these modes:

  none        no checkpoints (the baseline)
  checkfreq   coordl.CheckFreq: the interval chosen online (--bound), or
              --interval K
  save        torch.save of model + optimizer + loader position every K
              iterations, synchronously (the training loop waits)
  save-fsync  the same, then fsync and rename (a durable, atomic file, as
              CheckFreq writes)
  epoch       torch.save + fsync + rename once per --epoch-iters
              iterations (an epoch-boundary checkpoint)

Prints one JSON line: iterations, mean and median iteration time over the
measured part (after --warmup), checkpoints taken, the interval, time
blocked in saves, and (with --resume) how long restoring took (the
checkpoint's pages dropped from the page cache first: a requeued job reads
it cold) and from which iteration. --log FILE appends "ITER" per iteration (for the
kill-and-resume measurement of lost work).
"""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import torch  # noqa: E402

import coordl  # noqa: E402


class EmulatedSGD(torch.optim.Optimizer):
    """An optimizer whose step is the GPU's (emulated: part of the sleep),
    holding momentum buffers of the parameters' size as its state."""

    def __init__(self, params):
        super().__init__(params, {"lr": 0.01, "momentum": 0.9})
        for g in self.param_groups:
            for p in g["params"]:
                self.state[p]["momentum_buffer"] = torch.zeros_like(p)

    def step(self, closure=None):
        return None


def parse(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--mode", required=True,
                   choices=("none", "checkfreq", "save", "save-fsync",
                            "epoch"))
    p.add_argument("--state-mb", type=float, default=256)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--step-s", type=float, default=0.1)
    p.add_argument("--interval", type=int)
    p.add_argument("--bound", type=float, default=0.035)
    p.add_argument("--epoch-iters", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--after-resume", type=int,
                   help="with --resume: run this many iterations, then stop")
    p.add_argument("--log")
    return p.parse_args(argv)


def torch_save(path, model, opt, loader, it, durable):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                    "loader": loader.state_dict(), "iteration": it}, f)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.rename(tmp, path)
    if durable:
        fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)


def main(argv):
    a = parse(argv)
    torch.set_num_threads(1)
    os.makedirs(a.dir, exist_ok=True)
    loader = coordl.Loader(a.data, batch_size=a.batch_size, threads=a.threads,
                           out_size=112, cache_bytes=0, output="numpy", seed=1)
    n = int(a.state_mb * 1e6 / 8)   # floats per half (parameters, momentum)
    chunk = 16 << 20
    sizes = [chunk] * (n // chunk) + ([n % chunk] if n % chunk else [])
    model = torch.nn.ParameterList(torch.nn.Parameter(torch.rand(s))
                                   for s in sizes)
    opt = EmulatedSGD(model.parameters())
    cf = None
    start, resume_s = 0, None
    save_path = os.path.join(a.dir, "torch.pt")
    if a.resume:
        # A requeued job reads its checkpoint cold (often on another node):
        # drop the files' pages, and only theirs, from the page cache.
        for f in os.listdir(a.dir):
            fd = os.open(os.path.join(a.dir, f), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
    t_r = time.monotonic()
    if a.mode == "checkfreq":
        cf = coordl.CheckFreq(a.dir, model=model, optimizer=opt, loader=loader,
                              bound=a.bound, interval=a.interval,
                              verbose=False)
        if a.resume:
            start = cf.resume()
    elif a.resume and os.path.exists(save_path):
        ck = torch.load(save_path)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        loader.load_state_dict(ck["loader"])
        start = ck["iteration"]
    if a.resume:
        resume_s = time.monotonic() - t_r
        if a.after_resume is not None:
            a.iters = start + a.after_resume
    logfd = os.open(a.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) \
        if a.log else None
    times, saves, blocked = [], 0, 0.0
    it = start
    t_prev = time.perf_counter()
    while it < a.iters:
        for b in loader.batches():
            time.sleep(a.step_s)               # the GPU: forward, backward
            opt.step()                         # and optimizer (emulated)
            it += 1
            if cf is not None:
                cf.step()
            elif a.mode in ("save", "save-fsync") and it % a.interval == 0 or \
                    a.mode == "epoch" and it % a.epoch_iters == 0:
                t0 = time.perf_counter()
                torch_save(save_path, model, opt, loader, it,
                           a.mode != "save")
                blocked += time.perf_counter() - t0
                saves += 1
            if logfd is not None:
                os.write(logfd, b"%d\n" % it)
            now = time.perf_counter()
            times.append(now - t_prev)
            t_prev = now
            if it >= a.iters:
                break
    out = {"mode": a.mode, "state_mb": a.state_mb, "iters": it - start,
           "resumed_from": start if a.resume else None, "resume_s": resume_s}
    m = times[a.warmup:] if len(times) > a.warmup else times
    out["iter_mean"] = statistics.mean(m) if m else None
    out["iter_median"] = statistics.median(m) if m else None
    out["measured_iters"] = len(m)
    if cf is not None:
        st = cf.stats()
        out.update({"interval": st["interval"], "checkpoints": st["checkpoints"],
                    "superseded": st["superseded"], "failed": st["failed"],
                    "overhead_s": st["overhead_s"], "snapshot_s": st["snapshot_s"],
                    "persist_s": st["persist_s"], "iter_s": st["iter_s"],
                    "predicted": cf.choice["overhead"] if cf.choice else None})
        cf.close()
    else:
        out.update({"interval": a.interval if a.mode.startswith("save")
                    else a.epoch_iters if a.mode == "epoch" else None,
                    "checkpoints": saves,
                    "save_s": blocked / saves if saves else None})
    loader.close()
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
