"""nccl-numerics: NaN/Inf/subnormal/zero counts of the buffers of the collective each
communicator is in (docs/numerics.md). The library finds the buffers (the launched plans NCCL
has not reclaimed), reads them through gdb (host memory) or cuda-gdb (device memory, `x/Ngx
(@global ...)`), counts and renders; this module only asks and prints."""

from .registry import UsageError, argument, nccl_command
from .text import library_text, parse_number

# Defaults under a debugger: each device read is one `x` command of 4 KiB, so buffers above
# 4 MiB are sampled (64 chunks of 16 KiB) unless asked otherwise.
GDB_FULL_READ_BYTES = 4 << 20
GDB_SAMPLE_CHUNKS = 64
GDB_CHUNK_BYTES = 16 << 10


def _positive(text, name):
    value = parse_number(text)
    if value is None or value <= 0:
        raise UsageError("nccl-numerics: %s %s: not a positive number" % (name, text))
    return value


def numerics_request(args):
    """The C API request fields for the command's options."""
    return {"command": "numerics", "text": True, "all": bool(args.all),
            "full_read_bytes": _positive(args.full_read_bytes, "--full-read-bytes"),
            "sample_chunks": _positive(args.sample_chunks, "--sample-chunks"),
            "chunk_bytes": _positive(args.chunk_bytes, "--chunk-bytes")}


@nccl_command(
    "nccl-numerics", "NaN, Inf, subnormal and zero counts of the buffers of each communicator's "
    "newest launched collective (device memory under cuda-gdb).",
    render=library_text("numerics"),
    arguments=[argument("--all", action="store_true",
                        help="every launched collective NCCL has not reclaimed, not only the newest"),
               argument("--full-read-bytes", default=str(GDB_FULL_READ_BYTES),
                        help="read buffers up to this size whole, else sample (default 4 MiB)"),
               argument("--sample-chunks", default=str(GDB_SAMPLE_CHUNKS), help="chunks sampled (default 64)"),
               argument("--chunk-bytes", default=str(GDB_CHUNK_BYTES), help="bytes per chunk (default 16 KiB)")],
    description="Buffers, count and datatype come from the plans NCCL launched and has not yet "
                "reclaimed (comm->callbackQueue) and from planned tasks. Device memory is read "
                "only under cuda-gdb; elsewhere such a buffer is 'not readable here', never "
                "counted as zeros.\nWith --json: the ncclscope.numerics/1 document.")
def collect_numerics(session, args):
    document = session.numerics(numerics_request(args))
    if args.json:
        document.pop("text", None)
    return document
