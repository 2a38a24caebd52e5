"""blocked_in of stacks gdb unwound: the library's classifier through the C API (no gdb needed)."""
import unittest

from native_library import built_library


def classify_blocked_in(frames, name=None):
    frames = [frame if isinstance(frame, dict) else {"function": frame} for frame in frames or []]
    return built_library().classify_threads([{"name": name, "frames": frames}])[0]


class BlockingTest(unittest.TestCase):
    def test_stream_sync_below_driver_frames(self):
        frames = ["ioctl", None, "??", "cudaStreamSynchronize", "main"]
        self.assertEqual(classify_blocked_in([{"function": f} for f in frames]), "cudaStreamSynchronize")

    def test_nccl_call_then_cuda_wait(self):
        # The library prefers the NCCL call the program made (stacks/thread_stacks.h, level 1) over
        # the CUDA wait inside it; the old Python classifier said cudaStreamSynchronize here.
        self.assertEqual(classify_blocked_in(["sched_yield", "cudaStreamSynchronize", "ncclCommInitRank"]),
                         "ncclCommInitRank")
        self.assertEqual(classify_blocked_in(["poll", "ncclCommInitRankFunc(ncclAsyncJob*)", "main"]),
                         "ncclCommInitRank")

    def test_proxy_threads(self):
        self.assertEqual(classify_blocked_in(["poll", "ncclProxyService(void*)", "start_thread"]),
                         "nccl-proxy-service")
        self.assertEqual(classify_blocked_in(["sched_yield", "ncclProxyProgress(void*)"]),
                         "nccl-proxy-progress")

    def test_namespaced_and_driver_names(self):
        self.assertEqual(classify_blocked_in(["cuEventSynchronize"]), "cudaEventSynchronize")
        self.assertEqual(classify_blocked_in(["ns::bootstrapNetAccept(int)"]), "nccl-bootstrap")
        self.assertEqual(classify_blocked_in(["ncclGroupEndInternal(ncclSimInfo*)"]), "nccl-group-end")

    def test_libc_waits(self):
        self.assertEqual(classify_blocked_in(["__GI___clock_nanosleep", "__GI___nanosleep", "usleep", "main"]),
                         "sleep")
        self.assertEqual(classify_blocked_in(["epoll_wait", "loop"]), "poll/epoll")
        # The library counts a waiting call at any depth (the old Python classifier: top 3 only).
        self.assertEqual(classify_blocked_in(["compute", "f", "g", "poll"]), "poll/epoll")

    def test_empty_is_unknown(self):
        self.assertEqual(classify_blocked_in([]), "unknown")
        self.assertEqual(classify_blocked_in(None), "unknown")


if __name__ == "__main__":
    unittest.main()
