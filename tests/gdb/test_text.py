"""Escaping and number helpers (no gdb needed)."""
import unittest

from ncclscope.text import escape_for_terminal, hex_text, parse_number, unreadable_text


class EscapeTest(unittest.TestCase):
    def test_control_characters_become_hex_escapes(self):
        self.assertEqual(escape_for_terminal("evil\x1b[2Jname"), "evil\\x1b[2Jname")
        self.assertEqual(escape_for_terminal("a\nb\tc\x00"), "a\\x0ab\\x09c\\x00")

    def test_del_and_c1_controls_are_escaped(self):
        self.assertEqual(escape_for_terminal("x\x7fy\x9bz"), "x\\x7fy\\x9bz")

    def test_backslash_is_doubled_so_escapes_stay_unambiguous(self):
        self.assertEqual(escape_for_terminal("a\\x1b"), "a\\\\x1b")

    def test_printable_unicode_is_kept(self):
        self.assertEqual(escape_for_terminal("r\u00e9seau \u2192 ok"), "r\u00e9seau \u2192 ok")

    def test_invalid_utf8_bytes_are_escaped(self):
        self.assertEqual(escape_for_terminal(b"ab\xff\xfe\x1b"), "ab\\xff\\xfe\\x1b")
        self.assertEqual(escape_for_terminal(b"caf\xc3\xa9"), "caf\u00e9")

    def test_none_is_empty(self):
        self.assertEqual(escape_for_terminal(None), "")


class NumberTest(unittest.TestCase):
    def test_parse_number(self):
        self.assertEqual(parse_number("0x6db0a96d9cb7fc37"), 0x6DB0A96D9CB7FC37)
        self.assertEqual(parse_number("42"), 42)
        self.assertEqual(parse_number(" 0X1f "), 31)
        self.assertIsNone(parse_number("comm->rank"))
        self.assertIsNone(parse_number("0xzz"))
        self.assertIsNone(parse_number("-3"))

    def test_hex_text_normalises(self):
        self.assertEqual(hex_text("0x00ABC"), "0xabc")
        self.assertEqual(hex_text(255), "0xff")

    def test_unreadable_text(self):
        self.assertEqual(unreadable_text("0x7f10: not saved in core"), "<unreadable 0x7f10: not saved in core>")
        self.assertEqual(unreadable_text("userRanks is NULL"), "<unreadable: userRanks is NULL>")
        self.assertEqual(unreadable_text(None), "<unreadable>")
        self.assertEqual(unreadable_text("0x1: bad\x1b"), "<unreadable 0x1: bad\\x1b>")


if __name__ == "__main__":
    unittest.main()
