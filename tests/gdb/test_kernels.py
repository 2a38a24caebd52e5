"""nccl-kernels: parsing of cuda-gdb output and replays of real sessions recorded on 2x H200.

The bundles in data/kernel-replay/ were written by `nccl-kernels --record` under
cuda-gdb on real hung jobs (scripts/device-kernels-run.sh, docs/kernels.md): every
cuda-gdb command output and every host/device memory read. Replaying them runs the
same collector and the same native decoder on the same bytes, without a GPU.
"""

import json
import lzma
import os
import unittest

from native_library import built_library
from ncclscope import gdbparse, kernels, library

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "kernel-replay")

# Real `x/4gx (@global void*)ADDR` output from the probe run (2026-11-29, H200).
X_OUTPUT = ("0x7f82f5e00260:\t0x00007f830a800000\t0x00007f830a880000\n"
            "0x7f82f5e00270:\t0x00007f830ad30000\t0x0000000000000000\n")


class ParsingTest(unittest.TestCase):
    def test_x_words(self):
        self.assertEqual(gdbparse.parse_x_words(X_OUTPUT),
                         [0x7f830a800000, 0x7f830a880000, 0x7f830ad30000, 0])
        self.assertEqual(gdbparse.parse_x_words("0x400 <ncclShmem>:\t0x0000000000000018"), [24])
        self.assertEqual(gdbparse.parse_x_words("Cannot access memory at address 0x0"), [])


def load_bundle(name):
    with lzma.open(os.path.join(DATA, name + ".replay.json.xz"), "rt", encoding="utf-8") as handle:
        return json.load(handle)


class NeedsLibrary(unittest.TestCase):
    """Needs libncclscope.so (NCCLSCOPE_BUILD)."""

    def setUp(self):
        build = os.environ.get("NCCLSCOPE_BUILD", "")
        path = os.path.join(build, "lib", "libncclscope.so")
        if not build or not os.path.isfile(path):
            self.skipTest("no libncclscope.so in NCCLSCOPE_BUILD")
        self.lib = library.NativeLibrary(path)


class LibraryDecisionTest(NeedsLibrary):
    """The C API commands the collector asks (decisions: native/src/nccl/kernel_args.cc,
    tested there in tests/native/kernel_args_test.cc): the request shapes it sends."""

    def test_kernel_names(self):
        answer, _ = self.lib.run({"command": "kernel-names",
                                  "names": ["ncclDevKernel_AllReduce_Sum_f32_RING_LL()", "myKernel(float*, int)"]})
        self.assertEqual(answer["nccl"][0]["protocol"], "LL")
        self.assertIsNone(answer["nccl"][1])

    def test_kernel_args_from_parsed_words(self):
        dev_comm = 0x7f94d4800000
        words = gdbparse.parse_x_words("0x400:\t0x%016x\t0x0000000000ffffff\n0x410:\t0xffffffffffffffff\t0x0" % dev_comm)
        request = {"command": "kernel-args", "shared_words": [0] * 128 + words, "dev_comms": ["0x%x" % dev_comm],
                   "nblocks": 24, "args_layout": {"comm_offset": 0, "channel_mask_offset": 8, "size": 32}}
        answer, _ = self.lib.run(request)
        self.assertEqual(answer, {"found": True, "args_shared_offset": "0x400", "dev_comm": "0x7f94d4800000",
                                  "channel_mask": "0xffffff", "channel_id_offset": 0x420})
        request["nblocks"] = 23
        answer, _ = self.lib.run(request)
        self.assertFalse(answer["found"])
        self.assertIn("23-bit channel mask in 132 shared words", answer["reason"])


