"""Text from a model, a tool, a server or a file, made safe to print on a terminal.

Such text may hold terminal commands: an escape sequence can set the window title, clear the screen or write
the clipboard. Everything the program prints of it goes through `clean`; the trace keeps it as it came.
"""
import re

from redaction import redacted

# Terminal commands, removed whole: OSC strings (window title, clipboard, hyperlinks) up to BEL or ST, CSI
# sequences (cursor, colours, clearing), other escapes (character sets, modes); then any C0 or C1 control character
# left, except newline and tab.
ESCAPES = re.compile(r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
                     r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
                     r"|\x1b[ -/]*[0-~]?"
                     r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


# Direction embeddings, overrides and isolates: they reorder the text after them as a terminal shows it, so that a
# name or an argument can display reversed. Each is shown as its code point. The marks (U+200E, U+200F, U+061C) are
# left: right-to-left text uses them, and they reorder nothing but the neutral characters beside them.
DIRECTIONS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def clean(text: object) -> str:
    """Text made safe to print on a terminal: escape sequences and control characters dropped, newlines and tabs
    kept, direction characters shown as their code points (<U+202E>), and no secret in it (redaction.py)."""
    return DIRECTIONS.sub(_code_point, ESCAPES.sub("", redacted(str(text))))


def _code_point(match: re.Match) -> str:
    return f"<U+{ord(match.group()):04X}>"


# Each control character but newline, tab and carriage return, for text in a page or an SVG file.
CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def visible(text: object) -> str:
    """Text for a page or an SVG file: each control character shown where it stands, as its picture (␛ for ESC)
    or, for DEL and the C1 controls, as its code (\\x9b), so that nothing after it can be taken into a command."""
    return CONTROLS.sub(_picture, str(text))


def _picture(match: re.Match) -> str:
    code = ord(match.group())
    return chr(0x2400 + code) if code < 0x20 else f"\\x{code:02x}"
