"""What a host thread is blocked in, from its frames (function names, top first).

Classes are those of docs/schema-state.md (`blocked_in`). Pure Python.
"""

import re

# The frame closest to the top that matches one of these names decides: it is
# the most precise answer (ncclCommInitRank may itself wait in cudaStreamSynchronize).
_NCCL_AND_CUDA_PATTERNS = [
    ("cudaStreamSynchronize", re.compile(r"^(cudaStreamSynchronize|cuStreamSynchronize)")),
    ("cudaEventSynchronize", re.compile(r"^(cudaEventSynchronize|cuEventSynchronize)")),
    ("cudaDeviceSynchronize", re.compile(r"^(cudaDeviceSynchronize|cuCtxSynchronize)")),
    ("nccl-proxy-progress", re.compile(r"^(ncclProxyProgress|progressOps)\b")),
    ("nccl-proxy-service", re.compile(r"^(ncclProxyService|proxyService|ncclProxyServiceUDS)")),
    ("nccl-bootstrap", re.compile(r"^(bootstrap|ncclBootstrap)")),
    ("ncclCommInitRank", re.compile(r"^(ncclCommInit|ncclCommInitRankFunc|ncclCommInitRankDev|initTransportsRank)")),
    ("nccl-group-end", re.compile(r"^(ncclGroupEnd|groupLaunch|ncclGroupEndInternal|doLaunches)")),
]

# Only the top frames count for these: a thread that polls is "in poll" only
# when nothing NCCL- or CUDA-specific sits below.
_LIBC_PATTERNS = [
    ("poll/epoll", re.compile(r"^(__)?(poll|ppoll|epoll_wait|epoll_pwait|epoll_pwait2|select|pselect6?|__GI___poll|__GI_epoll_wait)\b")),
    ("sleep", re.compile(r"^(__)?(nanosleep|clock_nanosleep|usleep|sleep|__GI___clock_nanosleep|__GI___nanosleep)\b")),
]
_LIBC_TOP_FRAMES = 3


def _function_name(frame):
    if isinstance(frame, str):
        return frame
    return (frame or {}).get("function") or ""


def _bare_name(name):
    """Drops C++ argument lists and namespaces: "ns::f(int)" -> "f"."""
    name = name.split("(", 1)[0]
    return name.rsplit("::", 1)[-1].strip()


def classify_blocked_in(frames):
    """blocked_in class for a list of frames (dicts with "function", or names), top first."""
    names = [_bare_name(_function_name(frame)) for frame in frames or []]
    if not names:
        return "unknown"
    for name in names:
        for label, pattern in _NCCL_AND_CUDA_PATTERNS:
            if pattern.match(name):
                return label
    for name in names[:_LIBC_TOP_FRAMES]:
        for label, pattern in _LIBC_PATTERNS:
            if pattern.match(name):
                return label
    return "user-code"
