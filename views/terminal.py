"""Text from a model, a tool, a server or a file, made safe to print on a terminal.

Such text may hold terminal commands: an escape sequence can set the window title, clear the screen or write
the clipboard. Everything the program prints of it goes through `clean`; the trace keeps it as it came.
"""
import re

# Terminal commands, removed whole: OSC strings (window title, clipboard, hyperlinks) up to BEL or ST, CSI
# sequences (cursor, colours, clearing), other escapes (character sets, modes); then any C0 or C1 control character left,
# except newline and tab.
ESCAPES = re.compile(r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
                     r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
                     r"|\x1b[ -/]*[0-~]?"
                     r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: object) -> str:
    """Text made safe to print on a terminal: escape sequences and control characters dropped, newlines and tabs kept."""
    return ESCAPES.sub("", str(text))
