"""Loads libncclscope.so with ctypes and runs C API requests (nsc_run_json).

No gdb import: the memory reader is a plain Python callable, so this module
works under gdb (Python 3.11), cuda-gdb (Python 3.12) and in unit tests.
"""

import ctypes
import ctypes.util
import glob
import json
import os
import threading

LIBRARY_NAME = "libncclscope.so"
ERROR_KINDS = {1: "partial", 2: "bad input", 64: "usage"}
NSC_ERROR_PARTIAL = 1
NSC_ERROR_BAD_INPUT = 2
NSC_ERROR_USAGE = 64

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

# int (*)(void *context, uint64_t address, void *buffer, uint64_t length, char *why, size_t why_size)
READ_MEMORY_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p,
                                  ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t)


class LibraryNotFound(Exception):
    """No libncclscope.so where we looked; the message lists the places."""


class NativeError(Exception):
    """nsc_run_json failed without a document (bad input or usage)."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


class ReadFailed(Exception):
    """Raised by a memory reader: the reason goes back to the library."""


def candidate_paths(environ=None, package_dir=_PACKAGE_DIR):
    """Where to look for the library, in order: env, the source tree's builds, installed paths."""
    environ = os.environ if environ is None else environ
    candidates = []
    explicit = environ.get("NCCLSCOPE_LIB")
    if explicit:
        if os.path.isdir(explicit):
            explicit = os.path.join(explicit, LIBRARY_NAME)
        candidates.append(explicit)
    repo_root = os.path.dirname(os.path.dirname(package_dir))  # gdbext/ncclscope -> repo
    candidates.append(os.path.join(repo_root, "build", "lib", LIBRARY_NAME))
    # Other build directories of a source tree (build-*), newest first.
    others = glob.glob(os.path.join(repo_root, "build*", "lib", LIBRARY_NAME))
    others.sort(key=lambda path: os.path.getmtime(path), reverse=True)
    candidates.extend(path for path in others if path not in candidates)
    # Installed: <prefix>/share/ncclscope/gdb/ncclscope -> <prefix>/lib{,64}.
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(package_dir))))
    for lib_dir in ("lib", "lib64", os.path.join("lib", "x86_64-linux-gnu")):
        candidates.append(os.path.join(prefix, lib_dir, LIBRARY_NAME))
    for prefix in ("/usr/local", "/usr"):
        for lib_dir in ("lib", "lib64", os.path.join("lib", "x86_64-linux-gnu")):
            candidates.append(os.path.join(prefix, lib_dir, LIBRARY_NAME))
    unique = []
    for path in candidates:
        if path not in unique:
            unique.append(path)
    return unique


def find_library(environ=None, package_dir=_PACKAGE_DIR):
    """Path of libncclscope.so; raises LibraryNotFound naming where it looked."""
    environ = os.environ if environ is None else environ
    candidates = candidate_paths(environ, package_dir)
    if environ.get("NCCLSCOPE_LIB"):
        # An explicit choice never falls back silently to another build.
        if os.path.isfile(candidates[0]):
            return candidates[0]
        raise LibraryNotFound("NCCLSCOPE_LIB=%s: no %s there" % (environ["NCCLSCOPE_LIB"], LIBRARY_NAME))
    for path in candidates:
        if os.path.isfile(path):
            return path
    found = ctypes.util.find_library("ncclscope")
    if found:
        return found
    raise LibraryNotFound("%s not found: run `bash scripts/run-main.sh` in the source tree (it builds "
                          "build/lib/%s), install ncclscope, or set NCCLSCOPE_LIB to its path (looked in %s)"
                          % (LIBRARY_NAME, LIBRARY_NAME, ", ".join(candidates[:3])))


