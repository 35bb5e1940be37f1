"""What a page shows of a model call, as HTML: what changed between two calls (views/reading.py finds it), and one
event of a call. The run and comparison pages show calls; the replay page, changes.
"""
from collections import Counter

from models.services.retry import describe
from tools.approval import approval_line
from views.pages.parts import Store, esc, folded, plural, preview
from views.reading import NOTICES, Change

# ---------------------------------------------------------------- what changed between two calls

REBUILT = ("rebuilt from the trace by today's policy code, and not what this call sent: its digest differs from the "
           "one the trace records (the policy changed since the run)")


def change_line(found: list[Change]) -> str:
    """The changes counted by tag, in one line: `+2 added · −1 dropped · 1 elided`."""
    tally = Counter(change.tag for change in found)
    signs = {"added": "+", "dropped": "−"}
    tags = ["added", "dropped", "elided", "marker", "summarised", "pinned", "instructions"]
    line = " · ".join(f'<span class="tag {tag}">{signs.get(tag, "")}{tally[tag]} {tag}</span>'
                      for tag in tags if tally[tag])
    return line or "nothing changed"


def change_list(store: Store, found: list[Change]) -> str:
    items = []
    for change in found:
        label = (f'<span class="tag {change.tag}">{change.tag}</span> {esc(change.role)} · {esc(change.kind)} · '
                 f'{change.tokens:,} tokens · <q>{preview(change.text)}</q>')
        items.append(f"<li>{folded(store, change.text, label, 'change ' + change.tag)}</li>")
    return f'<ul class="changes">{"".join(items)}</ul>'


# ---------------------------------------------------------------- one event of a call

def call_event(store: Store, event: dict, seconds: float | None = None) -> str:
    """One event of a call: the reply's parts, the observation, a note pinned, a retry, an error, the usage (with
    how long the call took, `seconds`, when known)."""
    kind = event["type"]
    if kind == "reply":
        extra = []
        if event.get("blocked"):
            extra.append(f'<p class="error">the reply was blocked: {esc(event["blocked"])}</p>')
        raw = event.get("raw")
        if raw and raw != event["text"]:
            extra.append(folded(store, raw, "the model wrote on, past an Observation of its own: "
                                            f"{len(raw) - len(event['text']):,} more characters, cut before anything "
                                            "saw them", "raw"))
        return folded(store, event["text"], "reply as written", "reply") + "".join(extra)
    if kind in ("thought", "action", "answer"):
        return f'<p class="{kind}"><b>{kind.capitalize()}:</b> {esc(event["text"])}</p>'
    if kind == "observation":
        text = event["text"]
        css = "observation failed" if text.startswith(("Error", "Warning", "Declined")) else "observation"
        label = f'<b>Observation{esc(event.get("step", ""))}</b> ({plural(len(text), "character")}): {preview(text)}'
        return folded(store, text, label, css)
    if kind == "note":
        what = (f'pinned: {esc(event.get("text", ""))}' if event.get("op") == "pin"
                else f'unpinned note {esc(event.get("index"))}')
        return f'<p class="note">note {what}</p>'
    if kind == "usage":
        took = f" · {seconds:.2f} s" if seconds is not None else ""
        said = ("counted locally" if event.get("counted_locally") else "billed" if store.billed
                else "counted, nothing billed")
        return (f'<p class="usage">{said}: {event["input_tokens"]:,} tokens in, {event["output_tokens"]:,} out'
                + (f' ({event["thoughts_tokens"]:,} thinking)' if event.get("thoughts_tokens") else "") + f"{took}</p>")
    if kind == "error":
        return f'<p class="error">error: {esc(event.get("message", ""))}</p>'
    if kind == "forget":
        steps = len(event.get("replies", []))
        return (f'<p class="note">forgot {plural(steps, "earlier step")} mentioning '
                f'<q>{esc(event.get("what", ""))}</q></p>')
    if kind == "approval":
        return f'<p class="approval {esc(event.get("decision", ""))}"><b>Approval:</b> {esc(approval_line(event))}</p>'
    if kind in NOTICES:
        try:
            line = describe(event)
        except (KeyError, TypeError, ValueError):  # an event missing a field the one-line form needs
            line = f"{kind}: " + " · ".join(f"{name} {value}" for name, value in event.items()
                                            if name not in ("type", "t"))

        return f'<p class="notice">{esc(line)}</p>'
    return ""
