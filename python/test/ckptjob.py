# SPDX-License-Identifier: GPL-2.0-or-later
"""ckptjob.py: a small deterministic training job with coordl.CheckFreq.

Not a test itself: checkfreq-exact.py, checkfreq-torch.py and the cluster
test run it, once straight through and once killed and resumed, and compare.

    ckptjob.py --data DIR [--ckpt DIR] --iters N --log FILE --out FILE
               [--torch] [--interval K | --bound B] [--kill PHASE@ITER ...]
               [--sleep S] [--verbose]

The model is a two-layer perceptron in numpy (or, with --torch, a small
CNN with batch norm, dropout, SGD with momentum and a step LR schedule in
torch), fed by a real coordl.Loader (shuffled, augmented) on the dataset.
It uses the Python, numpy (and torch) random generators on every step, so
a resume that missed one of them would diverge. Each iteration appends
"ITER EPOCH SEQ INDEX,INDEX,..." to the log with one write(2), so the
lines survive kill -9; at the end the final state's bytes go to --out.

--world N --rank R --init FILE runs rank R of N (torch.distributed,
gloo, rendezvous in FILE; with --torch): the model under
DistributedDataParallel, the loader on the rank's shard.

--kill PHASE@ITER kills the process with SIGKILL at iteration ITER:
PHASE "filling" in the middle of a snapshot, "snapshot" just after one is
committed (its copy and write running), "between" after cf.step() of an
iteration that takes no snapshot. A kill whose iteration this run does not
reach (it resumed past it) is ignored. --sleep S waits S seconds per
iteration (an emulated GPU), so that a parent can kill at random times.
"""

import argparse
import os
import random
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("top_srcdir") or
                                os.path.join(HERE, "..", ".."), "python"))

import numpy as np  # noqa: E402

import coordl  # noqa: E402


def parse(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--ckpt", help="checkpoint directory (default: "
                   "$SYNERGY_CKPT_DIR, the job's under Synergy)")
    p.add_argument("--iters", type=int, required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--torch", action="store_true")
    p.add_argument("--interval", type=int)
    p.add_argument("--bound", type=float, default=0.035)
    p.add_argument("--kill", action="append", default=[])
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--world", type=int, default=1,
                   help="ranks of a torch.distributed (gloo) job (with --torch)")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--init", help="the ranks' rendezvous file (file://)")
    p.add_argument("--starts", help="append 'RESUMED LAST' per start: the "
                   "iteration it resumed from and the last one the log had")
    p.add_argument("--events", help="append 'start R LAST' at each start "
                   "and 'persisted P' when a checkpoint of iteration P is "
                   "seen on storage (one write(2) each: kill -9 keeps them)")
    p.add_argument("--verbose", action="store_true",
                   help="CheckFreq's lines on stderr (resume, interval)")
    return p.parse_args(argv)


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def numpy_job(args, loader):
    rs = np.random.RandomState(0)
    d_in, classes = 3 * 4 * 4, max(loader.num_classes, 2)
    arrays = {"w1": rs.standard_normal((d_in, args.hidden)) * 0.1,
              "w2": rs.standard_normal((args.hidden, classes)) * 0.1}
    arrays["v1"] = np.zeros_like(arrays["w1"])
    arrays["v2"] = np.zeros_like(arrays["w2"])
    extra = {"lr": 0.05}

    def train_step(b):
        x = b.images.reshape(b.n, 3, 4, 4, 4, 4).mean(axis=(3, 5))
        x = x.reshape(b.n, d_in).astype(np.float64)
        h = np.maximum(x @ arrays["w1"], 0)
        mask = np.random.rand(*h.shape) > 0.2          # dropout: numpy RNG
        h = h * mask / 0.8
        z = h @ arrays["w2"]
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(b.n), b.labels % classes] -= 1
        g2 = h.T @ p / b.n
        g1 = x.T @ ((p @ arrays["w2"].T) * mask / 0.8 * (h > 0)) / b.n
        for w, v, g in (("w1", "v1", g1), ("w2", "v2", g2)):
            arrays[v] *= 0.9
            arrays[v] += g
            arrays[w] -= extra["lr"] * arrays[v]
        extra["lr"] *= 0.999 + 0.001 * random.random()  # Python's RNG

    def final():
        return b"".join(arrays[k].tobytes() for k in sorted(arrays)) + \
            repr(extra["lr"]).encode()
    return dict(arrays=arrays, extra=extra), train_step, final, None


