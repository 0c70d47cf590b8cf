# SPDX-License-Identifier: GPL-2.0-or-later
"""The C ABI of libcoordl, mirrored with ctypes.

Every structure here copies include/coordl.h (and coordl_ckpt.h) field by field, in the same
order and with the same C types, because ctypes lays a Structure out the way
the C compiler does only when the declarations agree exactly. The test
python/test/abi.py compares each size and offset with a small C program
compiled against the header, so drift between the two fails loudly.

The library is looked up, first match wins, in:
  1. $COORDL_LIBRARY (a path to libcoordl.so; an error if it does not load),
  2. the build tree: $top_builddir/loader/.libs (what `make check` exports),
     then loader/.libs beside this package when built in the source tree,
  3. the libdir recorded at `make install` (_installed.py),
  4. the dynamic linker's search path (libcoordl.so.0, then libcoordl.so).
"""

import ctypes
import os

from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_float,
                    c_int, c_int32, c_int64, c_size_t, c_uint32, c_uint64,
                    c_void_p)

# Enumerations (enum coordl_source_kind, coordl_layout, coordl_mode).
SOURCE_AUTO = 0
SOURCE_IMAGEFOLDER = 1
SOURCE_FILELIST = 2
SOURCE_SHARDS = 3

LAYOUT_NCHW_F32 = 0
LAYOUT_NHWC_U8 = 1

MODE_TRAIN = 0
MODE_EVAL = 1
MODE_RAW = 2
MODE_SYNTHETIC = 3

CACHE_AUTO = 0
CACHE_JOB = 1
CACHE_NONE = 2

WIREUP_NONE = 0
WIREUP_SOCKADDR = 1
WIREUP_PMIX = 2

# coordl_ckpt.h: enum coordl_ckpt_memory, enum coordl_ckpt_limit.
CKPT_MEM_AUTO = 0
CKPT_MEM_PAGEABLE = 1
CKPT_MEM_PINNED = 2

CKPT_LIMIT_MIN = 0
CKPT_LIMIT_BOUND = 1
CKPT_LIMIT_PIPELINE = 2
CKPT_LIMIT_MAX = 3


class Error(Structure):
    """coordl_error_t: caller-owned text of the last failure."""
    _fields_ = [("text", c_char * 160)]


class Config(Structure):
    """coordl_config_t."""
    _fields_ = [
        ("path", c_char_p),
        ("source", c_int),
        ("batch_size", c_int),
        ("out_size", c_int),
        ("layout", c_int),
        ("mode", c_int),
        ("threads", c_int),
        ("cache_bytes", c_int64),
        ("cache_name", c_char_p),
        ("seed", c_uint64),
        ("shuffle", c_int),
        ("rank", c_int),
        ("world_size", c_int),
        ("drop_last", c_int),
        ("prefetch", c_int),
        ("scale_min", c_float),
        ("scale_max", c_float),
        ("ratio_min", c_float),
        ("ratio_max", c_float),
        ("flip_prob", c_float),
        ("mean", c_float * 3),
        ("std", c_float * 3),
        ("pin_memory", c_int),
        ("cache_use", c_int),
        ("io_window", c_int),
        ("io_deadline_ms", c_int),
        ("max_item_bytes", c_int64),
    ]


class Batch(Structure):
    """coordl_batch_t."""
    _fields_ = [
        ("data", c_void_p),
        ("labels", POINTER(c_int32)),
        ("indices", POINTER(c_uint64)),
        ("n", c_int),
        ("data_bytes", c_size_t),
        ("epoch", c_uint64),
        ("seq", c_uint64),
        ("replaced", c_int),
        ("device_data", c_void_p),
        ("readonly", c_int),
    ]


class State(Structure):
    """coordl_state_t."""
    _fields_ = [
        ("seed", c_uint64),
        ("epoch", c_uint64),
        ("position", c_uint64),
        ("rank", c_uint32),
        ("world_size", c_uint32),
    ]


