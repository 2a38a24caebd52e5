"""The debugger side: what the target is, its memory, its threads, and the cached document.

Read-only by construction: memory is only read (inferior.read_memory), threads
are only switched to for unwinding and the selection is restored; nothing is
ever written, resumed or stopped.
"""

import contextlib
import functools
import json
import os

import gdb  # noqa: E402 - only importable inside gdb

from . import gdbparse, kernels
from .library import NSC_ERROR_BAD_INPUT, NativeError, NativeLibrary, LibraryNotFound, ReadFailed, find_library
from .registry import UsageError
from .text import escape_for_terminal
from .validate import check_state_document

MEMORY_MODES = ["auto", "library", "callback"]
REMOTE_CONNECTIONS = ("remote", "extended-remote")
MAX_REGIONS = 100000
# The registers of frame 0 the library unwinds from (x86-64 DWARF 0-16: rax rdx rcx rbx rsi
# rdi rbp rsp r8-r15 rip) and reads besides (the system call a thread sits in, its TCB).
X86_64_REGISTERS = ("rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10",
                    "r11", "r12", "r13", "r14", "r15", "rip", "orig_rax", "fs_base")
X86_64_ARCHITECTURES = ("i386:x86-64",)


class TargetInfo:
    """kind: "live" (local native process), "core", "remote", or "none"."""

    def __init__(self, kind, pid=0, core_path=None, executable=None, connection=""):
        self.kind = kind
        self.pid = pid
        self.core_path = core_path
        self.executable = executable
        self.connection = connection

    def key(self):
        return (self.kind, self.pid, self.core_path, self.executable)


def _execute(command):
    return gdb.execute(command, to_string=True)


@functools.lru_cache(maxsize=1)
def is_cuda_gdb():
    try:
        return "cuda-gdb" in _execute("show version").lower()
    except gdb.error:
        return False


def _connection_type(inferior):
    connection = getattr(inferior, "connection", None)
    if connection is not None:
        return connection.type or ""
    # gdb < 12: no TargetConnection; infer it from `info target`.
    text = _execute("info target")
    if "core dump file" in text:
        return "core"
    if "Remote target" in text or "Remote serial target" in text:
        return "remote"
    return "native" if inferior.pid else ""


def _core_path(inferior):
    path = getattr(inferior.progspace, "core_filename", None)  # gdb 14+
    if path:
        return path
    return gdbparse.parse_core_path(_execute("info target"))


def describe_target():
    inferior = gdb.selected_inferior()
    connection = _connection_type(inferior)
    executable = inferior.progspace.filename
    if connection == "core":
        return TargetInfo("core", inferior.pid, _core_path(inferior), executable, connection)
    if inferior.pid <= 0:
        return TargetInfo("none", 0, None, executable, connection)
    if connection == "native" or (is_cuda_gdb() and connection not in REMOTE_CONNECTIONS):
        return TargetInfo("live", inferior.pid, None, executable, connection)
    return TargetInfo("remote", inferior.pid, None, executable, connection)


def _cuda_device_focus():
    """cuda-gdb's focus as a `cuda ...` switch command when it is on a GPU thread, else None."""
    try:
        text = _execute("cuda kernel block thread")
    except gdb.error:
        return None  # host focus ("Focus not set on any active CUDA kernel") or not cuda-gdb
    return gdbparse.cuda_focus_command(text)


@contextlib.contextmanager
def host_focus():
    """Host memory and host threads need cuda-gdb's focus on a host thread; put it back after.

    Under device focus, inferior.read_memory reads the GPU's address space and
    `info proc mappings` is not the host's: switch to the host thread gdb has
    selected, and restore the exact kernel/block/thread focus afterwards.
    """
    device_focus = _cuda_device_focus() if is_cuda_gdb() else None
    if device_focus is None:
        yield
        return
    host_thread = gdb.selected_thread()
    if host_thread is None:
        threads = sorted(gdb.selected_inferior().threads(), key=lambda thread: thread.num)
        host_thread = threads[0] if threads else None
    try:
        if host_thread is not None:
            host_thread.switch()  # quiet; the `thread N` command prints a frame
            if _cuda_device_focus() is not None:
                _execute("thread %d" % host_thread.num)
        yield
    finally:
        try:
            _execute(device_focus)
        except gdb.error as error:
            gdb.write("ncclscope: could not restore CUDA focus (%s): %s\n" % (device_focus, error),
                      gdb.STDERR)


