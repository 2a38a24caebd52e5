"""ncclscope for gdb and cuda-gdb: nccl-state, nccl-comm, nccl-ring, nccl-proxy, nccl-threads,
nccl-kernels, nccl-numerics, nccl-audit.

Importing the package inside gdb registers the commands; outside gdb only the
pure modules (registry, commands, text, gdbparse, library)
are usable, which is what the unit tests do.
"""

__version__ = "0.1.0"

from . import commands  # noqa: F401,E402 - declares the commands (pure)
from . import numerics  # noqa: F401,E402 - declares nccl-numerics (pure)
from . import audit  # noqa: F401,E402 - declares nccl-audit (pure)

try:
    import gdb  # noqa: F401
except ImportError:
    gdb = None

if gdb is not None:
    from . import gdb_commands  # noqa: E402

    gdb_commands.register()