class NativeLibrary:
    """The C API of libncclscope.so."""

    def __init__(self, path):
        self.path = path
        try:
            self._lib = ctypes.CDLL(path)
        except OSError as error:
            raise LibraryNotFound("cannot load %s: %s" % (path, error))
        lib = self._lib
        try:
            lib.nsc_run_json.argtypes = [ctypes.c_char_p, READ_MEMORY_FN, ctypes.c_void_p,
                                         ctypes.POINTER(ctypes.c_void_p)]
            lib.nsc_run_json.restype = ctypes.c_void_p
            lib.nsc_run_json_device.argtypes = [ctypes.c_char_p, READ_MEMORY_FN, ctypes.c_void_p,
                                                READ_MEMORY_FN, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
            lib.nsc_run_json_device.restype = ctypes.c_void_p
            lib.nsc_error_kind.argtypes = [ctypes.c_void_p]
            lib.nsc_error_kind.restype = ctypes.c_int
            lib.nsc_error_message.argtypes = [ctypes.c_void_p]
            lib.nsc_error_message.restype = ctypes.c_char_p
            lib.nsc_error_free.argtypes = [ctypes.c_void_p]
            lib.nsc_error_free.restype = None
            lib.nsc_string_free.argtypes = [ctypes.c_void_p]
            lib.nsc_string_free.restype = None
            lib.nsc_version.argtypes = []
            lib.nsc_version.restype = ctypes.c_char_p
        except AttributeError as error:
            raise LibraryNotFound("%s lacks the ncclscope C API: %s" % (path, error))

    def version(self):
        return self._lib.nsc_version().decode("utf-8", "replace")

    def classify_threads(self, threads):
        """blocked_in of each thread ({"name", "frames": [{"function", "module", "pc"}]}), by the
        library's classifier (stacks/blocked_in.cc): one answer for gdb's stacks and its own."""
        document, _partial = self.run({"command": "classify-threads", "threads": threads})
        return document.get("blocked_in") or []

    def render_text(self, view, data, context=None, options=None):
        """The library's text of one view of a document (snapshot/state_views.cc): the CLI's
        renderer. view: state, comm, ring, proxy, threads, kernels; context: the state
        document a subset came from; options: expand, frames."""
        request = dict(options or {}, command="render", view=view, data=data)
        if context is not None:
            request["context"] = context
        document, _partial = self.run(request)
        return document.get("text") or ""

    def run(self, request, reader=None, device_reader=None):
        """(document, partial_message) for a request dict; raises NativeError without a document.

        reader(address, length) -> bytes of exactly length, or raises ReadFailed(reason).
        device_reader: the same for memory as the GPU sees it (cuda-gdb), or None.
        """
        def as_callback(function):
            return READ_MEMORY_FN(make_read_callback(function, threading.get_ident())) if function \
                else READ_MEMORY_FN()
        callback, device_callback = as_callback(reader), as_callback(device_reader)
        out = ctypes.c_void_p()
        encoded = json.dumps(request).encode("utf-8")
        error = self._lib.nsc_run_json_device(encoded, callback, None, device_callback, None, ctypes.byref(out))
        kind, message = 0, ""
        if error:
            kind = self._lib.nsc_error_kind(error)
            message = (self._lib.nsc_error_message(error) or b"").decode("utf-8", "replace")
            self._lib.nsc_error_free(error)
        text = None
        if out.value:
            text = ctypes.string_at(out.value).decode("utf-8", "replace")
            self._lib.nsc_string_free(out)
        if text is None:
            if not kind:
                raise NativeError(NSC_ERROR_BAD_INPUT, "nsc_run_json returned no document")
            raise NativeError(kind, message)
        try:
            document = json.loads(text)
        except ValueError as parse_error:
            raise NativeError(NSC_ERROR_BAD_INPUT, "nsc_run_json returned invalid JSON: %s" % parse_error)
        return document, (message if kind == NSC_ERROR_PARTIAL else "")


def _write_reason(why, why_size, reason):
    if not why or not why_size:
        return
    encoded = reason.encode("utf-8", "replace")[:why_size - 1] + b"\0"
    ctypes.memmove(why, encoded, len(encoded))


def make_read_callback(reader, owner_thread=None):
    """The C callback around reader; no Python exception may cross into C.

    gdb's API may only be used from gdb's own thread: a call from any other
    thread than owner_thread (the one running nsc_run_json) fails with a reason.
    """
    def read_memory(_context, address, buffer, length, why, why_size):
        if owner_thread is not None and threading.get_ident() != owner_thread:
            _write_reason(why, why_size, "read_memory called from another thread")
            return 1
        try:
            data = reader(address, length)
            if len(data) != length:
                _write_reason(why, why_size, "short read (%d of %d bytes)" % (len(data), length))
                return 1
            ctypes.memmove(buffer, bytes(data), length)
            return 0
        except ReadFailed as failure:
            _write_reason(why, why_size, str(failure) or "read failed")
            return 1
        except BaseException as error:  # noqa: B902 - nothing may unwind through C frames
            try:
                _write_reason(why, why_size, "reader raised %s: %s" % (type(error).__name__, error))
            except BaseException:
                pass
            return 1
    return read_memory