def torch_job(args, loader):
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    classes = max(loader.num_classes, 2)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Dropout(0.2), torch.nn.AdaptiveAvgPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32, classes))
    if args.world > 1:
        # Data parallel: gradients averaged over the ranks every step.
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9,
                          weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=7, gamma=0.7)

    def train_step(b):
        x = torch.from_numpy(b.images)
        y = torch.from_numpy(b.labels % classes)
        # Random noise from torch's generator, and jitter from Python's
        # and numpy's.
        x = x + 0.01 * torch.randn_like(x) * float(np.random.rand())
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        for g in opt.param_groups:
            g["weight_decay"] = 1e-4 * (1 + 0.01 * random.random())

    def final():
        out = [t.detach().numpy().tobytes() for t in model.state_dict().values()]
        for st in opt.state_dict()["state"].values():
            out += [t.numpy().tobytes() for t in st.values()
                    if isinstance(t, torch.Tensor)]
        out.append(repr(sched.state_dict()).encode())
        out.append(repr(opt.state_dict()["param_groups"]).encode())
        return b"".join(out)
    return dict(model=model, optimizer=opt, scheduler=sched), train_step, \
        final, opt


def main(argv):
    args = parse(argv)
    kills = {}
    for k in args.kill:
        phase, it = k.split("@")
        kills.setdefault(int(it), set()).add(phase)
    random.seed(1)
    np.random.seed(2)
    if args.world > 1:
        import torch
        torch.distributed.init_process_group(
            "gloo", init_method="file://" + args.init, rank=args.rank,
            world_size=args.world)
    loader = coordl.Loader(args.data, batch_size=4, threads=1, out_size=16,
                           seed=3, cache_bytes=0, output="numpy",
                           rank=args.rank, world_size=args.world)
    job = torch_job if args.torch else numpy_job
    state, train_step, final, _ = job(args, loader)
    cf = coordl.CheckFreq(args.ckpt, loader=loader, interval=args.interval,
                          bound=args.bound, verbose=args.verbose, **state)

    def hook(phase):
        if phase in kills.get(cf.iteration, ()):
            die()
    cf._test_hook = hook
    cf.resume()
    if args.starts:
        last = 0
        if os.path.exists(args.log):
            with open(args.log) as f:
                for line in f:
                    last = int(line.split()[0])
        with open(args.starts, "a") as f:
            f.write("%d %d\n" % (cf.iteration, last))
    logfd = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    evfd = None
    if args.events:
        evfd = os.open(args.events, os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                       0o600)
        last = 0
        with open(args.log) as f:
            for line in f:
                last = int(line.split()[0])
        os.write(evfd, b"start %d %d\n" % (cf.iteration, last))
    persisted = None
    it = cf.iteration
    while it < args.iters:
        for b in loader.batches():
            train_step(b)
            it += 1
            os.write(logfd, ("%d %d %d %s\n" % (
                it, b.epoch, b.seq,
                ",".join(str(int(i)) for i in b.indices))).encode())
            if args.sleep:
                time.sleep(args.sleep)
            cf.step()
            if evfd is not None:
                p = cf.stats()["last_checkpoint"]
                if p is not None and p != persisted:
                    persisted = p
                    os.write(evfd, b"persisted %d\n" % p)
            if "between" in kills.get(it, ()) and cf._last_ckpt != it:
                die()
            if it >= args.iters:
                break
    cf.close()
    loader.close()
    os.close(logfd)
    if args.world > 1:
        sys.modules["torch"].distributed.destroy_process_group()
    with open(args.out + ".tmp", "wb") as f:
        f.write(final())
    os.rename(args.out + ".tmp", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
