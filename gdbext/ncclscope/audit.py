"""nccl-audit: the named invariants of `ncclscope audit` (docs/audit.md) over the state this
session decoded. The library checks and renders (C API command "audit"); this module only asks
and prints."""

from .library import NativeError
from .registry import UsageError, argument, nccl_command
from .text import library_text


@nccl_command(
    "nccl-audit", "Check the decoded state against named invariants (aborted or revoked comms, "
    "proxy counters, registrations, IPC imports); one process, so no rule across ranks.",
    render=library_text("audit"),
    arguments=[argument("--refresh", action="store_true",
                        help="decode the target again instead of using the cached result"),
               argument("--verbose", action="store_true", help="every rule not checked and why")],
    description="Each rule: severity, passed, fired, not checked; each finding with its evidence. "
                "A field unavailable in the target is never a finding.\nWith --json: the "
                "ncclscope.audit/1 document (as `ncclscope audit --json`).")
def collect_audit(session, args):
    state = session.document(refresh=args.refresh)
    request = {"command": "audit", "state": state, "name": session.target_kind(),
               "text": not args.json, "verbose": bool(args.verbose)}
    try:
        document, _partial = session.library().run(request)
    except NativeError as error:
        raise UsageError("nccl-audit: %s" % error.message)
    return document
