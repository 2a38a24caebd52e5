"""The session: the cached state document and the requests that decode the target.

Read-only by construction: memory is only read, threads are only switched to for
unwinding and the selection is restored; nothing is ever written, resumed or stopped.
"""

import json
import os

import gdb  # noqa: E402 - only importable inside gdb

from . import gdbparse, kernels
from .cuda_focus import cuda_execute, host_focus, restore_focus
from .gdb_target import (architecture_name, describe_target, is_cuda_gdb, memory_regions, name_vdso,
                         read_target_memory)
from .gdb_threads import collect_gdb_threads, core_signal, thread_registers
from .library import NSC_ERROR_BAD_INPUT, NativeError, NativeLibrary, LibraryNotFound, find_library
from .registry import UsageError
from .text import escape_for_terminal
from .validate import check_state_document

MEMORY_MODES = ["auto", "library", "callback"]


def _parameter(name, default=""):
    try:
        value = gdb.parameter(name)
    except (RuntimeError, gdb.error):
        return default
    return default if value is None else value


class GdbSession:
    def __init__(self):
        self._library = None
        self._document = None
        self._document_key = None
        self.memory_mode = "auto"
        self.snapshot_path = ""
        self.profile_path = ""  # extra layout profile directories, DIR:DIR
        self.last_note = ""

    # --- native library ---
    def library(self):
        if self._library is None:
            try:
                self._library = NativeLibrary(find_library())
            except LibraryNotFound as error:
                raise UsageError("ncclscope: %s" % error)
        return self._library

    def render_text(self, view, data, context=None, options=None):
        try:
            return self.library().render_text(view, data, context, options)
        except NativeError as error:
            raise UsageError("ncclscope: cannot render %s: %s" % (view, error.message))

    # --- cache ---
    def invalidate(self, *_event):
        self._document = None
        self._document_key = None

    def cached_document(self):
        return self._document

    # --- requests ---
    def base_request(self, target):
        request = {"command": "state", "freeze": False,
                   "sysroot": gdbparse.normalise_sysroot(_parameter("sysroot")),
                   "solib_search_path": _parameter("solib-search-path") or ""}
        if target.executable:
            # gdb names files on the target's filesystem "target:/path" (remote targets).
            request["executable"] = gdbparse.normalise_sysroot(target.executable)
        if self.profile_path:
            request["profile_path"] = self.profile_path
        return request

    def library_request(self, target):
        if target.kind == "remote":
            # Its pid names a process on another machine (or namespace): never open a local one.
            raise UsageError("ncclscope: the target is remote (%s): the library cannot open it; "
                             "use `set ncclscope memory auto` or `callback`" % (target.connection or "remote"))
        request = self.base_request(target)
        if target.kind == "core":
            if not target.core_path:
                raise UsageError("ncclscope: cannot tell the core file's name from `info target`")
            request["core"] = target.core_path
        else:
            request["pid"] = target.pid
        return request

    def callback_request(self, target, threads=False):
        """threads: also each thread's frame-0 registers, so that the library unwinds the
        stacks over gdb's memory (switches threads, restores the selection)."""
        request = self.base_request(target)
        request["use_callback"] = True
        if target.kind in ("live", "core") and target.pid:
            request["pid"] = target.pid  # a label only: the library reads through the callback
        regions = memory_regions(target)
        if regions:
            if threads:
                name_vdso(regions)
            request["regions"] = regions
        if threads:
            request["architecture"] = architecture_name()
            request["threads"] = thread_registers(gdb.selected_inferior().threads(), request["architecture"])
            signal = core_signal(gdb.selected_inferior().threads()) if target.kind == "core" else None
            if signal:
                request["signal"] = signal
        return request

    def choose_mode(self, target):
        if self.memory_mode != "auto":
            return self.memory_mode
        if target.kind in ("live", "core") and not is_cuda_gdb():
            return "library"
        return "callback"

    def _load_snapshot(self):
        """The snapshot file's document, checked once here (as the CLI does) so that no
        command meets a field of the wrong type: else one line naming the file and field."""
        where = escape_for_terminal(self.snapshot_path)
        try:
            # Read by the library: regular files only, bounded (a FIFO or /dev/zero is refused).
            text = self.library().run({"command": "read-file", "what": "snapshot",
                                       "path": self.snapshot_path})[0]["text"]
        except NativeError as error:
            raise UsageError("ncclscope: %s" % escape_for_terminal(error.message))
        try:
            document = json.loads(text)
        except ValueError as error:
            raise UsageError("ncclscope: snapshot %s: %s" % (where, escape_for_terminal(str(error))))
        except RecursionError:
            raise UsageError("ncclscope: snapshot %s: nested too deeply to be a state document" % where)
        problem = check_state_document(document)
        if problem:
            raise UsageError("ncclscope: snapshot %s: %s" % (where, escape_for_terminal(problem)))
        return document

    def document(self, refresh=False):
        if self.snapshot_path:
            key = ("snapshot", self.snapshot_path, os.path.getmtime(self.snapshot_path)
                   if os.path.exists(self.snapshot_path) else 0)
        else:
            target = describe_target()
            if target.kind == "none":
                raise UsageError("ncclscope: no process or core: attach (gdb -p PID), open a core "
                                 "(gdb EXE CORE) or `set ncclscope snapshot FILE`")
            key = target.key() + (self.memory_mode, self.profile_path)
        if not refresh and self._document is not None and self._document_key == key:
            return self._document
        self.last_note = ""
        if self.snapshot_path:
            document = self._load_snapshot()
        else:
            with host_focus():
                document = self._decode(target)
        self._document, self._document_key = document, key
        return document

    def _decode(self, target):
        library = self.library()
        mode = self.choose_mode(target)
        first_error = None
        if mode == "library":
            try:
                document, _partial = library.run(self.library_request(target), read_target_memory)
                return document
            except NativeError as error:
                if self.memory_mode == "library" or error.kind != NSC_ERROR_BAD_INPUT:
                    raise UsageError("ncclscope: %s" % error.message)
                # The library may be unable to open this target itself: let gdb supply the memory.
                first_error = error
        try:
            document, _partial = library.run(self.callback_request(target, threads=True), read_target_memory)
        except NativeError as error:
            # Both failed: the library's own reading names the real problem best.
            raise UsageError("ncclscope: %s" % (first_error or error).message)
        # A partial result needs no note: the text already counts unreadable fields.
        self.last_note = "memory read through gdb (%s)" % first_error.message if first_error else ""
        return document

    def kernel_view(self, record_path=None):
        """nccl-kernels: cuda-gdb's resident kernels, per block channel and device-side wait."""
        if not is_cuda_gdb():
            return None
        target = describe_target()
        if target.kind == "none":
            raise UsageError("nccl-kernels: no process (attach with cuda-gdb -p PID)")
        execute = cuda_execute
        recorder = kernels.Recorder(execute) if record_path else None
        host_reader = read_target_memory
        if recorder:
            execute, host_reader = recorder.execute, recorder.reader("host", read_target_memory)
        read_device = kernels.device_reader(execute)
        if recorder:
            read_device = recorder.reader("device", read_device)
        # Host memory through gdb (as under cuda-gdb by default), so a recording holds all of it.
        with host_focus():  # `info proc mappings` must describe the host process
            request = self.callback_request(target)
        restore = kernels.restore_focus_command(execute)
        selected = gdb.selected_thread()
        try:
            document = kernels.build_view(self.library(), execute, request, host_reader, read_device,
                                          host_focus)
        except NativeError as error:
            raise UsageError("nccl-kernels: %s" % error.message)
        finally:
            restore_focus(restore, selected)
        if recorder:
            bundle = {"schema": "ncclscope.kernel-replay/1", "request": request,
                      "commands": recorder.commands, "reads": recorder.reads, "result": document}
            with open(record_path, "w", encoding="utf-8") as handle:
                json.dump(bundle, handle, indent=1, sort_keys=True)
        return document

    def numerics(self, fields):
        """nccl-numerics: the library reads the buffers (device memory through cuda-gdb)."""
        target = describe_target()
        if target.kind == "none":
            raise UsageError("nccl-numerics: no process or core (attach with gdb -p PID or open a core)")
        read_device = kernels.device_reader(cuda_execute) if is_cuda_gdb() else None
        with host_focus():
            request = self.callback_request(target)
            request.update(fields)
            try:
                document, _partial = self.library().run(request, read_target_memory, read_device)
            except NativeError as error:
                raise UsageError("nccl-numerics: %s" % error.message)
        return document

    def target_kind(self):
        return "snapshot" if self.snapshot_path else describe_target().kind

    # --- gdb expressions ---
    def evaluate_number(self, text):
        try:
            return int(gdb.parse_and_eval(text))
        except (gdb.error, RuntimeError, ValueError, TypeError) as error:
            raise UsageError("%s: %s" % (escape_for_terminal(text), error))

    # --- threads ---
    def classify_threads(self, threads):
        """The library's blocked_in classes; None each where it cannot be loaded (the threads
        and their frames still show: gdb unwound them)."""
        try:
            library = self.library()
        except UsageError:
            return [None] * len(threads)
        return library.classify_threads(threads)

    def debugger_threads(self, max_frames):
        inferior = gdb.selected_inferior()
        if inferior.pid <= 0 and describe_target().kind != "core":
            return None
        threads = list(inferior.threads())
        if not threads:
            return None
        with host_focus():
            return collect_gdb_threads(threads, max_frames)
