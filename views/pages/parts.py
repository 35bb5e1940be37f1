"""The pieces every page is built from: the store that holds each text once, escaping, folded sections, bars,
tables, and the document around them, with the style (style.css) and script (script.js) inlined.

A page stays small because every distinct text is stored once: a JSON block at the end holds the texts, the
parts (role, kind, text, tokens) and each context as a list of parts; a folded section names what it holds,
and a few lines of plain script put the text in when it is opened (as text, never as markup). What is shown
unfolded is escaped here. As a last guard, the value of any API key in the environment is blanked out.
"""
import html
import json
from importlib import resources

from models import Message, backend_record
from policies import BUCKET_NAMES
from redaction import MASK, redacted, secrets
from tokens import TokenCounter
from views.terminal import CONTROLS, visible

PREVIEW = 140  # characters of a text shown before it is unfolded
STYLE = resources.files(__package__).joinpath("style.css").read_text(encoding="utf-8")
# Fills a folded section from the page's JSON block the first time it opens. Text goes in as textContent, so
# nothing a model or a tool wrote can become markup.
SCRIPT = resources.files(__package__).joinpath("script.js").read_text(encoding="utf-8")


# ---------------------------------------------------------------- the page's store of texts

class Store:
    """The texts, parts and contexts a page refers to, each stored once, written into the page as one JSON block."""

    def __init__(self, counter: TokenCounter, backend: str = ""):
        self.counter = counter
        # what a page calls a call's usage: billed, or counted (nothing billed)
        self.billed = not backend_record(backend).free
        self.texts: dict[str, int] = {}
        self.parts: dict[tuple, int] = {}
        self.contexts: dict[tuple, int] = {}

    def text(self, text: str) -> int:
        return self.texts.setdefault(text, len(self.texts))

    def context(self, messages: list[Message]) -> int:
        """Store a context as its parts, in order; returns its number."""
        parts = tuple(self.parts.setdefault((message.role, part.kind, self.text(part.text),
                                             self.counter.count(part.text)), len(self.parts))
                      for message in messages for part in message.parts)
        return self.contexts.setdefault(parts, len(self.contexts))

    def script(self) -> str:
        data = {"texts": list(self.texts), "parts": [list(part) for part in self.parts],
                "contexts": [list(parts) for parts in self.contexts]}
        return (f'<script type="application/json" id="page-data">{inert_json(data)}</script>\n'
                f'<script>\n{SCRIPT}</script>')


def inert_json(data) -> str:
    """JSON that cannot end the script element it sits in: <, > and & become \\u escapes, which JSON reads back."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))  # C0 controls are escaped; DEL and C1 not
    for character in "<>&\u2028\u2029":
        text = text.replace(character, f"\\u{ord(character):04x}")
    return CONTROLS.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def esc(text: object) -> str:
    """Text as HTML, each control character shown where it stands (views.terminal.visible)."""
    return html.escape(visible(text), quote=True)


def preview(text: str, limit: int = PREVIEW) -> str:
    """The start of a text on one line, escaped."""
    line = " ".join(text.split())
    return esc(line if len(line) <= limit else line[: limit - 1] + "…")


def folded(store: Store, text: str, label: str, css: str = "") -> str:
    """A folded section whose full text comes from the store when it is opened; `label` is HTML already."""
    return (f'<details class="text {css}" data-text="{store.text(text)}"><summary>{label}</summary>'
            f'<div class="body"></div></details>')


def folded_context(context: int, label: str) -> str:
    return (f'<details class="context" data-context="{context}"><summary>{label}</summary>'
            '<div class="body"></div></details>')


def bar(tokens: dict, scale: int, small: bool = False) -> str:
    """A bar stacked by bucket, as wide as its total against `scale`; each piece names its bucket and count.
    A small bar is followed by its total, so it takes at most four fifths of the width."""
    total = sum(tokens.values())
    width = (80 if small else 100) * total / scale if scale else 0
    pieces = "".join(f'<span class="b-{name}" style="width:{100 * tokens[name] / total:.2f}%" '
                     f'title="{name}: {tokens[name]:,} tokens"></span>'
                     for name in BUCKET_NAMES if tokens.get(name) and total)
    size = f'<span class="size">{total:,}</span>' if small else ""
    return f'<div class="bar{" small" if small else ""}" style="width:{max(width, 0.5):.2f}%">{pieces}</div>{size}'


def plural(number: int, word: str) -> str:
    return f"{number:,} {word}{'' if number == 1 else 's'}"


def bucket_counts(tokens: dict) -> str:
    return " · ".join(f'<span class="key b-{name}"></span>{name} {tokens[name]:,}'
                      for name in BUCKET_NAMES if tokens.get(name))


def legend(counter_name: str) -> str:
    keys = " ".join(f'<span class="key b-{name}"></span>{name}' for name in BUCKET_NAMES)
    return f'<p class="legend">{keys} · token counts: {esc(counter_name)}</p>'


def table(columns: list[str], rows: list[list[str]], css: str = "", text_columns: int = 1) -> str:
    """An HTML table; the cells are HTML already, the column names are escaped here. The first `text_columns`
    columns are text; the others are numbers, aligned right."""
    head = "".join(f"<th>{esc(column)}</th>" for column in columns)
    body = "".join("<tr>" + "".join(f"<td{' class=n' if i >= text_columns else ''}>{cell}</td>"
                                    for i, cell in enumerate(row)) + "</tr>" for row in rows)

    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def page(title: str, body: list[str], store: Store) -> str:
    """The whole document, with API keys found in the environment blanked out as a last guard. It holds no control
    character a terminal could obey (`cat page.html`): each text made them visible where it stood (`esc`,
    `inert_json`), so that none can take the page's own markup with it."""
    document = (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
                f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
                f'<title>{esc(title)}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n'
                '<nav class="tools"><button type="button" id="open-all" title="contexts open one at a time: '
                'each is a whole prompt">open all but contexts</button> '
                '<button type="button" id="close-all">close all</button> '
                '<form id="find"><input type="search" name="text" placeholder="find in folded texts" '
                'aria-label="open every fold whose text holds this"> <output id="found"></output></form></nav>\n'
                '<noscript><p>Folded texts need JavaScript to open; everything else is here.</p></noscript>\n'
                + "\n".join(body) + "\n" + store.script() + "\n</body>\n</html>\n")
    return redact(document)


def inline(document: str, height: int = 640) -> str:
    """A page to show inside a notebook's output: in a frame of its own, so that its style and script touch
    nothing of the notebook's, and the notebook's nothing of its."""
    return (f'<iframe srcdoc="{html.escape(document, quote=True)}" title="TinyReAct page" '
            f'style="width: 100%; height: {height}px; border: 1px solid #ccc"></iframe>')


def redact(text: str) -> str:
    """Every secret set in the environment blanked out (redaction.py), as written and as the page escapes it."""
    for secret in secrets():
        text = text.replace(secret, MASK).replace(esc(secret), MASK)
    return redacted(text)
