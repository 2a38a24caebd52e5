"""Text helpers shared by the renderers: escaping target strings, hex, unreadable values.

Pure Python (no gdb import) so it is unit-tested without a debugger.
"""

# Strings read from target memory (thread names, paths) may hold terminal
# escape sequences: never print them raw.
def escape_for_terminal(untrusted):
    """Control characters (C0, DEL, C1) become \\xNN, a backslash becomes \\\\.

    Bytes are decoded as UTF-8 first; undecodable bytes become \\xNN too.
    """
    if untrusted is None:
        return ""
    if isinstance(untrusted, (bytes, bytearray)):
        untrusted = bytes(untrusted).decode("utf-8", errors="surrogateescape")
    elif not isinstance(untrusted, str):
        untrusted = str(untrusted)
    out = []
    for character in untrusted:
        code = ord(character)
        if character == "\\":
            out.append("\\\\")
        elif code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0:
            out.append("\\x%02x" % code)
        elif 0xDC80 <= code <= 0xDCFF:
            # An undecodable byte kept by surrogateescape.
            out.append("\\x%02x" % (code - 0xDC00))
        else:
            out.append(character)
    return "".join(out)


def parse_number(text):
    """An integer from decimal or 0x-hex text, or None."""
    if isinstance(text, int):
        return text
    if not isinstance(text, str):
        return None
    text = text.strip().lower()
    try:
        if text.startswith("0x"):
            return int(text[2:], 16)
        if text.isdigit():
            return int(text, 10)
    except ValueError:
        return None
    return None


def hex_text(value):
    """"0x7f12ab" from an int or a hex string (already-hex strings are normalised)."""
    number = parse_number(value)
    if number is None:
        return escape_for_terminal(value)
    return "0x%x" % number


def unreadable_text(reason):
    """`<unreadable 0x...: reason>` from a reason of the document's `unavailable` map."""
    if not reason:
        return "<unreadable>"
    reason = escape_for_terminal(reason)
    if reason.startswith("0x"):
        return "<unreadable %s>" % reason
    return "<unreadable: %s>" % reason


def library_text(what):
    """A renderer for documents whose text the library wrote (the C API's "text" request)."""
    def render(document, _args, _session):
        return document.get("text") or "no %s text returned\n" % what
    return render


def library_view(view):
    """A renderer that asks the library for the text of one view of the data
    (snapshot/state_views.cc, the CLI's renderer): the extension renders nothing itself."""
    def render(data, args, session):
        options = {"expand": bool(getattr(args, "expand", False))}
        if getattr(args, "frames", None) is not None:
            options["frames"] = args.frames
        if view == "threads" and isinstance(data, dict):
            data = dict(data, target_kind=session.target_kind())
        context = session.cached_document() if view == "comm" else None
        return session.render_text(view, data, context, options)
    return render