class Stats(Structure):
    """coordl_stats_t."""
    _fields_ = [
        ("epoch", c_uint64),
        ("samples", c_uint64),
        ("batches", c_uint64),
        ("epoch_wall", c_double),
        ("stall", c_double),
        ("prep_time", c_double),
        ("fetch_time", c_double),
        ("storage_bytes", c_uint64),
        ("cache_hits", c_uint64),
        ("cache_misses", c_uint64),
        ("cache_bytes_used", c_uint64),
        ("cache_bytes_limit", c_uint64),
        ("corrupt", c_uint64),
        ("threads", c_int),
        ("images_per_s", c_double),
        ("images_per_s_per_core", c_double),
        ("total_samples", c_uint64),
        ("total_corrupt", c_uint64),
        ("total_stall", c_double),
        ("total_wall", c_double),
        ("cache_items", c_uint64),
        ("cache_shrinks", c_uint64),
        ("cache_grows", c_uint64),
        ("cache_shared", c_int),
        ("requests", c_uint64),
        ("retries", c_uint64),
        ("req_latency_p50", c_double),
        ("req_latency_p90", c_double),
        ("req_latency_p99", c_double),
        ("io_window", c_int),
        ("io_inflight", c_int),
        ("io_bytes_in_flight", c_uint64),
        ("storage_reads", c_uint64),
        ("peer_nodes", c_int),
        ("peer_node_index", c_int),
        ("peers_up", c_int),
        ("peer_hits", c_uint64),
        ("peer_bytes", c_uint64),
        ("peer_absent", c_uint64),
        ("peer_fallbacks", c_uint64),
        ("peer_bad", c_uint64),
        ("peer_stalls", c_uint64),
        ("batches_prepared", c_double),
        ("batches_received", c_double),
        ("group_members", c_int),
        ("group_shared", c_int),
        ("group_batches", c_uint64),
        ("group_solo", c_uint64),
        ("group_redone", c_uint64),
        ("group_reaped", c_uint64),
        ("peer_wireup", c_int),
    ]


class CkptConfig(Structure):
    """coordl_ckpt_config_t (coordl_ckpt.h)."""
    _fields_ = [
        ("dir", c_char_p),
        ("name", c_char_p),
        ("keep", c_int),
        ("memory", c_int),
        ("durable", c_int),
    ]


class CkptStats(Structure):
    """coordl_ckpt_stats_t."""
    _fields_ = [
        ("committed", c_uint64),
        ("persisted", c_uint64),
        ("failed", c_uint64),
        ("superseded", c_uint64),
        ("last_iteration", c_uint64),
        ("last_sequence", c_uint64),
        ("last_bytes", c_uint64),
        ("last_copy_s", c_double),
        ("last_persist_s", c_double),
        ("last_latency_s", c_double),
        ("total_copy_s", c_double),
        ("total_persist_s", c_double),
        ("total_wait_s", c_double),
        ("in_flight", c_int),
        ("pinned", c_int),
        ("buffer_bytes", c_uint64),
        ("last_errno", c_int),
        ("last_error", c_char * 160),
    ]


class CkptScan(Structure):
    """coordl_ckpt_scan_t."""
    _fields_ = [
        ("files", c_int),
        ("skipped", c_int),
        ("why", c_char * 224),
    ]


class CkptCosts(Structure):
    """coordl_ckpt_costs_t."""
    _fields_ = [
        ("iter_s", c_double),
        ("overhead_s", c_double),
        ("snapshot_s", c_double),
        ("persist_s", c_double),
    ]


class CkptChoice(Structure):
    """coordl_ckpt_choice_t."""
    _fields_ = [
        ("interval", c_uint64),
        ("overhead", c_double),
        ("limit", c_int),
        ("bound_met", c_int),
    ]