def _cuda_execute(command):
    try:
        return _execute(command)
    except gdb.error as error:
        raise kernels.CommandFailed(str(error))


def _restore_focus(device_focus, host_thread):
    """Puts cuda-gdb's focus back on the kernel/block/thread, or the host thread, it had."""
    try:
        if device_focus:
            _execute(device_focus)
        elif host_thread is not None and host_thread.is_valid():
            _execute("thread %d" % host_thread.num)
    except gdb.error as error:
        gdb.write("ncclscope: could not restore the focus: %s\n" % error, gdb.STDERR)


def read_target_memory(address, length):
    """Reader for the C API callback: bytes, or ReadFailed with gdb's reason."""
    try:
        return gdb.selected_inferior().read_memory(address, length).tobytes()
    except gdb.MemoryError as error:
        raise ReadFailed(str(error) or "Cannot access memory at address 0x%x" % address)
    except gdb.error as error:
        raise ReadFailed(str(error))


def memory_regions(target):
    """Regions for a callback request: `info proc mappings`, or a core's load segments."""
    try:
        mappings = gdbparse.parse_proc_mappings(_execute("info proc mappings"))
    except gdb.error:
        mappings = []
    if target.kind == "core":
        try:
            sections = gdbparse.parse_core_sections(_execute("maint info sections -all-objects"))
        except gdb.error:
            sections = []
        if sections:
            return gdbparse.merge_core_regions(sections, mappings)[:MAX_REGIONS]
    return mappings[:MAX_REGIONS]


def _architecture_name():
    try:
        return gdb.selected_inferior().architecture().name()  # gdb 12+
    except (AttributeError, gdb.error, RuntimeError):
        pass
    try:
        return gdb.newest_frame().architecture().name()
    except (gdb.error, RuntimeError):
        return ""


def _vdso_address():
    """AT_SYSINFO_EHDR from `info auxv` (a core's mappings do not name the vDSO), or None."""
    try:
        text = _execute("info auxv")
    except gdb.error:
        return None
    for line in text.splitlines():
        words = line.split()
        if len(words) > 2 and words[1] == "AT_SYSINFO_EHDR" and words[-1].startswith("0x"):
            return int(words[-1], 16)
    return None


def _name_vdso(regions):
    """Names the unnamed region holding the vDSO "[vdso]", as a live process's mappings do:
    the library reads the vDSO's unwind tables from it."""
    if any(region.get("path") == "[vdso]" for region in regions):
        return
    address = _vdso_address()
    for region in regions if address is not None else []:
        if not region.get("path") and int(region["start"], 16) <= address < int(region["end"], 16):
            region["path"] = "[vdso]"
            return


def _frame_zero_registers():
    """{name: "0x..."} of the selected thread's innermost frame; one gdb cannot read is left out."""
    frame = gdb.newest_frame()
    registers = {}
    for name in X86_64_REGISTERS:
        try:
            registers[name] = "0x%x" % (int(frame.read_register(name)) & 0xffffffffffffffff)
        except (gdb.error, ValueError, TypeError, RuntimeError):
            continue  # <unavailable>, or a register this gdb does not know
    return registers


@contextlib.contextmanager
def selection_kept():
    """Puts the selected thread and frame back after the body switched threads (nothing resumes)."""
    selected_thread = gdb.selected_thread()
    try:
        selected_frame = gdb.selected_frame()
    except gdb.error:
        selected_frame = None
    try:
        yield
    finally:
        if selected_thread is not None and selected_thread.is_valid():
            selected_thread.switch()
            if selected_frame is not None and selected_frame.is_valid():
                selected_frame.select()


def valid_threads(threads):
    """The threads gdb still knows, in gdb's numbering order."""
    return [thread for thread in sorted(threads, key=lambda item: item.num) if thread.is_valid()]


