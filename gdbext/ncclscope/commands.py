"""The ncclscope commands: collect functions (data) declared with their renderers.

`session` is what the commands read from: gdb_session.GdbSession under gdb,
a fake in the unit tests. It offers:
  document(refresh=False) -> the ncclscope.state/1 document (dict)
  cached_document()       -> the last document, or None (never decodes)
  evaluate_number(text)   -> int value of a gdb expression (raises UsageError)
  debugger_threads(frames) -> thread dicts from the debugger, or None
  target_kind()           -> "live", "core", "remote", "none" or "snapshot"
  render_text(view, data, context, options) -> the library's text of a view
Pure Python (no gdb import).
"""

import re

from .registry import UsageError, argument, nccl_command
from .text import escape_for_terminal, library_view, parse_number

COMM_IDENTITY_KEYS = ["address", "comm_hash", "rank", "nranks"]


def communicators_of(document):
    return list(document.get("communicators") or [])


def _same_number(value, number):
    return parse_number(value) == number


def select_communicators(document, selector, rank=None, session=None, command="nccl-comm"):
    """Communicators picked by `#INDEX`, an address, a comm hash or a gdb expression."""
    communicators = communicators_of(document)
    text = (selector or "").strip()
    if text.startswith("#"):
        index = parse_number(text[1:])
        if index is None or not 0 <= index < len(communicators):
            raise UsageError("%s: no communicator %s (%d known; nccl-state lists them)"
                             % (command, escape_for_terminal(text), len(communicators)))
        chosen = [communicators[index]]
    else:
        number = parse_number(text)
        if number is None and session is not None:
            number = session.evaluate_number(text)
        if number is None:
            raise UsageError("%s: %s is not an address, a hash or #INDEX"
                             % (command, escape_for_terminal(text)))
        chosen = [comm for comm in communicators if _same_number(comm.get("address"), number)]
        if not chosen:
            chosen = [comm for comm in communicators if _same_number(comm.get("comm_hash"), number)]
        if not chosen:
            raise UsageError("%s: no communicator has address or hash 0x%x (%d known; nccl-state lists them)"
                             % (command, number, len(communicators)))
    if rank is not None:
        chosen = [comm for comm in chosen if comm.get("rank") == rank]
        if not chosen:
            raise UsageError("%s: no communicator %s has rank %d"
                             % (command, escape_for_terminal(text), rank))
    return chosen


def _identity(comm):
    return {key: comm.get(key) for key in COMM_IDENTITY_KEYS if key in comm}


def _with_unavailable(subset, comm, prefixes):
    """Copies the `unavailable` entries of comm that concern the subset's keys."""
    reasons = {key: reason for key, reason in (comm.get("unavailable") or {}).items()
               if re.match(r"[A-Za-z_0-9]*", key).group(0) in prefixes}
    if reasons:
        subset["unavailable"] = reasons
    return subset


def _joined(words):
    """An expression given in several words (`nccl-comm (struct ncclComm *) p`) is one selector."""
    if isinstance(words, list):
        return " ".join(words) if words else None
    return words


def _filtered(document, selector, session, command):
    selector = _joined(selector)
    if selector:
        return select_communicators(document, selector, session=session, command=command)
    return communicators_of(document)


@nccl_command(
    "nccl-state", "List every NCCL communicator of the process, one line each.",
    render=library_view("state"),
    arguments=[argument("--refresh", action="store_true",
                        help="decode the target again instead of using the cached result")],
    description="Each line: index, address, comm hash, rank/nranks, CUDA device, collectives "
                "launched (seqNumber) and health flags.\nWith --json: the whole "
                "ncclscope.state/1 document (docs/schema-state.md), as `ncclscope state --json`.")
def collect_state(session, args):
    return session.document(refresh=args.refresh)


@nccl_command(
    "nccl-comm", "Show one communicator in full: identity, counters, health, channels, proxy ops.",
    render=library_view("comm"),
    arguments=[argument("selector", metavar="ADDR|HASH|#INDEX", nargs="+",
                        help="communicator address, comm hash, #index from nccl-state, "
                             "or a gdb expression giving the address"),
               argument("--rank", type=int, help="only the communicator with this rank"),
               argument("--expand", action="store_true",
                        help="one line per channel (identical neighbours are grouped otherwise)")],
    description="A hash shared by several communicators of this process (one process driving "
                "several GPUs) shows them all.\nWith --json: a list of communicator objects.")
def collect_comm(session, args):
    return select_communicators(session.document(), _joined(args.selector), args.rank, session)


@nccl_command(
    "nccl-ring", "Draw the ring and tree of every channel, per communicator.",
    render=library_view("ring"),
    arguments=[argument("selector", nargs="*", metavar="HASH",
                        help="only this communicator (hash, address or #index)"),
               argument("--expand", action="store_true",
                        help="one line per channel (identical neighbours are grouped otherwise)")],
    description="ch0 ring: 0 -> 1 -> 0   tree: up -1 down [1]\nThe ring is ring.userRanks "
                "(starting at this rank) when readable, else prev -> rank -> next.\n"
                "With --json: {\"communicators\": [{address, comm_hash, rank, nranks, channels}]}.")
def collect_ring(session, args):
    return _communicators_with(session, args, "nccl-ring", "channels")


def _communicators_with(session, args, command, field):
    """{"communicators": [identity + `field`]} of the communicators the selector picks."""
    communicators = []
    for comm in _filtered(session.document(), args.selector, session, command):
        subset = _identity(comm)
        subset[field] = comm.get(field)
        communicators.append(_with_unavailable(subset, comm, {field}))
    return {"communicators": communicators}


