# SPDX-License-Identifier: GPL-2.0-or-later
"""CheckFreq: frequent, cheap checkpoints and exact resume for training loops.

A training script adds three lines:

    cf = coordl.CheckFreq(model=model, optimizer=opt, loader=loader,
                          scheduler=sched)       # dir: $SYNERGY_CKPT_DIR
    cf.resume()                                  # at start: restore all
    ...
        opt.step()
        cf.step()                                # once per iteration

and, after a preemption, a requeue, a time limit or a crash, the job goes
on from its last checkpoint with bit-identical state: the model's and the
optimizer's tensors, the LR scheduler, the loader's position (the same
samples in the same order, from the iteration after the checkpoint), the
Python, numpy and torch random generators, and the step counter.

How (Mohan et al., "CheckFreq", FAST'21; libcoordl's coordl_ckpt.h):
 - two phases: cf.step() snapshots the state into host memory (the
   parameters and the optimizer's state are copied by a thread of the
   library while the next iteration's forward and backward pass run; the
   next optimizer.step() waits for that copy), and a second thread
   persists the snapshot to a file in the background: temporary name,
   fsync, rename, directory fsync; the last `keep` are kept. A full disk or
   an I/O error gives a CheckpointWarning; training goes on and the
   previous checkpoint stays.
 - the interval between checkpoints is chosen online: the first iterations
   are timed, one checkpoint is taken to measure what a checkpoint costs
   (the time it adds to training, the snapshot and write times), and
   coordl_ckpt_choose() picks the smallest interval that keeps the
   overhead within `bound` (3.5% by default) and writes one checkpoint
   before the next starts. Every checkpoint is measured again and the
   interval follows when the costs change (interference, a slower disk).
 - SIGTERM (what Slurm sends on preemption, scancel and at the time limit,
   KillWait seconds before SIGKILL; GraceTime on preemption) sets a flag;
   the next cf.step() takes a last checkpoint synchronously, waits until it
   is on storage, and exits with status 143 (128 + SIGTERM), so that Slurm
   does not record the job as COMPLETED. Signals named in
   $SYNERGY_CKPT_SIGNALS (e.g. "USR1", for a job that asked Slurm for
   --signal=USR1@120) do the same.

What changes state must do so between cf.step() and optimizer.step():
the parameters and the optimizer's state are read in the background after
cf.step() until the next optimizer.step() (which CheckFreq wraps to wait);
anything else that writes them in between must call cf.wait() first.
Module buffers (batch norm statistics) change in forward passes and are
copied at once.

numpy models (no torch) pass arrays={"name": ndarray, ...}: they are copied
at cf.step() and restored in place. Other state goes in extra= (a dict, or
an object with state_dict() / load_state_dict()).
"""

import ctypes
import os
import pickle
import random
import signal
import statistics
import sys
import threading
import time
import warnings
from collections import deque

import numpy as np

from . import _abi
from .loader import CoordlError, Loader

# The environment the SPANK plugin sets (synergy_env.h).
ENV_CKPT_DIR = "SYNERGY_CKPT_DIR"
ENV_CKPT_SIGNALS = "SYNERGY_CKPT_SIGNALS"

FORMAT = 1
DEFAULT_BOUND = 0.035
_ALIGN = 64


class CheckpointWarning(RuntimeWarning):
    """A checkpoint could not be written (full disk, I/O error); the
    previous one stays and training goes on."""


def _raise(call, err):
    e = ctypes.get_errno() or 5
    text = err.text.decode("utf-8", "replace") if err is not None else ""
    raise CoordlError(e, text or "%s: %s" % (call, os.strerror(e)))


def _log_stderr(msg):
    print("checkfreq: %s" % msg, file=sys.stderr, flush=True)


class _Ref:
    """Stands for the i-th tensor of a checkpoint in the pickled skeleton."""
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __reduce__(self):
        return (_Ref, (self.i,))


def _torch():
    return sys.modules.get("torch")


