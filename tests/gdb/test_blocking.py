"""blocked_in classification of host stacks (no gdb needed)."""
import unittest

from ncclscope.blocking import classify_blocked_in


class BlockingTest(unittest.TestCase):
    def test_stream_sync_below_driver_frames(self):
        frames = ["ioctl", None, "??", "cudaStreamSynchronize", "main"]
        self.assertEqual(classify_blocked_in([{"function": f} for f in frames]), "cudaStreamSynchronize")

    def test_closest_match_to_the_top_wins(self):
        self.assertEqual(classify_blocked_in(["sched_yield", "cudaStreamSynchronize", "ncclCommInitRank"]),
                         "cudaStreamSynchronize")
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

    def test_libc_waits_only_near_the_top(self):
        self.assertEqual(classify_blocked_in(["__GI___clock_nanosleep", "__GI___nanosleep", "usleep", "main"]),
                         "sleep")
        self.assertEqual(classify_blocked_in(["epoll_wait", "loop"]), "poll/epoll")
        self.assertEqual(classify_blocked_in(["compute", "f", "g", "poll"]), "user-code")

    def test_empty_is_unknown(self):
        self.assertEqual(classify_blocked_in([]), "unknown")
        self.assertEqual(classify_blocked_in(None), "unknown")


if __name__ == "__main__":
    unittest.main()