@nccl_command(
    "nccl-proxy", "List the proxy operations in flight, with posted/received/transmitted/done steps.",
    render=library_view("proxy"),
    arguments=[argument("selector", nargs="*", metavar="HASH",
                        help="only this communicator (hash, address or #index)")],
    description="From proxyState->progressState.active (host memory: available in cores).\n"
                "With --json: {\"communicators\": [{address, comm_hash, rank, nranks, proxy_ops}]}.")
def collect_proxy(session, args):
    return _communicators_with(session, args, "nccl-proxy", "proxy_ops")


def merge_thread_names(threads, document_threads):
    """Fills name/state (and the Python stack) of debugger threads from the document's threads (same tid)."""
    by_tid = {thread.get("tid"): thread for thread in document_threads or []}
    for thread in threads:
        known = by_tid.get(thread.get("tid"))
        if not known:
            continue
        for key in ("name", "state", "python"):
            if not thread.get(key) and known.get(key):
                thread[key] = known[key]
    return threads


def _document_has_stacks(session):
    try:
        threads = session.document().get("threads") or []
    except UsageError:
        return False  # no NCCL, no library: gdb's threads are all there is
    return any(thread.get("frames") for thread in threads)


def _classify(session, threads):
    """Each thread's blocked_in from the library's one classifier (frames gdb unwound included)."""
    if not threads:
        return
    classes = session.classify_threads([{"name": thread.get("name"), "frames": thread.get("frames") or []}
                                        for thread in threads])
    for thread, blocked_in in zip(threads, classes):
        thread["blocked_in"] = blocked_in


@nccl_command(
    "nccl-threads", "Show host threads with their top frames and what each is blocked in.",
    render=library_view("threads"),
    arguments=[argument("--frames", type=int, default=6, metavar="N",
                        help="frames shown per thread (default 6)"),
               argument("--source", choices=["auto", "gdb", "document"], default="auto",
                        help="gdb: unwind with the debugger; document: the threads the "
                             "native library unwound (auto: document for a core when it "
                             "has stacks, else gdb)")],
    description="blocked_in: cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize, "
                "ncclCommInitRank, nccl-group-end, nccl-proxy-progress, nccl-proxy-service, "
                "nccl-bootstrap, poll/epoll, sleep, user-code, unknown.\nSwitching threads to "
                "unwind them restores the selected thread and frame; the target is never resumed.\n"
                "With --json: {\"source\": \"gdb\"|\"document\", \"threads\": [...]} (from a document "
                "also \"warnings\": the library's stack notes).")
def collect_threads(session, args):
    if args.frames is not None and args.frames < 0:
        raise UsageError("nccl-threads: --frames must be 0 or more")
    threads = None
    if args.source == "auto" and session.target_kind() == "core" and _document_has_stacks(session):
        # Cores: the library unwinds with build-id checks; gdb would use the host's
        # libraries without a matching sysroot and print plausible nonsense.
        args.source = "document"
    if args.source in ("auto", "gdb"):
        # Unwinding needs more frames than are shown: the class may sit deeper.
        threads = session.debugger_threads(max(args.frames, 32))
        if threads is None and args.source == "gdb":
            raise UsageError("nccl-threads: the debugger has no threads (no process or core)")
    if threads is not None:
        _classify(session, threads)
        for thread in threads:
            thread["frames"] = thread.get("frames", [])[:args.frames]
        # Names/states only from a document already decoded: never decode just for them.
        document_threads = (session.cached_document() or {}).get("threads")
        return {"source": "gdb", "threads": merge_thread_names(threads, document_threads)}
    document = session.document()
    threads = [dict(thread) for thread in document.get("threads") or []]
    _classify(session, [thread for thread in threads
                        if not thread.get("blocked_in") and isinstance(thread.get("frames"), list)])
    for thread in threads:
        if isinstance(thread.get("frames"), list):
            thread["frames"] = thread["frames"][:args.frames]
    # What the library could not symbolize (build-id mismatch, missing files) says how far to
    # trust the frames: the library files these under "warnings" (they do not make the answer partial).
    stack_warnings = [warning for warning in document.get("warnings") or []
                      if isinstance(warning, dict) and warning.get("kind") == "stacks"]
    return {"source": "document", "threads": threads, "warnings": stack_warnings}


@nccl_command(
    "nccl-kernels", "The NCCL kernels resident on the GPUs (cuda-gdb only): per block its channel "
    "and what it waits for.",
    render=library_view("kernels"),
    arguments=[argument("--all", action="store_true", help="kept for old scripts: kernels that are not NCCL's are always listed"),
               argument("--record", metavar="FILE", help="also write a replay bundle (docs/kernels.md)")],
    description="From `info cuda kernels` and device memory read through cuda-gdb (no -G needed): "
                "the collective, op, type, algorithm and protocol of each kernel and of the function "
                "each block runs; its communicator (the kernel argument's comm == ncclComm.devComm); "
                "per block the channel (b-th set bit of the channel mask) and, from the device-side "
                "step counters, \"waiting for data from rank R at step S\" or \"waiting for rank R to "
                "free a slot\".\nWith --json: the ncclscope.kernels/1 document.")
def collect_kernels(session, args):
    document = session.kernel_view(record_path=args.record)
    if document is None:
        raise UsageError("nccl-kernels: needs cuda-gdb (GPU kernels are not visible to gdb)")
    # Non-NCCL kernels are always listed: one that never ends holds the GPU NCCL needs (issue 33).
    return document
