"""cuda-gdb's focus: host memory and host threads are read under a host thread's focus.

Under device focus, inferior.read_memory reads the GPU's address space and `info proc
mappings` is not the host's; every switch made here is undone afterwards.
"""

import contextlib

import gdb  # noqa: E402 - only importable inside gdb

from . import gdbparse, kernels
from .gdb_target import execute, is_cuda_gdb


def _device_focus():
    """cuda-gdb's focus as a `cuda ...` switch command when it is on a GPU thread, else None."""
    try:
        text = execute("cuda kernel block thread")
    except gdb.error:
        return None  # host focus ("Focus not set on any active CUDA kernel") or not cuda-gdb
    return gdbparse.cuda_focus_command(text)


@contextlib.contextmanager
def host_focus():
    """Switches to the host thread gdb has selected, and back to the exact kernel/block/thread
    focus afterwards; does nothing outside cuda-gdb or under host focus."""
    device_focus = _device_focus() if is_cuda_gdb() else None
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
            if _device_focus() is not None:
                execute("thread %d" % host_thread.num)
        yield
    finally:
        try:
            execute(device_focus)
        except gdb.error as error:
            gdb.write("ncclscope: could not restore CUDA focus (%s): %s\n" % (device_focus, error),
                      gdb.STDERR)


def cuda_execute(command):
    """execute() for kernels.py: a failure is its CommandFailed."""
    try:
        return execute(command)
    except gdb.error as error:
        raise kernels.CommandFailed(str(error))


def restore_focus(device_focus, host_thread):
    """Puts cuda-gdb's focus back on the kernel/block/thread, or the host thread, it had."""
    try:
        if device_focus:
            execute(device_focus)
        elif host_thread is not None and host_thread.is_valid():
            execute("thread %d" % host_thread.num)
    except gdb.error as error:
        gdb.write("ncclscope: could not restore the focus: %s\n" % error, gdb.STDERR)
