#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""pytorch_baseline.py: images/s of the PyTorch DataLoader, or of coordl,
on the same ImageFolder data with the same consumer loop.

--loader torch (default) is the standard torchvision ImageNet training
input pipeline: ImageFolder, RandomResizedCrop(224), RandomHorizontalFlip,
ToTensor, Normalize(ImageNet mean/std), DataLoader(batch_size=64,
shuffle=True, num_workers=cores, persistent_workers=True).
--loader coordl runs the same augmentations in libcoordl through its
Python binding, with threads=cores, no cache, and float32 NCHW torch
tensors (zero-copy torch.from_numpy of the loader's buffers).

DATA may also be an http(s):// URL of an ImageFolder served with its
coordl manifest (coordl-pack --manifest): coordl reads it with its fetch
engine (--io-window as coordl_config_t.io_window), torch with
HTTPImageFolder below, the Dataset a PyTorch user would write: the same
listing, one blocking GET per item over a keep-alive connection per
worker process, decoded with PIL.

Both run --epochs + 1 epochs and time the last --epochs of them: the first,
untimed, starts the workers and warms the page cache, so the timed epochs
measure the steady state a training job sees. --max-batches N ends every
epoch after N batches (for slow configurations). The consumer only receives
each batch (an infinitely fast GPU). Reports images/s (wall clock) and
images per CPU-second (this process's threads plus torch's worker
processes, during the timed epochs), which other load on the machine
disturbs far less. Prints one line of key=value pairs (or JSON with
--json); bench/compare-pytorch.sh runs both interleaved and prints the
table.
"""

import argparse
import http.client
import io
import json
import os
import resource
import sys
import time
import urllib.parse

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data", help="ImageFolder root (root/<class>/<file>.jpg), "
                   "or its http(s):// URL")
    p.add_argument("--loader", choices=("torch", "coordl"), default="torch")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--cores", type=int, default=0,
                   help="workers (torch) or threads (coordl); default: the "
                        "cores in this process's affinity mask")
    p.add_argument("--epochs", type=int, default=1,
                   help="timed epochs after one untimed warm-up epoch")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--io-window", type=int, default=0,
                   help="coordl over a URL: requests in flight (0 auto, "
                        "-1 one per worker)")
    p.add_argument("--max-batches", type=int, default=0,
                   help="end each epoch after this many batches (0: whole)")
    p.add_argument("--json", action="store_true")
    return p.parse_args(argv)


def torch_epochs(args, cores):
    import torch
    import torchvision.datasets as datasets
    import torchvision.transforms as T

    torch.manual_seed(args.seed)
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                    T.ToTensor(), T.Normalize(MEAN, STD)])
    if "://" in args.data:
        ds = http_dataset(args.data, tf)
    else:
        ds = datasets.ImageFolder(args.data, transform=tf)
    dl = torch.utils.data.DataLoader(ds, batch_size=args.batch_size,
                                     shuffle=True, num_workers=cores,
                                     persistent_workers=cores > 0,
                                     drop_last=False)
    for epoch in range(args.epochs + 1):
        it = iter(dl)   # persistent workers: the same processes each epoch
        pids = [w.pid for w in getattr(it, "_workers", [])]
        start, cpu = time.perf_counter(), cpu_seconds(pids)
        n = 0
        for b, (images, labels) in enumerate(it):
            n += images.shape[0]
            if args.max_batches and b + 1 >= args.max_batches:
                break
        yield (epoch, n, time.perf_counter() - start,
               cpu_seconds(pids) - cpu)


def coordl_epochs(args, cores):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "python"))
    import coordl

    with coordl.Loader(args.data, batch_size=args.batch_size, threads=cores,
                       cache_bytes=0, seed=args.seed, layout="nchw_f32",
                       mean=MEAN, std=STD, output="torch",
                       io_window=args.io_window) as ld:
        for epoch in range(args.epochs + 1):
            start, cpu = time.perf_counter(), cpu_seconds([])
            ld.set_epoch(epoch)
            n = 0
            for b, (images, labels) in enumerate(ld):
                n += images.shape[0]
                if args.max_batches and b + 1 >= args.max_batches:
                    break
            yield epoch, n, time.perf_counter() - start, cpu_seconds([]) - cpu


def http_dataset(url, transform):
    """An ImageFolder over HTTP as a PyTorch user would write it: the
    listing from the dataset's manifest (classes and files sorted, as
    torchvision's ImageFolder and coordl do), then one GET per item."""
    import torch
    from PIL import Image

    base = url.rstrip("/")
    u = urllib.parse.urlsplit(base)

    class HTTPImageFolder(torch.utils.data.Dataset):
        def __init__(self):
            self.conn = None
            body = self.get(u.path + "/coordl.manifest").decode()
            lines = body.splitlines()
            if not lines or lines[0] != "coordl-manifest 1":
                raise ValueError("%s/coordl.manifest: not a manifest" % base)
            items = []
            for line in lines[1:]:
                if not line or line.startswith("#"):
                    continue
                name = line.split(" ", 1)[1]
                cls, _, fname = name.partition("/")
                if fname.lower().endswith((".jpg", ".jpeg")):
                    items.append((cls, fname))
            items.sort()
            classes = sorted({c for c, _ in items})
            index = {c: i for i, c in enumerate(classes)}
            self.samples = [("%s/%s/%s" % (u.path, c, urllib.parse.quote(f)),
                             index[c]) for c, f in items]
            self.conn = None  # each worker process opens its own

        def get(self, path):
            for attempt in range(3):
                if self.conn is None:
                    cls = (http.client.HTTPSConnection if u.scheme == "https"
                           else http.client.HTTPConnection)
                    self.conn = cls(u.hostname, u.port, timeout=60)
                try:
                    self.conn.request("GET", path)
                    r = self.conn.getresponse()
                    data = r.read()
                    if r.status != 200:
                        raise OSError("%s: HTTP %d" % (path, r.status))
                    return data
                except (http.client.HTTPException, ConnectionError):
                    self.conn.close()
                    self.conn = None
                    if attempt == 2:
                        raise

        def __len__(self):
            return len(self.samples)

        def __getitem__(self, i):
            path, label = self.samples[i]
            img = Image.open(io.BytesIO(self.get(path))).convert("RGB")
            return transform(img), label

    return HTTPImageFolder()


def cpu_seconds(pids):
    """CPU time of this process (all its threads) plus the live worker
    processes `pids`, read from /proc because a child's rusage is only
    reported once it has exited."""
    s = resource.getrusage(resource.RUSAGE_SELF)
    total = s.ru_utime + s.ru_stime
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            pass
    return total


def main(argv):
    args = parse_args(argv)
    if "://" not in args.data and not os.path.isdir(args.data):
        print("pytorch_baseline: %s: not a directory" % args.data,
              file=sys.stderr)
        return 2
    cores = args.cores or len(os.sched_getaffinity(0))
    run = torch_epochs if args.loader == "torch" else coordl_epochs
    images = 0
    seconds = cpu = 0.0
    for epoch, n, dt, dcpu in run(args, cores):
        if epoch == 0:
            continue
        images += n
        seconds += dt
        cpu += dcpu
    res = {"loader": args.loader, "cores": cores,
           "batch_size": args.batch_size, "epochs": args.epochs,
           "images": images, "seconds": round(seconds, 4),
           "images_per_s": round(images / seconds, 2) if seconds else 0.0,
           "cpu_s": round(cpu, 3),
           "images_per_cpu_s": round(images / cpu, 2) if cpu else 0.0}
    if args.json:
        print(json.dumps(res))
    else:
        print(" ".join("%s=%s" % kv for kv in res.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
