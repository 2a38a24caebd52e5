#!/bin/bash
# nccl-audit (docs/audit.md) on a hand-written ncclscope.state/1 document (`set ncclscope
# snapshot FILE`): the library checks and renders, gdb prints. Comm #1 of the document failed
# (asyncResult ncclSystemError) and its abort flag is unreadable: one error, one rule not checked.
source "$(dirname "$0")/lib.sh"
require_gdb
require_library
data=$src/tests/gdb/data/state_two_comms.json
out=$work/audit.out

gdb_run "$out" -ex "set ncclscope snapshot $data" \
  -ex "$(begin audit)" -ex 'nccl-audit' -ex "$(end audit)" \
  -ex "$(begin audit-json)" -ex 'nccl-audit --json' -ex "$(end audit-json)" \
  -ex "$(begin verbose)" -ex 'nccl-audit --verbose' -ex "$(end verbose)" \
  -ex "$(begin errors)" -ex 'nccl-audit --bogus' -ex "$(end errors)"

section_of "$out" audit > "$work/audit.txt"
expect "$work/audit.txt" '^audit of 1 input, 2 communicators: 1 error, 0 warnings, 0 info'
# Comm #0 has no proxy_async_result in this older document: not checked, not passed.
expect "$work/audit.txt" '^comm-async-error +error +0 +1 +1$'
expect "$work/audit.txt" '^  ERROR  comm-async-error  comm 0x1122334455667788 rank 1 \(snapshot, 0x55d0c8c00000\)$'
expect "$work/audit.txt" '^      asyncResult is ncclSystemError: the communicator has failed$'
check_json "$out" audit-json '
assert doc["schema"] == "ncclscope.audit/1"
assert "text" not in doc
assert [f["rule"] for f in doc["findings"] if f["severity"] == "error"] == ["comm-async-error"]
skipped = [n for n in doc["not_checked"] if n["rule"] == "aborted-comm-not-destroyed"]
assert skipped[0]["reason"] == "not checked: health.abort_flag: 0x7f3a30000040: not saved in core", skipped'
section_of "$out" verbose > "$work/verbose.txt"
expect "$work/verbose.txt" '^  aborted-comm-not-destroyed  comm 0x1122334455667788 rank 1 .*not saved in core$'
section_of "$out" errors > "$work/errors.txt"
expect "$work/errors.txt" '^nccl-audit: unrecognized arguments: --bogus \(try nccl-audit --help\)$'
expect_not "$out" 'Traceback|Python Exception'
finish
