# SPDX-License-Identifier: GPL-2.0-or-later
"""abi.py: the ctypes mirror of coordl.h and coordl_ckpt.h matches the C
compiler's layout.

Runs python/test/abi-layout (built by `make check` from the header alone)
and checks every struct size, field offset and enum value it prints against
python/coordl/_abi.py. Needs neither numpy nor the built library.
"""

import ctypes
import os
import subprocess

import taputil
from taputil import diag, done_testing, is_, ok, skip_all

prog = os.path.join(taputil.BUILDDIR, "python", "test", "abi-layout")
if not os.access(prog, os.X_OK):
    skip_all("python/test/abi-layout is not built (%s)" % prog)

from coordl import _abi  # noqa: E402 (taputil sets sys.path)

STRUCTS = {
    "coordl_error_t": _abi.Error,
    "coordl_config_t": _abi.Config,
    "coordl_batch_t": _abi.Batch,
    "coordl_state_t": _abi.State,
    "coordl_stats_t": _abi.Stats,
    "coordl_ckpt_config_t": _abi.CkptConfig,
    "coordl_ckpt_stats_t": _abi.CkptStats,
    "coordl_ckpt_scan_t": _abi.CkptScan,
    "coordl_ckpt_costs_t": _abi.CkptCosts,
    "coordl_ckpt_choice_t": _abi.CkptChoice,
}

out = subprocess.run([prog], stdout=subprocess.PIPE, check=True,
                     text=True).stdout
c_side = {}
for line in out.splitlines():
    key, value = line.split()
    c_side[key] = value

# Every struct: the size, then each field's offset, and no field missing
# on either side.
for cname, pystruct in STRUCTS.items():
    is_(ctypes.sizeof(pystruct), int(c_side[cname]),
        "sizeof(%s)" % cname)
    c_fields = [k.split(".", 1)[1] for k in c_side
                if k.startswith(cname + ".")]
    py_fields = [f for f, _ in pystruct._fields_]
    is_(py_fields, c_fields, "%s: same fields in the same order" % cname)
    for f in py_fields:
        key = "%s.%s" % (cname, f)
        if key in c_side:
            is_(getattr(pystruct, f).offset, int(c_side[key]),
                "offsetof(%s)" % key)

enums = {k: int(v) for k, v in c_side.items()
         if k.startswith("COORDL_") and k != "COORDL_VERSION"}
for name, value in sorted(enums.items()):
    py = name[len("COORDL_"):]
    ok(hasattr(_abi, py), "enum %s mirrored" % name)
    if hasattr(_abi, py):
        is_(getattr(_abi, py), value, "enum %s value" % name)

diag("header version %s" % c_side.get("COORDL_VERSION"))
done_testing()
