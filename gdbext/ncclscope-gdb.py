# ncclscope for gdb / cuda-gdb. Load with:  source /path/to/gdbext/ncclscope-gdb.py
# Adds this directory to sys.path and imports the `ncclscope` package, which
# registers nccl-state, nccl-comm, nccl-ring, nccl-proxy, nccl-threads,
# $nccl_comm() and the `set ncclscope ...` settings. Safe to source twice.
import os
import sys

import gdb


def _ncclscope_package_dir():
    # `source FILE` sets __file__ in gdb 10+; fall back to the environment.
    here = globals().get("__file__")
    if here:
        return os.path.dirname(os.path.abspath(here))
    return os.environ.get("NCCLSCOPE_GDBEXT", "")


_directory = _ncclscope_package_dir()
if _directory and _directory not in sys.path:
    sys.path.insert(0, _directory)

try:
    import ncclscope  # noqa: F401,E402
except Exception as _error:  # noqa: B902 - a broken install must not break gdb startup
    gdb.write("ncclscope: not loaded: %s\n" % _error, gdb.STDERR)
