"""Collect + render of every command on a hand-written ncclscope.state/1 document (no gdb)."""
import copy
import json
import os
import unittest

from native_library import built_library
from ncclscope.commands import select_communicators
from ncclscope.registry import COMMANDS, UsageError

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "state_two_comms.json")


class FakeSession:
    """What gdb_session.GdbSession offers, over a fixed document."""

    def __init__(self, document, threads=None, expressions=None, kind="live", kernels=None):
        self._kind = kind
        self._kernels = kernels
        self._document = document
        self._threads = threads
        self._expressions = expressions or {}

    def document(self, refresh=False):
        return self._document

    def cached_document(self):
        return self._document

    def evaluate_number(self, text):
        if text in self._expressions:
            return self._expressions[text]
        raise UsageError("%s: No symbol in current context." % text)

    def debugger_threads(self, max_frames):
        return copy.deepcopy(self._threads)

    def target_kind(self):
        return self._kind

    def kernel_view(self, record_path=None):
        return copy.deepcopy(self._kernels)

    def classify_threads(self, threads):
        return built_library().classify_threads(threads)

    def render_text(self, view, data, context=None, options=None):
        return built_library().render_text(view, data, context, options)


def run(name, argv, session):
    spec = COMMANDS[name]
    args = spec.parse(argv)
    data = spec.collect(session, args)
    return data, spec.render(data, args, session)