class ReplayTest(NeedsLibrary):
    """Reads only the bundles, no GPU and no CUDA."""

    def replay(self, name, kernels_output=None):
        bundle = load_bundle(name)
        if kernels_output is not None:
            bundle["commands"]["info cuda kernels"] = {"output": kernels_output}
        replay = kernels.Replay(bundle)
        request = dict(bundle["request"])
        request["profile_path"] = os.path.join(os.path.dirname(DATA), "..", "..", "..", "native", "profiles")
        return kernels.build_view(self.lib, replay.execute, request, replay.reader("host"), replay.reader("device"))

    def assert_waiting_for_rank1(self, document, nblocks, step, protocol):
        self.assertEqual(len(document["kernels"]), 1)
        kernel = document["kernels"][0]
        self.assertEqual(kernel["communicator_match"], "kernel argument comm == ncclComm.devComm")
        self.assertEqual(kernel["communicator"]["rank"], 0)
        self.assertEqual(kernel["channel_mask"], hex((1 << nblocks) - 1))
        self.assertEqual([block["channel"] for block in kernel["blocks"]], list(range(nblocks)))
        self.assertTrue(all(block["channel_in_shared"] == block["channel"] for block in kernel["blocks"]))
        self.assertEqual({block["protocol"] for block in kernel["blocks"]}, {protocol})
        self.assertEqual(kernel["waits"], [{"kind": "waiting-for-data", "peer": 1, "blocks": nblocks,
                                            "text": "waiting for data from rank 1 (%d of %d blocks)"
                                                    % (nblocks, nblocks)}])
        for block in kernel["blocks"]:
            waiting = [wait for wait in block["waits"] if wait["kind"] == "waiting-for-data"]
            self.assertEqual([(wait["peer"], wait["step"], wait["direction"]) for wait in waiting],
                             [(1, step, "recv")])
        return kernel

    def test_skip_collective_nvlink_simple(self):
        # Rank 1 never called its 4th AllReduce: every channel of rank 0 waits on rank 1.
        document = self.replay("skip-collective-rank0")
        kernel = self.assert_waiting_for_rank1(document, 24, 24, "SIMPLE")
        self.assertEqual(kernel["nccl"]["protocol"], "LL")  # the kernel's name; it runs SIMPLE
        # Each block's channel neighbours, as nccl-ring printed them in the same session.
        peers = [block["peers"] for block in kernel["blocks"]]
        self.assertTrue(all(p["ring_prev"] == 1 and p["ring_next"] == 1 for p in peers))
        self.assertEqual([p["tree_up"] for p in peers[:12]], [-1] * 6 + [1] * 6)
        self.assertEqual(peers[0]["tree_down"], [1])
        self.assertIn("blocks 6-11 (channels 6-11; ring 1 -> me -> 1, tree up 1) RING SIMPLE: "
                      "waiting for data from rank 1 at step 24",
                      built_library().render_text("kernels", document))

    def test_skip_collective_ll128(self):
        self.assert_waiting_for_rank1(self.replay("skip-collective-ll128-rank0"), 24, 6, "LL128")

    def test_skip_collective_net_reads_the_exact_head(self):
        kernel = self.assert_waiting_for_rank1(self.replay("skip-collective-net-rank0"), 2, 24, "SIMPLE")
        # NET: the receiver's head is in this process's (host) memory, so the step is exact.
        self.assertEqual(kernel["blocks"][0]["waits"][0]["text"],
                         "waiting for data from rank 1 at step 24 (nothing received since the kernel started)")

    def test_culprit_rank_has_no_kernel(self):
        for name in ("skip-collective-rank1", "mismatched-collective-rank1"):
            document = self.replay(name)
            self.assertEqual(document["kernels"], [])
            self.assertEqual(document["total_kernels"], 0)

    def test_mismatched_collective_is_not_guessed(self):
        # Rank 1's ReduceScatter posted 4 steps into rank 0's AllReduce: the wait cannot be proven.
        kernel = self.replay("mismatched-collective-rank0")["kernels"][0]
        self.assertEqual(kernel["waits"], [])
        self.assertEqual({block["state"] for block in kernel["blocks"]}, {"unknown"})
        self.assertIn("rank 1 posted 4 steps since the kernel started at step 24",
                      kernel["blocks"][0]["waits"][0]["text"])

    def replay_spin_kernel(self, device):
        """Rank 1's real host memory (skip-collective: cuda_dev 1, AllReduce launched 3 times) with
        cuda-gdb 13's row for PyTorch's torch.cuda._sleep kernel on `device` in place of "No CUDA
        kernels." (tests/gdb/data/gpu-busy/, in the columns of the recorded NCCL rows)."""
        with open(os.path.join(os.path.dirname(DATA), "gpu-busy", "spin-kernel.info-cuda-kernels.txt")) as handle:
            row = handle.read().replace("   1 1201", "   %d 1201" % device)
        return self.replay("skip-collective-rank1", row)

    def test_busy_gpu_names_the_kernel_and_the_work_of_its_device(self):
        document = self.replay_spin_kernel(device=1)
        self.assertEqual(document["kernels"], [])
        self.assertEqual(document["total_kernels"], 1)
        other, = document["other_kernels"]
        self.assertEqual(other["name"], "at::cuda::(anonymous namespace)::spin_kernel")
        self.assertEqual((other["device"], other["grid_dim"], other["block_dim"]), (1, "(1,1,1)", "(1,1,1)"))
        self.assertIsNone(other["stream"])
        queued, = other["queued_behind"]
        self.assertEqual((queued["comm_hash"], queued["rank"], queued["relation"]), ("0x91a16347ba1dcfd3", 1, "inferred"))
        self.assertEqual(queued["seq_launched"]["AllReduce"], 3)
        text = built_library().render_text("kernels", document)
        self.assertIn("kernel 0 on device 1: at::cuda::(anonymous namespace)::spin_kernel() (not NCCL)\n"
                      "    GPU 1 runs at::cuda::(anonymous namespace)::spin_kernel (grid (1,1,1), block (1,1,1), Active, "
                      "stream unavailable: cuda-gdb's info cuda kernels shows no stream); NCCL work that may be queued "
                      "behind it (inferred: same device; cuda-gdb shows no stream, so neither the order nor the newest "
                      "launch's start is proven here): comm 0x91a16347ba1dcfd3 rank 1/2 (0x562572a40390) launched "
                      "AllReduce=3, no kernel of it resident\n0 NCCL kernels (1 kernel resident)", text)

    def test_real_spin_kernel_capture(self):
        # corefiles/order-gpu-spin/truth/gdb/ (H200, 2026-12-06): cuda-gdb on rank 2, whose GPU runs
        # torch.cuda._sleep's kernel ahead of its step-4 all_reduces on world, tp and dp; the
        # communicators and ranks are the ones rank2.state.json (a host read, no cuda-gdb) lists.
        path = os.path.join(DATA, "..", "..", "..", "..", "corefiles", "order-gpu-spin", "truth", "gdb",
                            "rank2.nccl-kernels.replay.json.xz")
        if not os.path.isfile(path):
            self.skipTest("corefiles/order-gpu-spin/truth/gdb missing")
        with lzma.open(path, "rt", encoding="utf-8") as handle:
            bundle = json.load(handle)
        replay = kernels.Replay(bundle)
        request = dict(bundle["request"])
        request["profile_path"] = os.path.join(os.path.dirname(DATA), "..", "..", "..", "native", "profiles")
        document = kernels.build_view(self.lib, replay.execute, request, replay.reader("host"), replay.reader("device"))
        other, = document["other_kernels"]
        self.assertEqual((other["name"], other["device"], other["grid_dim"]),
                         ("at::cuda::(anonymous namespace)::spin_kernel", 0, "(1,1,1)"))
        self.assertEqual(sorted((work["comm_hash"], work["rank"], work["nranks"], work["seq_launched"]["AllReduce"])
                                for work in other["queued_behind"]),
                         [("0x16a64bcb3dac4d30", 2, 4, 4), ("0x2e6f66a4a4ccaed0", 0, 2, 4),
                          ("0x770e1284d81735b7", 1, 2, 4)])

    def test_busy_gpu_on_another_device_queues_nothing(self):
        document = self.replay_spin_kernel(device=0)
        self.assertEqual(document["other_kernels"][0]["queued_behind"], [])


if __name__ == "__main__":
    unittest.main()
