"""gdb's own threads: frame-0 registers for the library's unwinder, and gdb's unwound frames.

Each stopped thread is switched to, to read it; the selected thread and frame are restored
afterwards and nothing is resumed. Running threads (non-stop) are not touched.
"""

import contextlib
import os

import gdb  # noqa: E402 - only importable inside gdb

from . import gdbparse
from .gdb_target import execute

# The registers of frame 0 the library unwinds from (x86-64 DWARF 0-16: rax rdx rcx rbx rsi
# rdi rbp rsp r8-r15 rip) and reads besides (the system call a thread sits in, its TCB).
X86_64_REGISTERS = ("rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10",
                    "r11", "r12", "r13", "r14", "r15", "rip", "orig_rax", "fs_base")
X86_64_ARCHITECTURES = ("i386:x86-64",)


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


def _valid_threads(threads):
    """The threads gdb still knows, in gdb's numbering order."""
    return [thread for thread in sorted(threads, key=lambda item: item.num) if thread.is_valid()]


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


def thread_registers(threads, architecture):
    """The callback request's "threads": tid, name and (x86-64) frame 0's registers of each."""
    records = []
    with selection_kept():
        for thread in _valid_threads(threads):
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


def _frame_record(frame):
    pc = frame.pc()
    record = {"pc": "0x%x" % pc, "function": None, "module": None, "offset": None}
    try:
        name = frame.name()
    except gdb.error:
        name = None
    try:
        symbol = gdbparse.parse_info_symbol(execute("info symbol 0x%x" % pc))
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
    """Thread dicts (schema shape) unwound by gdb."""
    records = []
    with selection_kept():
        for thread in _valid_threads(threads):
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


def core_signal(threads):
    """A core's $_siginfo for the library: the signal that ended the process, taken by the
    core's first thread (gdb's thread 1: the kernel writes the dumping thread first).
    None when gdb has none to give (no NT_SIGINFO, another architecture)."""
    first = min(_valid_threads(threads), key=lambda thread: thread.num, default=None)
    if first is None:
        return None
    with selection_kept():
        first.switch()
        try:
            info = gdb.parse_and_eval("$_siginfo")
            signal = {"signo": int(info["si_signo"]), "code": int(info["si_code"]),
                      "tid": first.ptid[1] or first.ptid[2]}
            fields = info["_sifields"]
            if signal["code"] <= 0:
                signal["sender_pid"] = int(fields["_kill"]["si_pid"])
            else:
                signal["fault_address"] = hex(int(fields["_sigfault"]["si_addr"]))
        except (gdb.error, RuntimeError, ValueError):
            return None
    return signal