class CommandsTest(unittest.TestCase):
    def setUp(self):
        with open(DATA, encoding="utf-8") as handle:
            self.document = json.load(handle)
        self.session = FakeSession(self.document)

    def test_state_lines(self):
        data, text = run("nccl-state", [], self.session)
        self.assertIs(data, self.document)  # --json prints the document itself
        lines = text.splitlines()
        self.assertEqual(lines[0], "NCCL 2.28.9 in core /cores/rank0/core.4242 (pid 4242) /opt/app/train; "
                                   "layout dwarf:/usr/local/cuda-13.0/lib/libnccl.so.2; found by registry")
        # Errors first (issue 32): a communicator whose health is not ok, before the table.
        self.assertEqual(lines[1], "NCCL ERROR comm 0x1122334455667788 rank 1/4 (0x55d0c8c00000): "
                                   "async_result=ncclSystemError")
        self.assertRegex(lines[2], r"^#0  0x55d0c8a1b2c0  hash 0x6db0a96d9cb7fc37  rank 0/2  "
                                   r"dev 0 \(0000:19:00.0\)  launched AllGather=1 AllReduce=7 +health ok$")
        self.assertIn("launched AllReduce=<unreadable 0x55d0c8c01230: not saved in core>", lines[3])
        self.assertTrue(lines[3].endswith("health async_result=ncclSystemError, "
                                          "abort_flag <unreadable 0x7f3a30000040: not saved in core>"))
        self.assertEqual(lines[4], "2 communicators; 6 unreadable fields (nccl-comm ADDR for detail); "
                                   "1 warning; 1 error (read 1)")
        self.assertEqual(lines[5], "rejected candidate 0x7f00dead0000: endMagic mismatch")

    def test_state_with_two_libraries_names_each_comms_library(self):
        # issue 17: a process that maps two libnccl lists both and names each comm's library.
        self.document["nccl"]["libraries"] = [
            {"index": 0, "version": "2.28.9", "library": "/usr/local/cuda-13.0/lib/libnccl.so.2",
             "communicators": 1, "layout_source": "dwarf:a", "unavailable": None},
            {"index": 1, "version": None, "library": "/opt/nccl/lib/libnccl.so.2",
             "communicators": None, "layout_source": None, "unavailable": "no layout for build-id bb01"}]
        self.document["communicators"][0]["library"] = {"index": 0, "path": "/usr/local/cuda-13.0/lib/libnccl.so.2"}
        self.document["communicators"][1]["library"] = {"index": 1, "path": "/opt/nccl/lib/libnccl.so.2"}
        lines = run("nccl-state", [], self.session)[1].splitlines()
        self.assertRegex(lines[1], r"^NCCL ERROR comm ")
        self.assertEqual(lines[2], "2 libnccl mapped:")
        self.assertEqual(lines[3], "  lib 0  NCCL 2.28.9  /usr/local/cuda-13.0/lib/libnccl.so.2: "
                                   "1 communicator(s), layout dwarf:a")
        self.assertEqual(lines[4], "  lib 1  NCCL ?  /opt/nccl/lib/libnccl.so.2: "
                                   "communicators unavailable (no layout for build-id bb01)")
        self.assertRegex(lines[5], r"^#0  lib 0  0x55d0c8a1b2c0  hash ")
        self.assertRegex(lines[6], r"^#1  lib 1  0x55d0c8c00000  hash ")

    def test_state_with_one_library_has_no_library_column(self):
        self.document["nccl"]["libraries"] = [{"index": 0, "version": "2.28.9", "communicators": 2}]
        lines = run("nccl-state", [], self.session)[1].splitlines()
        self.assertRegex(lines[2], r"^#0  0x55d0c8a1b2c0  hash ")

    def test_state_caps_rejected_candidates(self):
        self.document["discovery"]["rejected"] = [{"address": "0x%x" % (0x1000 * i), "why": "endMagic"}
                                                  for i in range(1, 9)]
        lines = run("nccl-state", [], self.session)[1].splitlines()
        self.assertEqual(lines[-2], "rejected candidate 0x5000: endMagic")
        self.assertEqual(lines[-1], "... 3 more rejected candidates (--json lists them)")

    def test_comm_by_index_address_hash_and_expression(self):
        by_index = select_communicators(self.document, "#1")
        self.assertEqual(by_index[0]["address"], "0x55d0c8c00000")
        by_address = select_communicators(self.document, "0x55D0C8A1B2C0")
        self.assertEqual(by_address[0]["comm_hash"], "0x6db0a96d9cb7fc37")
        by_hash = select_communicators(self.document, "0x1122334455667788")
        self.assertEqual(by_hash[0]["rank"], 1)
        session = FakeSession(self.document, expressions={"comm": 0x55D0C8C00000})
        by_expression = select_communicators(self.document, "comm", session=session)
        self.assertEqual(by_expression[0]["nranks"], 4)

    def test_comm_expression_in_several_words(self):
        session = FakeSession(self.document, expressions={"(struct ncclComm *) comm": 0x55D0C8C00000})
        data, _text = run("nccl-comm", ["(struct", "ncclComm", "*)", "comm"], session)
        self.assertEqual(data[0]["address"], "0x55d0c8c00000")

    def test_comm_selection_errors_are_one_line(self):
        with self.assertRaises(UsageError) as caught:
            select_communicators(self.document, "0x1234")
        self.assertEqual(str(caught.exception), "nccl-comm: no communicator has address or hash 0x1234 "
                                                "(2 known; nccl-state lists them)")
        with self.assertRaises(UsageError):
            select_communicators(self.document, "#2")
        with self.assertRaises(UsageError):
            select_communicators(self.document, "#1", rank=0)
        with self.assertRaises(UsageError) as caught:
            select_communicators(self.document, "nosuchvar", session=self.session)
        self.assertIn("No symbol", str(caught.exception))

    def test_comm_detail(self):
        data, text = run("nccl-comm", ["#1"], self.session)
        self.assertEqual(len(data), 1)
        self.assertIn("  coll_op_count 3  op_count 0  p2p_op_count <unreadable 0x7f3a20000000: not saved in core>",
                      text.splitlines())
        self.assertIn("    ch1  ring: 17 -> 1 -> <unreadable 0x55d0c8c02008: short read>   tree: up 0 down [?]",
                      text.splitlines())
        self.assertIn("    proxy ops <unreadable: proxyState is NULL>", text.splitlines())
        self.assertIn("    health.abort_flag: <unreadable 0x7f3a30000040: not saved in core>", text.splitlines())
        self.assertIn("    comm 0x55d0c8c00000: channel 1 ring.prev is 17, outside 0..3", text.splitlines())

    def test_comm_detail_proxy_table(self):
        _data, text = run("nccl-comm", ["0x6db0a96d9cb7fc37"], self.session)
        lines = text.splitlines()
        self.assertIn("    op 0x7f3a10002000 opCount 3 AllReduce ring Simple nsubs 2 done 0", lines)
        self.assertIn("      channel  peer  nsteps  posted  received  transmitted  done", lines)
        self.assertIn("      0        1     8       4       0         4            2", lines)
        self.assertIn("  coll_op_count 8  op_count 0  p2p_op_count 0 (per channel: 0 0 0 0)", lines)
        self.document["communicators"][0]["p2p_op_count"]["per_channel"] = [0] * 32
        lines = run("nccl-comm", ["#0"], self.session)[1].splitlines()
        self.assertIn("  coll_op_count 8  op_count 0  p2p_op_count 0 (per channel: 32 x 0)", lines)

    def test_ring_grouped_and_expanded(self):
        data, text = run("nccl-ring", ["0x6db0a96d9cb7fc37"], self.session)
        self.assertEqual(text.splitlines(), [
            "comm 0x6db0a96d9cb7fc37 rank 0/2 (0x55d0c8a1b2c0)",
            "  ch0-1  ring: 0 -> 1 -> 0   tree: up -1 down [1]",
            "  ch2-3  ring: 0 -> 1 -> 0   tree: up 1 down []"])
        self.assertEqual(sorted(data["communicators"][0]), ["address", "channels", "comm_hash", "nranks", "rank"])
        _data, text = run("nccl-ring", ["0x6db0a96d9cb7fc37", "--expand"], self.session)
        self.assertEqual(len(text.splitlines()), 5)
        self.assertEqual(text.splitlines()[1], "  ch0  ring: 0 -> 1 -> 0   tree: up -1 down [1]")

    def test_ring_keeps_reasons_of_its_fields(self):
        data, text = run("nccl-ring", ["#1"], self.session)
        self.assertEqual(data["communicators"][0]["unavailable"], {
            "channels[1].ring.next": "0x55d0c8c02008: short read",
            "channels[1].ring.user_ranks": "userRanks is NULL"})
        self.assertIn("  ch1  ring: 17 -> 1 -> <unreadable 0x55d0c8c02008: short read>   tree: up 0 down [?]",
                      text.splitlines())

    def test_ring_flags_prev_next_that_contradict_user_ranks(self):
        self.document["communicators"][0]["channels"][0]["ring"]["next"] = 17
        _data, text = run("nccl-ring", ["#0"], self.session)
        self.assertEqual(text.splitlines()[1], "  ch0    ring: 0 -> 1 -> 0 (ring.next is 17)   tree: up -1 down [1]")
        self.assertEqual(text.splitlines()[2], "  ch1    ring: 0 -> 1 -> 0   tree: up -1 down [1]")
        self.assertEqual(text.splitlines()[3], "  ch2-3  ring: 0 -> 1 -> 0   tree: up 1 down []")

    def test_proxy(self):
        data, text = run("nccl-proxy", [], self.session)
        self.assertEqual(data["communicators"][0]["proxy_ops"][0]["subs"][0]["posted"], 4)
        lines = text.splitlines()
        self.assertEqual(lines[0], "comm 0x6db0a96d9cb7fc37 rank 0/2 (0x55d0c8a1b2c0): 1 proxy op")
        self.assertEqual(lines[4], "    1        1     8       2       0         2            2")
        self.assertEqual(lines[5], "comm 0x1122334455667788 rank 1/4 (0x55d0c8c00000): 0 proxy ops")
        self.assertEqual(lines[6], "  proxy ops <unreadable: proxyState is NULL>")

    def test_threads_from_document_are_escaped(self):
        data, text = run("nccl-threads", ["--source", "document", "--frames", "2"], self.session)
        self.assertEqual(data["source"], "document")
        lines = text.splitlines()
        self.assertEqual(lines[0], 'thread 4242 "train" [S] blocked in cudaStreamSynchronize')
        self.assertEqual(lines[2], "    #1 0x7f3a48123456 ?? in libcuda.so.1")
        self.assertEqual(lines[3], 'thread 4250 "evil\\x1b[2Jname" [S] blocked in nccl-proxy-service')
        self.assertEqual(lines[-1], "2 threads (from document)")
        self.assertNotIn("\x1b", text)

    def test_document_threads_carry_the_stack_notes(self):
        # Where the library files them (state_document.cc add_threads): warnings, not errors.
        self.document["warnings"].append({"kind": "stacks", "subject": "core x",
                                          "reason": "stacks: libc.so.6: build-id mismatch"})
        self.document["warnings"].append({"kind": "library", "subject": "libnccl.so.2",
                                          "reason": "build-id mismatch; decoded with a profile"})
        data, text = run("nccl-threads", ["--source", "document"], self.session)
        self.assertEqual([warning["reason"] for warning in data["warnings"]],
                         ["stacks: libc.so.6: build-id mismatch"])
        self.assertEqual(text.splitlines()[-2], "note: stacks: libc.so.6: build-id mismatch")
        state_text = run("nccl-state", [], self.session)[1]
        self.assertIn("; 1 error (read 1)", state_text)  # a stack note does not make the answer partial

    def test_threads_from_the_debugger_are_classified(self):
        frames = [{"pc": "0x%x" % (0x1000 + i), "function": name, "module": "m", "offset": 1}
                  for i, name in enumerate(["ioctl", None, None, None, None, None, None,
                                            "cudaStreamSynchronize", "main"])]
        threads = [{"tid": 4242, "gdb_num": 1, "name": None, "state": None, "frames": frames}]
        session = FakeSession(self.document, threads=threads)
        data, text = run("nccl-threads", ["--frames", "3"], session)
        thread = data["threads"][0]
        self.assertEqual(data["source"], "gdb")
        # Classified on frames deeper than the 3 shown.
        self.assertEqual(thread["blocked_in"], "cudaStreamSynchronize")
        self.assertEqual(len(thread["frames"]), 3)
        self.assertEqual(thread["name"], "train")  # merged from the document (same tid)
        self.assertEqual(text.splitlines()[0], '[1] thread 4242 "train" [S] blocked in cudaStreamSynchronize')

    def test_cores_prefer_the_library_stacks(self):
        threads = [{"tid": 4242, "gdb_num": 1, "name": None, "state": None,
                    "frames": [{"pc": "0x1", "function": "wcsxfrm_l"}]}]
        data, _text = run("nccl-threads", [], FakeSession(self.document, threads=threads, kind="core"))
        self.assertEqual(data["source"], "document")
        self.assertEqual(data["threads"][0]["blocked_in"], "cudaStreamSynchronize")
        data, _text = run("nccl-threads", ["--source", "gdb"],
                          FakeSession(self.document, threads=threads, kind="core"))
        self.assertEqual(data["source"], "gdb")
        # A core whose document has no stacks: gdb's.
        self.document["threads"] = []
        data, _text = run("nccl-threads", [], FakeSession(self.document, threads=threads, kind="core"))
        self.assertEqual(data["source"], "gdb")

    def test_threads_without_debugger_threads_fall_back_to_document(self):
        data, _text = run("nccl-threads", [], self.session)
        self.assertEqual(data["source"], "document")
        with self.assertRaises(UsageError):
            run("nccl-threads", ["--source", "gdb"], self.session)

    def test_kernels_need_cuda_gdb(self):
        with self.assertRaises(UsageError) as caught:
            run("nccl-kernels", [], self.session)
        self.assertEqual(str(caught.exception),
                         "nccl-kernels: needs cuda-gdb (GPU kernels are not visible to gdb)")

    def test_kernels_render_the_recorded_view(self):
        # The view cuda-gdb produced on a real 2-GPU hang (tests/gdb/data/kernel-replay/).
        from test_kernels import load_bundle
        document = load_bundle("skip-collective-rank0")["result"]
        document["other_kernels"] = [{"kernel": 1, "device": 0, "invocation": "myKernel(int*)"}]
        session = FakeSession(self.document, kernels=document)
        data, text = run("nccl-kernels", [], session)
        # Non-NCCL kernels are always listed (issue 33): one may hold the GPU NCCL needs.
        self.assertEqual(data["other_kernels"], document["other_kernels"])
        self.assertEqual(text.splitlines()[:5], [
            "kernel 0 on device 0 (grid 6, Active, focus): AllReduce Sum f32 RING LL",
            "    (24,1,1) blocks x (544,1,1) threads; channel mask 0xffffff",
            "    comm 0x91a16347ba1dcfd3 rank 0/2 (0x55bff057a010) [kernel argument comm == ncclComm.devComm]",
            "    => waiting for data from rank 1 (24 of 24 blocks)",
            "    blocks 0-23 (channels 0-23) RING SIMPLE: waiting for data from rank 1 at step 24 "
            "(nothing received since the kernel started; head is in rank 1's memory)"])
        self.assertIn("kernel 1 on device 0: myKernel(int*) (not NCCL)", text)
        self.assertEqual(run("nccl-kernels", ["--all"], session), (data, text))  # kept for old scripts

    def test_non_dict_garbage_does_not_crash_renderers(self):
        document = {"schema": "ncclscope.state/1", "communicators": [
            {"address": "0x10", "channels": [{"id": 0, "ring": None, "tree": {"up": None, "down": None}}],
             "health": None, "seq_launched": None, "proxy_ops": [{"subs": None}],
             "unavailable": {"health": "0x20: short read"}}]}
        session = FakeSession(document)
        for name, argv in [("nccl-state", []), ("nccl-comm", ["#0"]), ("nccl-ring", []), ("nccl-proxy", [])]:
            _data, text = run(name, argv, session)
            self.assertTrue(text.endswith("\n"), name)
        _data, text = run("nccl-state", [], session)
        self.assertIn("health <unreadable 0x20: short read>", text)


if __name__ == "__main__":
    unittest.main()
