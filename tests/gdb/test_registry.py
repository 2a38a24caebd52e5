"""The argparse-based command declarations (no gdb needed)."""
import unittest

from ncclscope.registry import COMMANDS, HelpShown, UsageError, split_arguments

EXPECTED_COMMANDS = ["nccl-state", "nccl-comm", "nccl-ring", "nccl-proxy", "nccl-threads", "nccl-kernels",
                     "nccl-numerics", "nccl-audit"]


class RegistryTest(unittest.TestCase):
    def test_every_command_is_declared_with_json_and_help(self):
        self.assertEqual(list(COMMANDS), EXPECTED_COMMANDS)
        for name, spec in COMMANDS.items():
            help_text = spec.help_text()
            self.assertIn("usage: %s" % name, help_text)
            self.assertIn("--json", help_text)
            self.assertTrue(spec.summary.endswith("."), name)

    def test_json_flag(self):
        self.assertTrue(COMMANDS["nccl-state"].parse(["--json"]).json)
        self.assertFalse(COMMANDS["nccl-state"].parse([]).json)

    def test_positional_and_options(self):
        args = COMMANDS["nccl-comm"].parse(["0x6db0a96d9cb7fc37", "--rank", "1", "--json"])
        self.assertEqual(args.selector, ["0x6db0a96d9cb7fc37"])
        self.assertEqual(args.rank, 1)
        self.assertTrue(args.json)
        self.assertEqual(COMMANDS["nccl-ring"].parse([]).selector, [])
        self.assertEqual(COMMANDS["nccl-threads"].parse([]).frames, 6)

    def test_usage_errors_are_one_line_exceptions(self):
        with self.assertRaises(UsageError) as caught:
            COMMANDS["nccl-state"].parse(["--bogus"])
        self.assertEqual(str(caught.exception),
                         "nccl-state: unrecognized arguments: --bogus (try nccl-state --help)")
        with self.assertRaises(UsageError) as caught:
            COMMANDS["nccl-comm"].parse([])
        self.assertIn("the following arguments are required: ADDR|HASH|#INDEX", str(caught.exception))
        with self.assertRaises(UsageError):
            COMMANDS["nccl-threads"].parse(["--frames", "many"])
        with self.assertRaises(UsageError):
            COMMANDS["nccl-threads"].parse(["--source", "psychic"])

    def test_help_does_not_exit(self):
        with self.assertRaises(HelpShown) as caught:
            COMMANDS["nccl-ring"].parse(["--help"])
        self.assertIn("usage: nccl-ring [-h] [--json] [--expand] [HASH ...]", str(caught.exception))

    def test_split_arguments(self):
        self.assertEqual(split_arguments('#1 --rank 2 "a b"'), ["#1", "--rank", "2", "a b"])
        with self.assertRaises(UsageError):
            split_arguments('"unterminated')


if __name__ == "__main__":
    unittest.main()