def _map(obj, fn):
    """obj with fn applied to every leaf inside dicts, lists and tuples. A
    dict subclass keeps its type and attributes (a module's state_dict
    carries its version in _metadata)."""
    if isinstance(obj, dict):
        if type(obj) is dict:
            return {k: _map(v, fn) for k, v in obj.items()}
        new = type(obj)()
        for k, v in obj.items():
            new[k] = _map(v, fn)
        new.__dict__.update(getattr(obj, "__dict__", {}))
        return new
    if isinstance(obj, list):
        return [_map(v, fn) for v in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(_map(v, fn) for v in obj)
    return fn(obj)


def _flatten(obj, out):
    """A copy of obj with every tensor and ndarray replaced by a _Ref into
    out (a list the tensors are appended to)."""
    torch = _torch()

    def leaf(v):
        if isinstance(v, np.ndarray) or (torch is not None and
                                         isinstance(v, torch.Tensor)):
            out.append(v)
            return _Ref(len(out) - 1)
        return v
    return _map(obj, leaf)


def _unflatten(obj, tensors):
    return _map(obj, lambda v: tensors[v.i] if isinstance(v, _Ref) else v)


def _space(n):
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


class Image:
    """A verified checkpoint read back (coordl_ckpt_load_latest): its
    iteration, sequence, file size and sections (memoryviews valid until
    close())."""

    def __init__(self, lib, ptr):
        self._lib = lib
        self._ptr = ptr
        self.iteration = lib.coordl_ckpt_image_iteration(ptr)
        self.sequence = lib.coordl_ckpt_image_sequence(ptr)
        self.bytes = lib.coordl_ckpt_image_bytes(ptr)
        self.names = [lib.coordl_ckpt_image_section_name(ptr, i).decode()
                      for i in range(lib.coordl_ckpt_image_sections(ptr))]

    def section(self, name):
        """The bytes of section `name` as a memoryview (no copy; valid until
        close()), or None."""
        n = ctypes.c_uint64()
        p = self._lib.coordl_ckpt_image_section(self._ptr, name.encode(),
                                                ctypes.byref(n))
        if not p:
            return None
        if n.value == 0:
            return memoryview(b"")
        return memoryview((ctypes.c_ubyte * n.value).from_address(p)).cast("B")

    def close(self):
        if self._ptr:
            self._lib.coordl_ckpt_image_free(self._ptr)
            self._ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def load_latest(directory, name="ckpt"):
    """The newest complete, verified checkpoint `name` in directory as an
    Image, or None when there is none; also returns the scan: (image,
    {"files": n, "skipped": n, "why": text})."""
    lib = _abi.load()
    scan = _abi.CkptScan()
    err = _abi.Error()
    p = lib.coordl_ckpt_load_latest(os.fsencode(directory), name.encode(),
                                    ctypes.byref(scan), ctypes.byref(err))
    info = {"files": scan.files, "skipped": scan.skipped,
            "why": scan.why.decode("utf-8", "replace")}
    if not p:
        e = ctypes.get_errno()
        if e == 2:  # ENOENT: no usable checkpoint
            return None, info
        _raise("coordl_ckpt_load_latest", err)
    return Image(lib, p), info


def choose_interval(iter_s, overhead_s, snapshot_s, persist_s,
                    bound=DEFAULT_BOUND, k_min=1, k_max=100000):
    """coordl_ckpt_choose(): the smallest interval k in [k_min, k_max] with
    overhead_s / (k iter_s) <= bound and k iter_s >= snapshot_s +
    persist_s. Returns a dict: interval, overhead, limit ("min", "bound",
    "pipeline", "max"), bound_met."""
    lib = _abi.load()
    c = _abi.CkptCosts(iter_s, overhead_s, snapshot_s, persist_s)
    out = _abi.CkptChoice()
    err = _abi.Error()
    if lib.coordl_ckpt_choose(ctypes.byref(c), bound, k_min, k_max,
                              ctypes.byref(out), ctypes.byref(err)) != 0:
        _raise("coordl_ckpt_choose", err)
    return {"interval": out.interval, "overhead": out.overhead,
            "limit": ("min", "bound", "pipeline", "max")[out.limit],
            "bound_met": bool(out.bound_met)}


class _Engine:
    """A coordl_ckpt_t: the writer of one directory and name."""

    def __init__(self, directory, name, keep, durable, memory):
        self.lib = _abi.load()
        cfg = _abi.CkptConfig()
        self.lib.coordl_ckpt_config_init(ctypes.byref(cfg))
        self._keep = [os.fsencode(directory), name.encode()]
        cfg.dir, cfg.name = self._keep
        cfg.keep = keep
        cfg.durable = 1 if durable else 0
        cfg.memory = {"auto": _abi.CKPT_MEM_AUTO,
                      "pageable": _abi.CKPT_MEM_PAGEABLE,
                      "pinned": _abi.CKPT_MEM_PINNED}[memory]
        err = _abi.Error()
        self.ptr = self.lib.coordl_ckpt_open(ctypes.byref(cfg),
                                             ctypes.byref(err))
        if not self.ptr:
            _raise("coordl_ckpt_open", err)

    def stats(self):
        st = _abi.CkptStats()
        self.lib.coordl_ckpt_get_stats(self.ptr, ctypes.byref(st))
        d = {k: getattr(st, k) for k, _ in _abi.CkptStats._fields_}
        d["last_error"] = st.last_error.decode("utf-8", "replace")
        return d

    def close(self):
        if self.ptr:
            self.lib.coordl_ckpt_close(self.ptr)
            self.ptr = None


class _Costs:
    """Online measurement of what iterations and checkpoints cost.

    An iteration's time is the wall time from one cf.step() to the next.
    The baseline is the mean of the recent iterations no checkpoint
    touched: the mean, not the median, because the overhead is a sum of
    differences from it, and iteration times skew high (a stall, the
    epoch's first batch), so a median baseline would count that skew as
    the checkpoint's cost in every iteration its write overlaps. A
    checkpoint taken at iteration s touches the iterations from s + 1
    (which holds the time cf.step() was blocked snapshotting, and the wait
    of the next optimizer step for the copy) until the one in which its
    write finished, and as many again after it (the write's aftermath:
    page cache, writeback, a loader that fell behind); what they took
    beyond the baseline, together, is the checkpoint's overhead. Costs are
    smoothed over checkpoints (exponentially, half weight to the newest)."""

    def __init__(self, window=100):
        self.clean = deque(maxlen=window)
        self.iter_s = None
        self.overhead_s = None
        self.snapshot_s = None
        self.persist_s = None
        self.samples = 0   # checkpoints measured

    def baseline(self):
        return statistics.fmean(self.clean) if self.clean else None

    def add(self, overhead_s, snapshot_s, persist_s):
        def ema(old, new):
            return new if old is None else 0.5 * old + 0.5 * new
        self.overhead_s = ema(self.overhead_s, max(0.0, overhead_s))
        self.snapshot_s = ema(self.snapshot_s, max(0.0, snapshot_s))
        self.persist_s = ema(self.persist_s, max(0.0, persist_s))
        self.samples += 1

    def ready(self):
        return self.samples > 0 and bool(self.clean)


def _torch_dtype_name(t):
    return str(t.dtype)  # "torch.float32"


class CheckFreq:
    """Checkpoint a training loop often and cheaply; resume it exactly.

    CheckFreq(dir=None, model=None, optimizer=None, loader=None,
              scheduler=None, arrays=None, extra=None, bound=0.035,
              interval=None, keep=2, name=None, overlap=True,
              durable=True, memory="auto", signals=None, exit_code=143,
              warmup=3, profile_iterations=5, k_max=100000, verbose=True)

    dir: the checkpoint directory (default $SYNERGY_CKPT_DIR, which the
      Synergy SPANK plugin sets per job; created when missing).
    model, optimizer, scheduler: torch objects (state_dict() /
      load_state_dict()); loader: a coordl.Loader (its exact position) or
      any object with state_dict() / load_state_dict(); arrays: a dict of
      numpy arrays restored in place; extra: a dict (updated in place) or
      an object with state_dict() / load_state_dict().
    bound: the overhead allowed (fraction of training time); interval: a
      fixed interval in iterations instead of the chosen one.
    keep: checkpoints kept; name: file prefix (default "ckpt", or
      "rank<R>" when $RANK or a multi-task $SLURM_PROCID says so).
    overlap: copy parameters and optimizer state in the background
      (False: at cf.step()). durable: fsync files and the directory.
    memory: "auto", "pinned" or "pageable" snapshot buffers.
    signals: the signals that end the job with a last checkpoint (default
      SIGTERM and those in $SYNERGY_CKPT_SIGNALS); installed when created
      in the main thread. exit_code: the status it exits with then (None:
      cf.step() returns True and the caller ends the loop).
    Several ranks (torch.distributed initialized with more than one): each
      writes its own files (name rank<R>), rank 0 chooses the interval, and
      the ranks agree every step (one small all-reduce) on it and on a
      termination signal, and at resume on the iteration they all have.
    verbose: print what it does (resume, interval, last checkpoint) on
      stderr, one line each. clock: the timer iterations are measured with
      (default time.perf_counter).
    """

    def __init__(self, dir=None, model=None, optimizer=None, loader=None,
                 scheduler=None, arrays=None, extra=None,
                 bound=DEFAULT_BOUND, interval=None, keep=2, name=None,
                 overlap=True, durable=True, memory="auto", signals=None,
                 exit_code=143, warmup=3, profile_iterations=5,
                 k_max=100000, verbose=True, clock=None):
        directory = dir if dir is not None else os.environ.get(ENV_CKPT_DIR)
        if not directory:
            raise ValueError("CheckFreq: no checkpoint directory: pass dir= "
                             "or run under Synergy (%s)" % ENV_CKPT_DIR)
        if not (0 < bound <= 1):
            raise ValueError("CheckFreq: bound=%r: expected 0 < bound <= 1"
                             % (bound,))
        if interval is not None and int(interval) < 1:
            raise ValueError("CheckFreq: interval=%r: expected >= 1"
                             % (interval,))
        if memory not in ("auto", "pinned", "pageable"):
            raise ValueError("CheckFreq: memory=%r: expected 'auto', "
                             "'pinned' or 'pageable'" % (memory,))
        if arrays is not None:
            for k, a in arrays.items():
                if not isinstance(a, np.ndarray):
                    raise TypeError("CheckFreq: arrays[%r] is not a numpy "
                                    "array" % (k,))
        self.dir = os.fspath(directory)
        self._dist = self._distributed()
        self.name = name or ("rank%d" % self._dist[0] if self._dist
                             else self._default_name())
        self.model, self.optimizer, self.loader = model, optimizer, loader
        self.scheduler, self.arrays, self.extra = scheduler, arrays, extra
        self.bound = float(bound)
        self.fixed_interval = int(interval) if interval is not None else None
        self.overlap = bool(overlap)
        self.exit_code = exit_code
        self.warmup = max(0, int(warmup))
        self.profile_iterations = max(1, int(profile_iterations))
        self.k_max = int(k_max)
        if not verbose:
            self._log = lambda msg: None
        elif self._dist:
            self._log = lambda msg, r=self._dist[0]: _log_stderr(
                "[rank %d] %s" % (r, msg))
        else:
            self._log = _log_stderr
        self._clock = clock or time.perf_counter
        self._engine = _Engine(self.dir, self.name, keep, durable, memory)
        self.iteration = 0            # optimizer steps done (cf.step calls)
        self.interval = self.fixed_interval
        self.resumed_from = None
        self.costs = _Costs()
        self._last_ckpt = 0           # iteration of the last snapshot
        self._steps_seen = 0          # cf.step calls in this process
        self._t_prev = None
        self._window = None           # the checkpoint being measured
        self._pending = None          # GPU copies not yet committed
        self._keepalive = []          # sources of background copies
        self._failed_seen = 0
        self._reserved = 0            # bytes both buffers were touched for
        self._interval_changes = 0
        self._logged_k = None
        self.choice = None
        self._signal = None
        self._prev_handlers = {}
        self._probed = False
        self._next_k = None
        if self._dist and keep < 2:
            raise ValueError("CheckFreq: keep=%r: ranks that resume together "
                             "need keep >= 2" % (keep,))
        self._wrap_optimizer()
        self._install_signals(signals)

    # -- setup -------------------------------------------------------------
    @staticmethod
    def _default_name():
        rank = os.environ.get("RANK")
        if rank is None and int(os.environ.get("SLURM_NTASKS", "1") or 1) > 1:
            rank = os.environ.get("SLURM_PROCID")
        if rank is not None and rank.isdigit():
            return "rank%d" % int(rank)
        return "ckpt"

    @staticmethod
    def _distributed():
        """(rank, world size, device of the collectives' tensors) when
        torch.distributed runs with more than one rank, else None."""
        torch = _torch()
        if torch is None or not torch.distributed.is_available() or \
                not torch.distributed.is_initialized():
            return None
        world = torch.distributed.get_world_size()
        if world < 2:
            return None
        dev = "cpu"
        if torch.distributed.get_backend() == "nccl":
            dev = "cuda:%d" % torch.cuda.current_device()
        return (torch.distributed.get_rank(), world, dev)

    def _agree(self):
        """Ranks of one job act together: every step they all-reduce
        (MAX) whether any received a termination signal and the interval
        rank 0 chose, so that they snapshot at the same iterations and take
        their last checkpoint at the same one. One small collective per
        iteration."""
        torch = _torch()
        rank, _, dev = self._dist
        k = (self._next_k or 0) if rank == 0 else 0
        t = torch.tensor([1 if self._signal else 0, k], dtype=torch.int64,
                         device=dev)
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
        flag, k = int(t[0]), int(t[1])
        if flag and self._signal is None:
            self._signal = (signal.SIGTERM, time.monotonic())
        if k and self.fixed_interval is None:
            self.interval = k

    def _wrap_optimizer(self):
        """Make optimizer.step() wait for background copies first."""
        opt = self.optimizer
        if opt is None or not self.overlap:
            return
        orig = opt.step

        def step(opt_self, *args, **kwargs):
            self._before_update()
            return orig(*args, **kwargs)
        # torch's LR schedulers look for this mark of their own wrapper.
        if getattr(orig, "_with_counter", False):
            step._with_counter = True
        import types
        opt.step = types.MethodType(step, opt)

    def _install_signals(self, signals):
        if signals is None:
            signals = [signal.SIGTERM]
            for s in os.environ.get(ENV_CKPT_SIGNALS, "").split(","):
                s = s.strip().upper()
                if not s:
                    continue
                s = s if s.startswith("SIG") else "SIG" + s
                sig = getattr(signal, s, None)
                if isinstance(sig, signal.Signals) and sig not in signals:
                    signals.append(sig)
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in signals:
            self._prev_handlers[sig] = signal.signal(sig, self._on_signal)
            # Restart system calls the signal interrupts: a C++ library in
            # a blocking call (gloo's sockets, a device wait) would
            # otherwise see EINTR and raise, when all the handler does is
            # set a flag.
            signal.siginterrupt(sig, False)

    def _on_signal(self, signum, frame):
        # Only a flag: the state may be half updated when it arrives.
        if self._signal is None:
            self._signal = (signum, time.monotonic())

    # -- the loop ----------------------------------------------------------
    def wait(self):
        """Wait until the background copies of the last snapshot are done:
        call it before changing parameters or optimizer state by other
        means than optimizer.step()."""
        self._before_update()

    def _before_update(self):
        if self._pending is not None:
            torch = _torch()
            # GPU copies: the device waits, not the host.
            torch.cuda.current_stream().wait_event(self._pending["side"])
        elif self._engine.ptr:
            self._engine.lib.coordl_ckpt_wait_copied(self._engine.ptr)
            self._keepalive = []

    def step(self):
        """Call once per iteration, after optimizer.step(). Takes a snapshot
        when one is due. After a termination signal: a last checkpoint,
        then exit (see exit_code). Returns True when the caller should
        stop (only with exit_code=None)."""
        now = self._clock()
        w = None if self._t_prev is None else now - self._t_prev
        self._t_prev = now
        self.iteration += 1
        self._steps_seen += 1
        self._commit_pending()
        self._account(w)
        if self._dist:
            self._agree()
        if self._signal is not None:
            return self._terminate()
        if self._due():
            self._snapshot(background=self.overlap)
        # What cf.step() itself took belongs to the next iteration's time.
        return False

    def _due(self):
        since = self.iteration - self._last_ckpt
        if self.fixed_interval is not None:
            return since >= self.fixed_interval
        if self._dist:
            # Decided only by what every rank shares: its step count and
            # rank 0's interval (_agree), never by its own timing.
            if self.interval is None:
                return not self._probed and \
                    self._steps_seen == self.warmup + 1 + self.profile_iterations
            return since >= self.interval
        # Not while the last checkpoint is written; nor, before the first
        # interval is chosen, while its aftermath is measured.
        if self._window is not None and (self._window["cool"] is None or
                                         self.interval is None):
            return False
        if self.interval is None:
            # Profiling: time warmup + profile_iterations clean iterations,
            # then take the first checkpoint to measure one.
            return (self._steps_seen > self.warmup and
                    len(self.costs.clean) >= self.profile_iterations)
        return since >= self.interval

    def _account(self, w):
        """Fold the last iteration's time into the measurements."""
        st = self._engine.stats()
        if st["failed"] > self._failed_seen:
            self._failed_seen = st["failed"]
            warnings.warn("checkpoint not written: %s (the previous one "
                          "stays)" % st["last_error"], CheckpointWarning,
                          stacklevel=3)
        if w is None or self._steps_seen <= self.warmup + 1:
            return
        win = self._window
        if win is None:
            if st["in_flight"] == 0 and self._pending is None:
                self.costs.clean.append(w)
            return
        win["excess"] += w - (self.costs.baseline() or w)
        win["n"] += 1
        if win["cool"] is None:
            if st["in_flight"] or self._pending is not None:
                return
            # On storage (or failed). What a write leaves behind (the page
            # cache it filled, writeback, the loader's lost ground) slows
            # the next iterations too: they count as the checkpoint's for
            # as long again, and are not taken for the baseline.
            win["cool"] = win["n"]
            win["copy_s"] = st["last_copy_s"]
            win["persist_s"] = st["last_persist_s"]
        if win["n"] < 2 * win["cool"]:
            return
        self._close_window()

    def _close_window(self):
        """The measured checkpoint's costs, into the policy."""
        win, self._window = self._window, None
        if win is None or win["cool"] is None:
            return
        self.costs.add(win["excess"], win["blocked"] + win["copy_s"],
                       win["persist_s"])
        self._rechoose()

    def _rechoose(self):
        base = self.costs.baseline()
        if self.fixed_interval is not None or base is None:
            return
        c = choose_interval(base, self.costs.overhead_s, self.costs.snapshot_s,
                            self.costs.persist_s, self.bound, 1, self.k_max)
        k = c["interval"]
        if k != self.interval and self.interval is not None:
            self._interval_changes += 1
        # Said when it first settles and when it moves by a quarter or
        # more: small moves with the measurement's noise are not news.
        if (not self._dist or self._dist[0] == 0) and \
                (self._logged_k is None or
                 abs(k - self._logged_k) * 4 >= self._logged_k):
            self._logged_k = k
            self._log("interval %d iterations (iteration %.3f s, checkpoint "
                      "adds %.3f s, snapshot %.3f s, write %.3f s: %.2f%% "
                      "overhead%s)" % (k, base, self.costs.overhead_s,
                                       self.costs.snapshot_s,
                                       self.costs.persist_s,
                                       100 * c["overhead"],
                                       "" if c["bound_met"] else
                                       ", above the %.2f%% bound"
                                       % (100 * self.bound)))
        self.choice = c
        if self._dist:
            # Rank 0's choice reaches every rank at the next step.
            self._next_k = k
        else:
            self.interval = k

    # -- snapshots ---------------------------------------------------------
    def _gather(self):
        """The state as (skeleton, rng, loader_bytes, tensors, later): later
        holds the indices of the tensors safe to copy in the background."""
        tensors = []
        skel = {"format": FORMAT, "iteration": self.iteration}
        later_ids = set()
        torch = _torch()
        if self.model is not None:
            skel["model"] = _flatten(self.model.state_dict(), tensors)
            params = {p.data_ptr() for p in self.model.parameters()}
            for i, t in enumerate(tensors):
                if t.data_ptr() in params:
                    later_ids.add(i)
        if self.optimizer is not None:
            n0 = len(tensors)
            skel["optimizer"] = _flatten(self.optimizer.state_dict(), tensors)
            later_ids.update(range(n0, len(tensors)))
        if self.scheduler is not None:
            skel["scheduler"] = _flatten(self.scheduler.state_dict(), tensors)
        if self.arrays is not None:
            skel["arrays"] = {k: _flatten(v, tensors)
                              for k, v in self.arrays.items()}
        if self.extra is not None:
            ex = self.extra.state_dict() if hasattr(self.extra, "state_dict") \
                else dict(self.extra)
            skel["extra"] = _flatten(ex, tensors)
        loader_bytes = None
        if isinstance(self.loader, Loader):
            st = _abi.State()
            if self._engine.lib.coordl_get_state(self.loader._ptr(),
                                                 ctypes.byref(st)) != 0:
                _raise("coordl_get_state", None)
            loader_bytes = bytes(st)
        elif self.loader is not None:
            skel["loader"] = _flatten(self.loader.state_dict(), tensors)
        skel["tuner"] = {"interval": self.interval,
                         "costs": (self.costs.overhead_s,
                                   self.costs.snapshot_s,
                                   self.costs.persist_s),
                         "clean": list(self.costs.clean)}
        rng = {"python": random.getstate(), "numpy": np.random.get_state()}
        if torch is not None:
            rng["torch"] = torch.get_rng_state().numpy().tobytes()
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                rng["cuda"] = [s.numpy().tobytes()
                               for s in torch.cuda.get_rng_state_all()]
        return skel, rng, loader_bytes, tensors, later_ids

    def _snapshot(self, background):
        # A checkpoint due while the last one's aftermath is measured: that
        # measurement ends here.
        self._close_window()
        t0 = self._clock()
        lib, eng = self._engine.lib, self._engine.ptr
        self._before_update()
        skel, rng, loader_bytes, tensors, later = self._gather()
        torch = _torch()
        table, off = [], 0
        for t in tensors:
            if isinstance(t, np.ndarray):
                n = t.nbytes
                table.append(("numpy", t.dtype.str, t.shape, off, n, None))
            else:
                n = t.numel() * t.element_size()
                table.append(("torch", _torch_dtype_name(t), tuple(t.shape),
                              off, n, str(t.device)))
            off += _space(n)
        skel["tensors"] = table
        meta = pickle.dumps(skel, protocol=pickle.HIGHEST_PROTOCOL)
        rngb = pickle.dumps(rng, protocol=pickle.HIGHEST_PROTOCOL)
        sections = [("meta", meta), ("rng", rngb)]
        if loader_bytes is not None:
            sections.append(("loader", loader_bytes))
        total = sum(_space(len(b)) for _, b in sections) + _space(off)
        err = _abi.Error()
        if total > self._reserved:
            # Allocate and touch both buffers once, before the snapshot is
            # timed: page faults are a one-time cost (about 10 us per 4 KiB
            # page on some VMs), not part of what a checkpoint costs.
            t_r = self._clock()
            # Exactly the snapshot's size: Synergy sizes the job's memory
            # for two such buffers (syn_ckpt_mb); a later, larger snapshot
            # grows a buffer when it needs to.
            want = total
            if lib.coordl_ckpt_reserve(eng, want, ctypes.byref(err)) != 0:
                _raise("coordl_ckpt_reserve", err)
            self._reserved = want
            t_r = self._clock() - t_r
            t0 += t_r
            if self._t_prev is not None:  # nor the next iteration's time
                self._t_prev += t_r
            if t_r > 0.1:
                self._log("snapshot buffers: 2 x %.0f MB allocated in %.2f s"
                          % (want / 1e6, t_r))
        snap = lib.coordl_ckpt_begin(eng, self.iteration, total,
                                     ctypes.byref(err))
        if not snap:
            _raise("coordl_ckpt_begin", err)
        gpu = False
        try:
            for nm, b in sections:
                p = lib.coordl_ckpt_add(snap, nm.encode(), len(b),
                                        ctypes.byref(err))
                if not p:
                    _raise("coordl_ckpt_add", err)
                ctypes.memmove(p, b, len(b))
            base = lib.coordl_ckpt_add(snap, b"tensors", off, ctypes.byref(err))
            if not base:
                _raise("coordl_ckpt_add", err)
            self._test_hook("filling")
            keep = []
            side = None
            for i, (t, row) in enumerate(zip(tensors, table)):
                dst, n = base + row[3], row[4]
                if n == 0:
                    continue
                if isinstance(t, np.ndarray):
                    src = np.ascontiguousarray(t)
                    ctypes.memmove(dst, src.ctypes.data, n)
                    continue
                if t.is_cuda:
                    gpu = True
                    side = self._copy_cuda(t, dst, n, background and i in later,
                                           side)
                    continue
                src = t if t.is_contiguous() else t.contiguous()
                if background and i in later and src is t:
                    if lib.coordl_ckpt_copy_later(snap, dst, src.data_ptr(), n,
                                                  ctypes.byref(err)) != 0:
                        _raise("coordl_ckpt_copy_later", err)
                    keep.append(src)
                else:
                    ctypes.memmove(dst, src.data_ptr(), n)
            if gpu:
                ev_main = torch.cuda.Event()
                ev_main.record(torch.cuda.current_stream())
                ev_side = torch.cuda.Event()
                ev_side.record(side if side is not None
                               else torch.cuda.current_stream())
                self._pending = {"snap": snap, "main": ev_main,
                                 "side": ev_side, "t0": t0}
            else:
                if lib.coordl_ckpt_commit(snap, ctypes.byref(err)) != 0:
                    _raise("coordl_ckpt_commit", err)
                self._keepalive = keep
        except BaseException:
            if not gpu or self._pending is None:
                lib.coordl_ckpt_abort(snap)
            raise
        self._last_ckpt = self.iteration
        if self.interval is None:
            self._probed = True
        blocked = self._clock() - t0
        self._window = {"iteration": self.iteration, "excess": 0.0,
                        "blocked": blocked, "n": 0, "cool": None}
        self._test_hook("snapshot")

    def _copy_cuda(self, t, dst, n, later, side):
        """Copy a device tensor into the buffer at dst: on a side stream
        (later) or on the current stream (ordered before the next forward
        pass), asynchronously when the buffer is pinned."""
        torch = _torch()
        view = torch.frombuffer((ctypes.c_ubyte * n).from_address(dst),
                                dtype=torch.uint8)
        view = view.view(t.dtype).view(t.shape)
        src = t.detach()
        if later:
            if side is None:
                side = self._side_stream()
                side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                view.copy_(src, non_blocking=True)
            return side
        view.copy_(src, non_blocking=True)
        return side

    def _side_stream(self):
        if getattr(self, "_side", None) is None:
            self._side = _torch().cuda.Stream()
        return self._side

    def _commit_pending(self):
        """Hand GPU snapshots over once their copies have finished."""
        p = self._pending
        if p is None:
            return
        p["main"].synchronize()
        p["side"].synchronize()
        err = _abi.Error()
        self._pending = None
        if self._engine.lib.coordl_ckpt_commit(p["snap"],
                                               ctypes.byref(err)) != 0:
            _raise("coordl_ckpt_commit", err)

    def _test_hook(self, phase):
        """Tests replace this to act at a phase of a snapshot: "filling"
        (begun, its sections half filled), "snapshot" (committed: the copy
        and the write running)."""

    # -- the end -----------------------------------------------------------
    def checkpoint(self, timeout=None):
        """Take a checkpoint now, synchronously, and wait until it is on
        storage (at most timeout seconds). Raises CoordlError when it could
        not be written."""
        self._commit_pending()
        self._snapshot(background=False)
        self._commit_pending()
        self._window = None
        self._flush(timeout)

    def _flush(self, timeout):
        err = _abi.Error()
        if self._engine.lib.coordl_ckpt_flush(
                self._engine.ptr, -1.0 if timeout is None else float(timeout),
                ctypes.byref(err)) != 0:
            _raise("coordl_ckpt_flush", err)
        self._keepalive = []

    def _terminate(self):
        signum, t_sig = self._signal
        name = signal.Signals(signum).name
        t0 = time.monotonic()
        try:
            self.checkpoint()
            self._log("%s: checkpoint of iteration %d written to %s in "
                      "%.2f s (%.2f s after the signal); exiting %s"
                      % (name, self.iteration, self.dir,
                         time.monotonic() - t0, time.monotonic() - t_sig,
                         self.exit_code if self.exit_code is not None
                         else "the loop"))
        except (CoordlError, OSError) as e:
            self._log("%s: last checkpoint failed (%s); the one of "
                      "iteration %d stays" % (name, e,
                                              self._engine.stats()
                                              ["last_iteration"]))
        if self.exit_code is None:
            return True
        self.close()
        raise SystemExit(self.exit_code)

    def stats(self):
        """What it measured and did, as a dict."""
        st = self._engine.stats()
        return {"iteration": self.iteration, "interval": self.interval,
                "resumed_from": self.resumed_from,
                "iter_s": self.costs.baseline(),
                "overhead_s": self.costs.overhead_s,
                "snapshot_s": self.costs.snapshot_s,
                "persist_s": self.costs.persist_s,
                "interval_changes": self._interval_changes,
                "checkpoints": st["persisted"], "failed": st["failed"],
                "superseded": st["superseded"],
                "last_checkpoint": st["last_iteration"]
                if st["persisted"] else None,
                "engine": st}

    def close(self):
        """Wait for the checkpoints in flight, stop the writer, and put the
        signal handlers back. Safe to call twice."""
        if self._engine.ptr is None:
            return
        try:
            self._commit_pending()
        finally:
            self._engine.close()
            self._keepalive = []
            if threading.current_thread() is threading.main_thread():
                for sig, h in self._prev_handlers.items():
                    signal.signal(sig, h)
            self._prev_handlers = {}

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

    # -- resume ------------------------------------------------------------
    def resume(self):
        """Restore everything from the newest complete checkpoint; returns
        the iteration it was taken at (0 when there is none: a fresh
        start). Call once, before the first iteration. Ranks of a
        torch.distributed job resume from the newest iteration all of them
        have (one may have written a checkpoint the others had not when
        the job was killed)."""
        t0 = time.monotonic()
        img, scan = load_latest(self.dir, self.name)
        skipped = ""
        if scan["skipped"]:
            skipped = "; %d newer skipped: %s" % (scan["skipped"], scan["why"])
        if self._dist:
            img = self._agree_resume(img)
        if img is None:
            self._log("no checkpoint in %s: starting at iteration 0%s"
                      % (self.dir, skipped))
            return 0
        with img:
            self._restore(img)
        self.resumed_from = self.iteration
        self._last_ckpt = self.iteration
        self._log("resumed from iteration %d (%s/%s-%020d.ckpt, %.1f MB, "
                  "%.2f s%s)" % (self.iteration, self.dir, self.name,
                                 img.sequence, img.bytes / 1e6,
                                 time.monotonic() - t0, skipped))
        return self.iteration

    def _agree_resume(self, img):
        """The image of the iteration every rank resumes from: the smallest
        of the ranks' newest (none if a rank has none)."""
        torch = _torch()
        mine = img.iteration if img is not None else 0
        t = torch.tensor([mine if img is not None else -1],
                         dtype=torch.int64, device=self._dist[2])
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MIN)
        want = int(t[0])
        if img is not None and want == mine:
            return img
        if img is not None:
            img.close()
        if want < 0:
            return None
        lib = _abi.load()
        prefix, suffix = self.name + "-", ".ckpt"
        names = sorted((f for f in os.listdir(self.dir)
                        if f.startswith(prefix) and f.endswith(suffix)),
                       reverse=True)
        for f in names:
            err = _abi.Error()
            p = lib.coordl_ckpt_load_file(
                os.fsencode(os.path.join(self.dir, f)), ctypes.byref(err))
            if not p:
                continue
            cand = Image(lib, p)
            if cand.iteration == want:
                return cand
            cand.close()
        raise CoordlError(2, "rank %d has no checkpoint of iteration %d, which "
                          "the other ranks resume from (in %s)"
                          % (self._dist[0], want, self.dir))

    def _restore(self, img):
        meta = img.section("meta")
        if meta is None:
            raise CoordlError(22, "checkpoint %d in %s has no meta section"
                              % (img.sequence, self.dir))
        skel = pickle.loads(meta)
        if skel.get("format") != FORMAT:
            raise CoordlError(22, "checkpoint format %r; this binding reads "
                              "%d" % (skel.get("format"), FORMAT))
        data = img.section("tensors")
        # The model, the optimizer and the arrays copy what they are given
        # (load_state_dict, np.copyto): their tensors can be views of the
        # image, which saves a copy of the whole state. Whatever else keeps
        # a tensor (a scheduler, extra state) gets its own copy, since the
        # image goes once restored.
        viewed = set()
        for part in ("model", "optimizer", "arrays"):
            _map(skel.get(part), lambda v: viewed.add(v.i)
                 if isinstance(v, _Ref) else None)
        tensors = [self._rebuild(row, data, i not in viewed)
                   for i, row in enumerate(skel["tensors"])]
        if self.model is not None:
            self.model.load_state_dict(_unflatten(skel["model"], tensors))
        if self.optimizer is not None:
            self.optimizer.load_state_dict(_unflatten(skel["optimizer"],
                                                      tensors))
        if self.scheduler is not None:
            self.scheduler.load_state_dict(_unflatten(skel["scheduler"],
                                                      tensors))
        if self.arrays is not None:
            saved = skel.get("arrays", {})
            for k, a in self.arrays.items():
                if k not in saved:
                    raise KeyError("checkpoint has no array %r" % (k,))
                v = _unflatten(saved[k], tensors)
                if v.shape != a.shape or v.dtype != a.dtype:
                    raise ValueError("array %r: checkpoint has %s %s, the "
                                     "program %s %s" % (k, v.dtype, v.shape,
                                                        a.dtype, a.shape))
                np.copyto(a, v)
        if self.extra is not None:
            ex = _unflatten(skel.get("extra", {}), tensors)
            if hasattr(self.extra, "load_state_dict"):
                self.extra.load_state_dict(ex)
            else:
                self.extra.clear()
                self.extra.update(ex)
        lb = img.section("loader")
        if isinstance(self.loader, Loader):
            if lb is None:
                raise CoordlError(22, "checkpoint has no loader position")
            st = _abi.State.from_buffer_copy(lb)
            self.loader.load_state_dict({k: getattr(st, k) for k, _ in
                                         _abi.State._fields_})
        elif self.loader is not None:
            self.loader.load_state_dict(_unflatten(skel["loader"], tensors))
        rng = pickle.loads(img.section("rng"))
        random.setstate(rng["python"])
        np.random.set_state(rng["numpy"])
        torch = _torch()
        if torch is not None and "torch" in rng:
            torch.set_rng_state(torch.frombuffer(bytearray(rng["torch"]),
                                                 dtype=torch.uint8))
            if "cuda" in rng and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(
                    [torch.frombuffer(bytearray(s), dtype=torch.uint8)
                     for s in rng["cuda"]])
        tuner = skel.get("tuner", {})
        if self.fixed_interval is None and tuner.get("interval"):
            # Start from what the job measured before; re-measured at the
            # next checkpoint.
            self.interval = tuner["interval"]
            o, s, p = tuner.get("costs", (None, None, None))
            if o is not None:
                self.costs.add(o, s, p)
                self.costs.samples = 1
            self.costs.clean.extend(tuner.get("clean", []))
        self.iteration = skel["iteration"]

    @staticmethod
    def _rebuild(row, data, copy):
        kind, dtype, shape, off, n, device = row
        if kind == "numpy":
            a = np.frombuffer(data, dtype=np.dtype(dtype), count=n //
                              max(1, np.dtype(dtype).itemsize), offset=off)
            a = a.reshape(shape)
            return a.copy() if copy else a
        torch = _torch()
        if torch is None:
            import torch  # noqa: F401 - a checkpoint of torch tensors
            torch = sys.modules["torch"]
        dt = getattr(torch, dtype.split(".", 1)[1])
        if n == 0:
            t = torch.empty(shape, dtype=dt)
        else:
            t = torch.frombuffer(data, dtype=dt,
                                 count=n // torch.empty((), dtype=dt)
                                 .element_size(), offset=off)
            t = t.reshape(shape)
            if copy and not (device and device != "cpu"):
                t = t.clone()
        return t.to(device) if device and device != "cpu" else t
