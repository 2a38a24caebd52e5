# gdb auto-load script for libnccl (objfile-gdb.py convention): gdb runs it when
# it loads libnccl.so.2 if it sits at /usr/share/gdb/auto-load/<dir of the lib>/
# (e.g. /usr/share/gdb/auto-load/usr/local/cuda-13.0/lib/libnccl.so.2-gdb.py) or
# next to the library, and the directory is allowed by `add-auto-load-safe-path`.
# It loads the ncclscope package from NCCLSCOPE_GDBEXT (the gdbext/ directory),
# then from beside the real path of this file (an install or the source tree:
# symlink it into gdb's auto-load directory), then from the usual install prefixes.
import os
import sys

import gdb


def _ncclscope_candidates():
    here = globals().get("__file__") or ""
    candidates = []
    if os.environ.get("NCCLSCOPE_GDBEXT"):
        candidates.append(os.environ["NCCLSCOPE_GDBEXT"])
    if here:
        # Where it was installed or symlinked from: <prefix>/share/ncclscope/gdb/auto-load/
        # or the source tree's gdbext/auto-load/ -> the directory holding ncclscope/.
        candidates.append(os.path.dirname(os.path.dirname(os.path.realpath(here))))
    candidates.append("/usr/local/share/ncclscope/gdb")
    candidates.append("/opt/ncclscope/share/ncclscope/gdb")  # the .deb
    candidates.append("/usr/share/ncclscope/gdb")
    return candidates


def _load_ncclscope():
    if "ncclscope" in sys.modules:
        return
    for directory in _ncclscope_candidates():
        if os.path.isfile(os.path.join(directory, "ncclscope", "__init__.py")):
            if directory not in sys.path:
                sys.path.insert(0, directory)
            try:
                import ncclscope  # noqa: F401
            except Exception as error:  # noqa: B902 - never break loading libnccl
                gdb.write("ncclscope: not loaded from %s: %s\n" % (directory, error), gdb.STDERR)
            return
    gdb.write("ncclscope: package not found; set NCCLSCOPE_GDBEXT to the gdbext/ directory\n",
              gdb.STDERR)


_load_ncclscope()