def thread_registers(threads, architecture):
    """The callback request's "threads": tid, name and (x86-64) frame 0's registers of each.

    Each stopped thread is switched to, to read its registers; the selected thread and frame are
    restored afterwards and nothing is resumed. Running threads (non-stop) are not touched.
    """
    records = []
    with selection_kept():
        for thread in valid_threads(threads):
            pid, lwp, tid = thread.ptid
            record = {"tid": lwp or tid or pid, "name": thread.name or ""}
            if architecture not in X86_64_ARCHITECTURES:
                pass  # the library says once that it reads x86-64 registers only
            elif thread.is_running():
                record["registers_unavailable"] = "thread is running"
            else:
                thread.switch()
                try:
                    registers = _frame_zero_registers()
                except gdb.error as error:
                    registers, record["registers_unavailable"] = None, str(error)
                if registers:
                    record["registers"] = registers
            records.append(record)
    return records


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
                _name_vdso(regions)
            request["regions"] = regions
        if threads:
            request["architecture"] = _architecture_name()
            request["threads"] = thread_registers(gdb.selected_inferior().threads(), request["architecture"])
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

    def cuda_kernels(self):
        if not is_cuda_gdb():
            return None
        try:
            return gdbparse.parse_cuda_kernels(_execute("info cuda kernels"))
        except gdb.error:
            return []

    def kernel_view(self, record_path=None):
        """nccl-kernels: cuda-gdb's resident kernels, per block channel and device-side wait."""
        if not is_cuda_gdb():
            return None
        target = describe_target()
        if target.kind == "none":
            raise UsageError("nccl-kernels: no process (attach with cuda-gdb -p PID)")
        execute = _cuda_execute
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
            _restore_focus(restore, selected)
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
        read_device = kernels.device_reader(_cuda_execute) if is_cuda_gdb() else None
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


def _frame_record(frame):
    pc = frame.pc()
    record = {"pc": "0x%x" % pc, "function": None, "module": None, "offset": None}
    try:
        name = frame.name()
    except gdb.error:
        name = None
    try:
        symbol = gdbparse.parse_info_symbol(_execute("info symbol 0x%x" % pc))
    except gdb.error:
        symbol = None
    if symbol:
        function, offset, module = symbol
        record["function"] = name or function
        record["offset"] = offset if (not name or name == function) else None
        record["module"] = os.path.basename(module) if module else None
    else:
        record["function"] = name
    if record["offset"] is None and name:
        record["offset"] = _offset_in_function(frame, pc)
    if record["module"] is None:
        record["module"] = _module_of(pc)
    return record


def _module_of(pc):
    """Basename of the shared library or executable holding pc, or None."""
    solib = gdb.solib_name(pc)
    if solib:
        return os.path.basename(solib)
    try:
        symtab = gdb.find_pc_line(pc).symtab
        if symtab is not None:
            return os.path.basename(symtab.objfile.filename)
    except (gdb.error, RuntimeError):
        pass
    return None


def _offset_in_function(frame, pc):
    """pc minus the start of the frame's function (DWARF symbol), or None."""
    try:
        function = frame.function()
        if function is None:
            return None
        return pc - int(function.value().address)
    except (gdb.error, RuntimeError, ValueError, TypeError):
        return None


def _thread_frames(max_frames):
    frames = []
    try:
        frame = gdb.newest_frame()
    except gdb.error as error:
        return None, str(error)
    while frame is not None and len(frames) < max_frames:
        try:
            frames.append(_frame_record(frame))
            frame = frame.older()
        except gdb.error:
            break
    return frames, None


def collect_gdb_threads(threads, max_frames):
    """Thread dicts (schema shape) unwound by gdb; restores the selected thread and frame."""
    records = []
    with selection_kept():
        for thread in valid_threads(threads):
            _pid, lwp, tid = thread.ptid
            record = {"tid": lwp or tid, "gdb_num": thread.num, "name": thread.name, "state": None}
            if thread.is_running():
                # Non-stop mode: a running thread cannot be unwound and is left running.
                record["frames"] = None
                record["unavailable"] = {"frames": "thread is running"}
            else:
                thread.switch()
                frames, why = _thread_frames(max_frames)
                record["frames"] = frames
                if frames is None:
                    record["unavailable"] = {"frames": why}
            records.append(record)
    return records
