# SPDX-License-Identifier: GPL-2.0-or-later
"""taputil: TAP output and the shared setup of the Python binding's tests.

Each test script imports this module (it sits beside them), which finds the
source and build trees from the top_srcdir / top_builddir variables that
`make check` exports (falling back to this file's location for a manual
run), puts the coordl package from the source tree on sys.path, and reports
a missing prerequisite (numpy, the built libcoordl, the data generator) as
a TAP skip of the whole file, never as a pass.
"""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.abspath(os.environ.get("top_srcdir")
                         or os.path.join(HERE, "..", ".."))
BUILDDIR = os.path.abspath(os.environ.get("top_builddir") or SRCDIR)
sys.path.insert(0, os.path.join(SRCDIR, "python"))

_n = 0
_failed = 0


def skip_all(why):
    print("1..0 # SKIP %s" % why)
    sys.stdout.flush()
    sys.exit(0)


def diag(msg):
    for line in str(msg).splitlines() or [""]:
        print("# %s" % line)
    sys.stdout.flush()


def ok(cond, name):
    global _n, _failed
    _n += 1
    print("%sok %d - %s" % ("" if cond else "not ", _n, name))
    sys.stdout.flush()
    if not cond:
        _failed += 1
    return bool(cond)


def is_(got, want, name):
    if not ok(got == want, name):
        diag("got:  %r" % (got,))
        diag("want: %r" % (want,))


def raises(exc, fn, name):
    """ok if fn() raises exc; returns the exception (or None)."""
    try:
        fn()
    except exc as e:
        ok(True, name)
        return e
    except Exception as e:                 # noqa: BLE001 - reported as a failure
        ok(False, name)
        diag("raised %s: %s" % (type(e).__name__, e))
        return None
    ok(False, name)
    diag("did not raise %s" % exc.__name__)
    return None


def done_testing():
    print("1..%d" % _n)
    sys.stdout.flush()
    sys.exit(1 if _failed else 0)


def require_numpy():
    try:
        import numpy  # noqa: F401
    except ImportError:
        skip_all("numpy is not installed for %s" % sys.executable)


def _sanitizer_runtime(lib):
    """Make a sanitizer build of libcoordl loadable into Python.

    An ASan-instrumented library refuses to load (and kills the process)
    unless the ASan runtime is the first library of the process, which an
    uninstrumented interpreter never arranges. So re-run this test with the
    runtime the library was linked with in LD_PRELOAD; leak detection is
    off there because the interpreter itself keeps memory until exit (the
    C unit tests check libcoordl for leaks). TSan cannot watch an
    uninstrumented interpreter's threads reliably: skip."""
    try:
        out = subprocess.run(["ldd", lib], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
    except OSError:
        return
    runtime = None
    for line in out.splitlines():
        f = line.split()
        if f and f[0].startswith("libtsan"):
            skip_all("libcoordl is built with TSan, which cannot run under "
                     "an uninstrumented Python")
        if f and f[0].startswith("libasan") and len(f) >= 3:
            runtime = f[2]
    if runtime is None or runtime in os.environ.get("LD_PRELOAD", ""):
        return
    env = dict(os.environ)
    env["LD_PRELOAD"] = " ".join(filter(None, [runtime,
                                               env.get("LD_PRELOAD")]))
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"),
                                                 "detect_leaks=0"]))
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def require_library():
    """Import coordl and load libcoordl, or skip the file."""
    require_numpy()
    import coordl
    from coordl import _abi
    if not os.environ.get("COORDL_LIBRARY"):
        built = os.path.join(BUILDDIR, "loader", ".libs", "libcoordl.so")
        if not os.path.exists(built):
            skip_all("libcoordl is not built (%s)" % built)
        # Test the library of this build tree, never an installed one.
        os.environ["COORDL_LIBRARY"] = built
    _sanitizer_runtime(os.environ["COORDL_LIBRARY"])
    try:
        _abi.load()
    except OSError as e:
        skip_all("libcoordl does not load: %s" % e)
    return coordl


def datagen():
    path = os.path.join(BUILDDIR, "tools", "coordl-datagen")
    if not os.access(path, os.X_OK):
        skip_all("tools/coordl-datagen is not built (%s)" % path)
    return path


class Dataset:
    """A generated ImageFolder tree in a private temporary directory,
    removed when the test ends (with-statement)."""

    def __init__(self, classes=3, images=40, seed=7, corrupt=0):
        gen = datagen()
        self.dir = tempfile.mkdtemp(prefix="coordl-pytest-")
        self.root = os.path.join(self.dir, "data")
        cmd = [gen, "--out", self.root, "--classes", str(classes),
               "--images", str(images), "--seed", str(seed)]
        if corrupt:
            cmd += ["--corrupt", str(corrupt)]
        r = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            shutil.rmtree(self.dir, ignore_errors=True)
            print("not ok 1 - generate the dataset")
            diag(" ".join(cmd))
            diag(r.stdout)
            print("1..1")
            sys.exit(1)
        self.classes = sorted(d for d in os.listdir(self.root)
                              if os.path.isdir(os.path.join(self.root, d)))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)
        return False
