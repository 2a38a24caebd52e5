"""The snapshot check of `set ncclscope snapshot` (no gdb needed)."""
import json
import os
import unittest

from ncclscope.validate import check_state_document

DATA = os.path.join(os.path.dirname(__file__), "data")


def good():
    with open(os.path.join(DATA, "state_two_comms.json"), encoding="utf-8") as handle:
        return json.load(handle)


class CheckStateDocumentTest(unittest.TestCase):
    def test_the_hand_written_snapshot_passes(self):
        self.assertIsNone(check_state_document(good()))

    def test_unknown_schema_versions_are_refused(self):
        document = good()
        document["schema"] = "ncclscope.state/99"
        self.assertEqual(check_state_document(document),
                         'schema: "ncclscope.state/99" is not ncclscope.state/1 (a newer or foreign document?)')
        del document["schema"]
        self.assertIn("schema: missing", check_state_document(document))

    def test_the_first_bad_field_is_named_with_its_path(self):
        document = good()
        document["communicators"][1]["channels"][0]["ring"]["user_ranks"][2] = "x"
        self.assertEqual(check_state_document(document),
                         "communicators[1].channels[0].ring.user_ranks[2]: expected an integer or null, got a string")

    def test_booleans_are_not_integers(self):
        document = good()
        document["communicators"][0]["rank"] = True
        self.assertEqual(check_state_document(document),
                         "communicators[0].rank: expected an integer or null, got a boolean")

    def test_library_lists_are_checked(self):
        document = good()
        document["nccl"]["libraries"] = [{"index": 0, "library": "/a/libnccl.so.2", "communicators": 2},
                                         {"index": 1, "library": "/b/libnccl.so.2", "communicators": "two"}]
        document["communicators"][0]["library"] = {"index": 0, "path": "/a/libnccl.so.2"}
        self.assertEqual(check_state_document(document),
                         "nccl.libraries[1].communicators: expected an integer or null, got a string")
        document["nccl"]["libraries"][1]["communicators"] = None
        self.assertIsNone(check_state_document(document))
        document["communicators"][1]["library"] = {"index": "1"}
        self.assertEqual(check_state_document(document),
                         "communicators[1].library.index: expected an integer or null, got a string")

    def test_unknown_keys_are_allowed(self):
        document = good()
        document["communicators"][0]["added_by_a_newer_writer"] = {"x": [1]}
        self.assertIsNone(check_state_document(document))

    def test_deep_nesting_is_refused_not_walked(self):
        deep = []
        for _ in range(200):
            deep = [deep]
        document = good()
        document["recorder"] = deep
        self.assertIn("nested deeper than 64 levels", check_state_document(document))

    def test_not_an_object(self):
        self.assertEqual(check_state_document([1]), "document: expected an object, got a list")


if __name__ == "__main__":
    unittest.main()