# Function prototypes: (name, restype, argtypes). Declaring them all lets
# ctypes convert and check every argument instead of guessing int.
_LOADER_P = c_void_p
_PROTOTYPES = [
    ("coordl_config_init", None, [POINTER(Config)]),
    ("coordl_create", _LOADER_P, [POINTER(Config), POINTER(Error)]),
    ("coordl_destroy", None, [_LOADER_P]),
    ("coordl_num_samples", c_size_t, [_LOADER_P]),
    ("coordl_num_batches", c_size_t, [_LOADER_P]),
    ("coordl_dataset_items", c_size_t, [_LOADER_P]),
    ("coordl_dataset_bytes", c_uint64, [_LOADER_P]),
    ("coordl_num_classes", c_int, [_LOADER_P]),
    ("coordl_config", POINTER(Config), [_LOADER_P]),
    ("coordl_set_epoch", c_int, [_LOADER_P, c_uint64, POINTER(Error)]),
    ("coordl_next", c_int, [_LOADER_P, POINTER(POINTER(Batch)),
                            POINTER(Error)]),
    ("coordl_release", None, [_LOADER_P, POINTER(Batch)]),
    ("coordl_set_threads", c_int, [_LOADER_P, c_int, POINTER(Error)]),
    ("coordl_get_threads", c_int, [_LOADER_P]),
    ("coordl_get_state", c_int, [_LOADER_P, POINTER(State)]),
    ("coordl_set_state", c_int, [_LOADER_P, POINTER(State), POINTER(Error)]),
    ("coordl_get_stats", c_int, [_LOADER_P, POINTER(Stats)]),
    ("coordl_last_corrupt", c_char_p, [_LOADER_P]),
    ("coordl_cache_note", c_char_p, [_LOADER_P]),
    ("coordl_group_note", c_char_p, [_LOADER_P]),
    ("coordl_to_device", c_int, [_LOADER_P, POINTER(Batch), POINTER(Error)]),
    ("coordl_version", c_char_p, []),
    # coordl_ckpt.h
    ("coordl_ckpt_config_init", None, [POINTER(CkptConfig)]),
    ("coordl_ckpt_open", c_void_p, [POINTER(CkptConfig), POINTER(Error)]),
    ("coordl_ckpt_close", None, [c_void_p]),
    ("coordl_ckpt_section_space", c_uint64, [c_uint64]),
    ("coordl_ckpt_reserve", c_int, [c_void_p, c_uint64, POINTER(Error)]),
    ("coordl_ckpt_begin", c_void_p, [c_void_p, c_uint64, c_uint64,
                                     POINTER(Error)]),
    ("coordl_ckpt_add", c_void_p, [c_void_p, c_char_p, c_uint64,
                                   POINTER(Error)]),
    ("coordl_ckpt_copy_later", c_int, [c_void_p, c_void_p, c_void_p, c_uint64,
                                       POINTER(Error)]),
    ("coordl_ckpt_commit", c_int, [c_void_p, POINTER(Error)]),
    ("coordl_ckpt_abort", None, [c_void_p]),
    ("coordl_ckpt_wait_copied", c_double, [c_void_p]),
    ("coordl_ckpt_flush", c_int, [c_void_p, c_double, POINTER(Error)]),
    ("coordl_ckpt_get_stats", c_int, [c_void_p, POINTER(CkptStats)]),
    ("coordl_ckpt_load_latest", c_void_p, [c_char_p, c_char_p,
                                           POINTER(CkptScan), POINTER(Error)]),
    ("coordl_ckpt_load_file", c_void_p, [c_char_p, POINTER(Error)]),
    ("coordl_ckpt_image_iteration", c_uint64, [c_void_p]),
    ("coordl_ckpt_image_sequence", c_uint64, [c_void_p]),
    ("coordl_ckpt_image_bytes", c_uint64, [c_void_p]),
    ("coordl_ckpt_image_sections", c_int, [c_void_p]),
    ("coordl_ckpt_image_section_name", c_char_p, [c_void_p, c_int]),
    ("coordl_ckpt_image_section", c_void_p, [c_void_p, c_char_p,
                                             POINTER(c_uint64)]),
    ("coordl_ckpt_image_free", None, [c_void_p]),
    ("coordl_ckpt_choose", c_int, [POINTER(CkptCosts), c_double, c_uint64,
                                   c_uint64, POINTER(CkptChoice),
                                   POINTER(Error)]),
]

_lib = None
_lib_path = None


def _candidates():
    """Paths to try, in the order documented at the top of this file."""
    here = os.path.dirname(os.path.abspath(__file__))
    builddir = os.environ.get("top_builddir")
    if builddir:
        yield os.path.join(builddir, "loader", ".libs", "libcoordl.so")
    yield os.path.join(here, "..", "..", "loader", ".libs", "libcoordl.so")
    try:
        from . import _installed
        yield os.path.join(_installed.LIBDIR, "libcoordl.so.0")
    except ImportError:
        pass
    yield "libcoordl.so.0"
    yield "libcoordl.so"


def _bind(lib):
    for name, restype, argtypes in _PROTOTYPES:
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


def library_path():
    """The path of the loaded libcoordl (loading it if needed)."""
    load()
    return _lib_path


def load():
    """Load and bind libcoordl once; raise OSError naming every path tried."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    explicit = os.environ.get("COORDL_LIBRARY")
    if explicit:
        # An explicit choice that fails must not fall back silently to a
        # different build: that would test or benchmark the wrong library.
        try:
            lib = ctypes.CDLL(explicit, use_errno=True)
        except OSError as e:
            raise OSError("COORDL_LIBRARY=%s: cannot load: %s"
                          % (explicit, e)) from None
        _lib, _lib_path = _bind(lib), explicit
        return _lib
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            lib = ctypes.CDLL(path, use_errno=True)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        _lib, _lib_path = _bind(lib), os.path.normpath(path)
        return _lib
    raise OSError("libcoordl not found; set COORDL_LIBRARY to its path. "
                  "Tried: " + ", ".join(tried))
