"""See inside: one self-contained HTML page of a run or a chat, a comparison of policies, or a replay.

Three pure functions turn data into one HTML string that needs no network and no framework, opens from
`file://` and prints:

    run_page(header, events, counter)              a trace: what the model was shown at every call, and why
    compare_page(traces, counter, expect)          one trace per policy, side by side, call by call
    replay_page(header, events, reports, counter)  a replay: context sizes, fact states, probe answers

Each call shows what the model was shown as a bar stacked by bucket (the counts are the trace's own `context`
events), the full context folded, and what changed since the call before. The context is rebuilt with the
policy the trace names, from the events before that call's `context` event: the very call that made it.

A page stays small because every distinct text is stored once: a JSON block at the end holds the texts, the
parts (role, kind, text, tokens) and each context as a list of parts; a folded section names what it holds,
and a few lines of plain script put the text in when it is opened (as text, never as markup). What is shown
unfolded is escaped here. As a last guard, the value of any API key in the environment is blanked out.
"""
import html
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from agent import call_seconds, outcome, priced, summarise
from experiments.facts import Fact, ProbePoint, call_points, load_facts, matches, probe_points
from experiments.probe import VERDICTS, ProbeAnswer, tally
from experiments.replay import PolicyReplay, Summaries, probe_calls, summarised
from models import Message
from models.prices import FREE, dollars
from models.services.retry import describe
from policies import BASELINE, BUCKET_NAMES, make_policy
from policies.elide import is_elided
from views.reports import caching_cells, context_chart, frontier, frontier_sentence, tradeoff_chart, tradeoff_panels
from redaction import MASK, redacted, secrets
from views.terminal import CONTROLS, visible
from tokens import TokenCounter, local_counter

COLOURS = {"instructions": "#8c96a8", "tools": "#b39ddb", "user": "#4e79a7", "model": "#f28e2b",
           "observations": "#59a14f", "notes": "#e0b000", "markers": "#c0b5ae"}
PREVIEW = 140  # characters of a text shown before it is unfolded
NOTICES = ["retry", "config_fallback"]  # what a model backend reports during a call
SHOWN_ORDER = {"retry": 0, "config_fallback": 0, "thought": 1, "action": 2, "answer": 3, "reply": 4, "note": 5,
               "forget": 5, "observation": 6, "error": 7, "usage": 8}
# What replay says about a fact at a probe point (experiments.facts.fact_state) -> (CSS class, mark, words). A state added
# there needs one line here; one missing is shown as "?" with its name.
FACT_STATES = {
    "kept": ("kept", "✓", "kept: its exact text is in the context"),
    "partly": ("partly", "◐", "partly: in the context for some probe questions, not for others"),
    "cut": ("cut", "✂", "cut: the observation stating it was shown cut, without it"),
    "gone": ("gone", "✗", "gone: its exact text is not in the context"),
    "unstated": ("unstated", "–", "not stated yet at this point"),
}


# ---------------------------------------------------------------- the page's store of texts

class Store:
    """The texts, parts and contexts a page refers to, each stored once, written into the page as one JSON block."""

    def __init__(self, counter: TokenCounter, backend: str = ""):
        self.counter = counter
        self.billed = backend not in FREE  # what a page calls a call's usage: billed, or counted (nothing billed)
        self.texts: dict[str, int] = {}
        self.parts: dict[tuple, int] = {}
        self.contexts: dict[tuple, int] = {}

    def text(self, text: str) -> int:
        return self.texts.setdefault(text, len(self.texts))

    def context(self, messages: list[Message]) -> int:
        """Store a context as its parts, in order; returns its number."""
        parts = tuple(self.parts.setdefault((message.role, part.kind, self.text(part.text), self.counter.count(part.text)),
                                            len(self.parts))
                      for message in messages for part in message.parts)
        return self.contexts.setdefault(parts, len(self.contexts))

    def script(self) -> str:
        data = {"texts": list(self.texts), "parts": [list(part) for part in self.parts],
                "contexts": [list(parts) for parts in self.contexts]}
        return f'<script type="application/json" id="page-data">{inert_json(data)}</script>\n<script>{SCRIPT}</script>'


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
    return f'<details class="context" data-context="{context}"><summary>{label}</summary><div class="body"></div></details>'


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
    return " · ".join(f'<span class="key b-{name}"></span>{name} {tokens[name]:,}' for name in BUCKET_NAMES if tokens.get(name))


def legend(counter_name: str) -> str:
    keys = " ".join(f'<span class="key b-{name}"></span>{name}' for name in BUCKET_NAMES)
    return f'<p class="legend">{keys} · token counts: {esc(counter_name)}</p>'


def table(columns: list[str], rows: list[list[str]], css: str = "", text_columns: int = 1) -> str:
    """An HTML table; the cells are HTML already, the column names are escaped here. The first `text_columns`
    columns are text; the others are numbers, aligned right."""
    head = "".join(f"<th>{esc(column)}</th>" for column in columns)
    body = "".join("<tr>" + "".join(f"<td{' class=n' if i >= text_columns else ''}>{cell}</td>" for i, cell in enumerate(row))
                   + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def page(title: str, body: list[str], store: Store) -> str:
    """The whole document, with API keys found in the environment blanked out as a last guard. It holds no control
    character a terminal could obey (`cat page.html`): each text made them visible where it stood (`esc`,
    `inert_json`), so that none can take the page's own markup with it."""
    document = (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
                f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
                f'<title>{esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n'
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


# ---------------------------------------------------------------- reading a trace

@dataclass
class Call:
    """One model call and what it caused: the reply, its parts, the tool run and its observation, notices, errors."""
    number: int  # counted from 1 over the whole trace, as replay counts them
    index: int  # where its context event is (or its reply, in a trace without context events)
    context: dict | None
    events: list[dict] = field(default_factory=list)

    def first(self, kind: str) -> dict | None:
        return next((event for event in self.events if event["type"] == kind), None)

    def shown(self) -> list[dict]:
        """Its events in the order a page shows them: what the model wrote, then what it caused, then the bill."""
        return sorted(self.events, key=lambda event: SHOWN_ORDER.get(event["type"], 5))


def timeline(events: Sequence[dict]) -> list:
    """The trace as the items a page shows in order: Calls, and the events between them (questions, summaries,
    resets, new instructions, the TTL's finish request). Event types this page does not know are left out."""
    items, call, number = [], None, 0
    for index, event in enumerate(events):
        kind = event["type"]
        if kind in ("question", "reset", "instructions", "finish", "summary") or (
                kind == "usage" and event.get("purpose") == "summary"):  # a summary call: shown with its summary
            call = None
            items.append(event)
            continue
        # A call begins at its context event; in a trace without them, at the usage or reply after a reply.
        if kind == "context" or (kind in ("usage", "reply") and (call is None or call.first("reply"))):
            number += 1
            call = Call(number, index, event if kind == "context" else None)
            items.append(call)
            if kind == "context":
                continue
        if kind in ("reply", "thought", "action", "answer", "observation", "usage", "note", "forget", "error", *NOTICES):
            (call.events if call else items).append(event)
    return items


def questions(events: Sequence[dict]) -> list[tuple[int, int]]:
    """(start, end) of each question's events in the trace: from the question to the next question or reset."""
    starts = [i for i, event in enumerate(events) if event["type"] == "question"]
    bounds = []
    for start in starts:
        end = next((i for i in range(start + 1, len(events)) if events[i]["type"] in ("question", "reset")), len(events))
        bounds.append((start, end))
    return bounds


def seconds(events: Sequence[dict]) -> float:
    times = [event["t"] for event in events if isinstance(event.get("t"), (int, float))]
    return max(times) - min(times) if times else 0.0


class Contexts:
    """What the model was shown at each call, rebuilt with the policy each context event names; one policy object
    per name, so that rendering stays incremental along the trace."""

    def __init__(self, events: Sequence[dict]):
        self.events, self.policies = list(events), {}

    def at(self, call: Call) -> list[Message] | None:
        name = call.context["policy"] if call.context else None
        if name is None:
            return None
        if name not in self.policies:
            try:
                self.policies[name] = make_policy(name)
            except ValueError:  # a policy this version does not have: its counts are still in the trace
                self.policies[name] = None
        policy = self.policies[name]
        try:
            return policy.render(self.events[: call.index]) if policy else None
        except ValueError:  # events that begin mid-session (a Result's trace) hold no instructions to render from
            return None


# ---------------------------------------------------------------- what changed between two calls

@dataclass
class Change:
    tag: str  # added, dropped, elided, marker, summarised, pinned, instructions
    role: str
    kind: str
    text: str
    tokens: int


def changes(before: list[Message] | None, after: list[Message], count) -> list[Change]:
    """The parts of `after` that `before` did not have, and the parts it had that `after` lost, each tagged by what
    they are: the policy's own markers, summaries and notes are told apart from plain additions and drops."""
    def parts(messages):
        return Counter((message.role, part.kind, part.text) for message in messages or [] for part in message.parts)

    old, new = parts(before), parts(after)
    found = [Change("dropped", role, kind, text, count(text)) for role, kind, text in (old - new).elements()]
    for role, kind, text in (new - old).elements():
        tag = {"summary": "summarised", "notes": "pinned", "instructions": "instructions"}.get(kind, "added")
        if kind == "placeholder":
            tag = "marker"
        if is_elided(text):
            tag = "elided"
        found.append(Change(tag, role, kind, text, count(text)))
    return found


def change_line(found: list[Change]) -> str:
    """The changes counted by tag, in one line: `+2 added · −1 dropped · 1 elided`."""
    tally = Counter(change.tag for change in found)
    signs = {"added": "+", "dropped": "−"}
    tags = ["added", "dropped", "elided", "marker", "summarised", "pinned", "instructions"]
    line = " · ".join(f'<span class="tag {tag}">{signs.get(tag, "")}{tally[tag]} {tag}</span>' for tag in tags if tally[tag])
    return line or "nothing changed"


def change_list(store: Store, found: list[Change]) -> str:
    items = []
    for change in found:
        label = (f'<span class="tag {change.tag}">{change.tag}</span> {esc(change.role)} · {esc(change.kind)} · '
                 f'{change.tokens:,} tokens · <q>{preview(change.text)}</q>')
        items.append(f"<li>{folded(store, change.text, label, 'change ' + change.tag)}</li>")
    return f'<ul class="changes">{"".join(items)}</ul>'


# ---------------------------------------------------------------- the run page

def run_page(header: dict, events: Sequence[dict], counter: TokenCounter | None = None, title: str | None = None) -> str:
    """A run, or a whole chat: each question with its answer and counts at the top, then every call in order, with
    what the model was shown (a stacked bar, the full text folded), what changed since the call before, the reply,
    the tool run and its observation, retries and errors. `header` is the trace file's first line ({} for none)."""
    counter = counter or local_counter()
    store = Store(counter, str(header.get("backend", "")))
    asked = [event["text"] for event in events if event["type"] == "question"]
    kind = "Chat" if len(asked) > 1 else "Run"
    title = title or header.get("title") or (f"{kind}: {asked[0]}" + (f" and {len(asked) - 1} more" if len(asked) > 1
                                                                     else "") if asked else kind)
    items = timeline(events)
    calls = [item for item in items if isinstance(item, Call)]
    scale = max((sum(call.context["tokens"].values()) for call in calls if call.context), default=0)
    body = [f"<h1>{esc(title)}</h1>", trace_facts(header, events), outcome_table(events, header),
            legend(counter_name(events, counter))]
    contexts, before, policy = Contexts(events), None, None
    for item in items:
        if isinstance(item, Call):
            messages = contexts.at(item)
            if item.context and policy and item.context["policy"] != policy:
                body.append(f'<p class="between policy-change">The policy changes from {esc(policy)} to '
                            f'{esc(item.context["policy"])}</p>')
            body.append(call_section(store, item, messages, before, scale, counter))
            before = messages if messages is not None else before
            policy = item.context["policy"] if item.context else policy
        else:
            body.append(between_calls(store, item))
    return page(title, body, store)


def counter_name(events: Sequence[dict], counter: TokenCounter) -> str:
    """The counter that made the trace's counts, as its context events say; else the one given."""
    return next((event["counter"] for event in events if event["type"] == "context" and event.get("counter")), counter.name)


def trace_facts(header: dict, events: Sequence[dict]) -> str:
    facts = [("model", header.get("model")), ("policy", header.get("policy")),
             ("policies used", ", ".join(dict.fromkeys(e["policy"] for e in events if e["type"] == "context")) or None),
             ("recorded", header.get("created")), ("note", header.get("recorded"))]
    return '<p class="meta">' + " · ".join(f"{name}: {esc(value)}" for name, value in facts if value) + "</p>"


def outcome_table(events: Sequence[dict], header: dict | None = None) -> str:
    """Each question with its answer, stop reason, steps, calls, tokens (the cached part said), cost at list price
    where the model has one, and time; a total row for a chat."""
    header = header or {}
    model, backend = str(header.get("model", "")), str(header.get("backend", ""))

    def tokens_and_cost(part: Sequence[dict]) -> list[str]:
        usage = summarise(part)["usage"]
        cached = f" ({usage.cached_input_tokens:,} cached)" if usage.cached_input_tokens else ""
        cost = priced(part, model, backend) if model else None
        return [f'{usage.input_tokens:,}{cached} / {usage.output_tokens:,}',
                dollars(cost.dollars) if cost else "–"]

    rows = []
    for number, (start, end) in enumerate(questions(events), 1):
        part = events[start:end]
        answer, reason = outcome(part)
        counts = summarise(part)
        rows.append([str(number), esc(events[start]["text"]),
                     f'<b>{esc(answer)}</b>' if answer is not None else '<i>no answer</i>',
                     f'<span class="stop {reason}">{esc(reason)}</span>', str(counts["steps"]),
                     str(counts["model_calls"]) + (f' ({counts["summary_calls"]} summary)' if counts["summary_calls"] else ""),
                     *tokens_and_cost(part), f"{seconds(part):.1f} s"])
    if len(rows) > 1:  # the time spent answering: a chat's time between questions is the user's, not the agent's
        counts = summarise(events)
        answering = sum(seconds(events[start:end]) for start, end in questions(events))
        rows.append(["", "<b>all questions</b>", "", "", str(counts["steps"]), str(counts["model_calls"]),
                     *tokens_and_cost(events), f"{answering:.1f} s answering"])
    words = "tokens billed in / out" if backend not in FREE else "tokens in / out (counted, nothing billed)"
    return table(["#", "question", "answer", "stop", "steps", "calls", words, "cost at list price",
                  "time"], rows, "outcome", 4)


def call_section(store: Store, call: Call, messages: list[Message] | None, before: list[Message] | None,
                 scale: int, counter: TokenCounter) -> str:
    reply = call.first("reply")
    # A step is an action and its observation, as the terminal counts them; a reply with the answer is not one.
    step = (f" · step {reply['step']}" if call.first("action") else " · the answer" if call.first("answer")
            else f" · reply {reply['step']}") if reply else ""
    out = [f'<section class="call" id="call-{call.number}">']
    if call.context:
        tokens = call.context["tokens"]
        out.append(f'<h3>Call {call.number}{step} · policy {esc(call.context["policy"])} · '
                   f'{sum(tokens.values()):,} tokens shown</h3>')
        out.append(bar(tokens, scale))
        out.append(f'<p class="counts">{bucket_counts(tokens)}</p>')
    else:
        out.append(f"<h3>Call {call.number}{step}</h3>")
    if messages is not None:
        shown = sum(len(message.parts) for message in messages)
        out.append(folded_context(store.context(messages),
                                  f"What the model was shown: {plural(len(messages), 'message')}, {plural(shown, 'part')}"))
        found = changes(before, messages, counter.count)
        label = "Changed since the call before" if before is not None else "What the first call added"
        out.append(f'<div class="diff"><h4>{label}: {change_line(found)}</h4>{change_list(store, found)}</div>')
    elif call.context:
        out.append('<p class="warning">only its counts are shown: its context cannot be rebuilt from these events '
                   '(a policy this version does not have, or events that begin after the instructions)</p>')
    took = {id(event): call_seconds(call.context, event) for event in call.events if event["type"] == "usage"}
    out += [call_event(store, event, took.get(id(event))) for event in call.shown()]
    out.append("</section>")
    return "\n".join(part for part in out if part)


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
            extra.append(folded(store, raw, f"the model wrote on, past an Observation of its own: {len(raw) - len(event['text']):,} "
                                            "more characters, cut before anything saw them", "raw"))
        return folded(store, event["text"], "reply as written", "reply") + "".join(extra)
    if kind in ("thought", "action", "answer"):
        return f'<p class="{kind}"><b>{kind.capitalize()}:</b> {esc(event["text"])}</p>'
    if kind == "observation":
        text = event["text"]
        css = "observation failed" if text.startswith(("Error", "Warning")) else "observation"
        label = f'<b>Observation{esc(event.get("step", ""))}</b> ({plural(len(text), "character")}): {preview(text)}'
        return folded(store, text, label, css)
    if kind == "note":
        what = f'pinned: {esc(event.get("text", ""))}' if event.get("op") == "pin" else f'unpinned note {esc(event.get("index"))}'
        return f'<p class="note">note {what}</p>'
    if kind == "usage":
        took = f" · {seconds:.2f} s" if seconds is not None else ""
        said = "counted locally" if event.get("counted_locally") else "billed" if store.billed else "counted, nothing billed"
        return (f'<p class="usage">{said}: {event["input_tokens"]:,} tokens in, {event["output_tokens"]:,} out'
                + (f' ({event["thoughts_tokens"]:,} thinking)' if event.get("thoughts_tokens") else "") + f"{took}</p>")
    if kind == "error":
        return f'<p class="error">error: {esc(event.get("message", ""))}</p>'
    if kind == "forget":
        steps = len(event.get("replies", []))
        return f'<p class="note">forgot {plural(steps, "earlier step")} mentioning <q>{esc(event.get("what", ""))}</q></p>'
    if kind in NOTICES:
        try:
            line = describe(event)
        except (KeyError, TypeError, ValueError):  # an event missing a field the one-line form needs
            line = f"{kind}: " + " · ".join(f"{name} {value}" for name, value in event.items() if name not in ("type", "t"))
        return f'<p class="notice">{esc(line)}</p>'
    return ""


def between_calls(store: Store, event: dict) -> str:
    kind = event["type"]
    if kind == "question":
        return f'<h2 class="question">Question: {esc(event["text"])}</h2>'
    if kind == "reset":
        return '<h2 class="reset">A new conversation: the trace keeps the old one, the policies look only past here</h2>'
    if kind == "instructions":
        tools = len(re.findall(r"^\w+\(", event.get("tools", ""), re.M))  # one line per tool starts `name(`
        label = f"Instructions: {len(event['text']):,} characters{f', {tools} tools' if tools else ''}"
        return f'<div class="between">{folded(store, event["text"], label)}</div>'
    if kind == "finish":
        return f'<p class="between finish">The TTL is reached: the program asks for a last answer: <q>{esc(event["text"])}</q></p>'
    if kind == "summary":
        label = f"Summary written by the model for policy {esc(event.get('policy', ''))}, shown from now on in place of the steps it covers"
        return '<div class="between summary">' + folded(store, event["text"], label, "summary") + "</div>"
    if kind == "usage":
        return (f'<p class="between usage">a summary call: billed {event["input_tokens"]:,} tokens in, '
                f'{event["output_tokens"]:,} out</p>')
    return call_event(store, event)


# ---------------------------------------------------------------- the comparison page

def compare_page(traces: Sequence[tuple[dict, Sequence[dict]]], counter: TokenCounter | None = None,
                 expect: str | None = None, title: str | None = None) -> str:
    """Runs of one question under several policies (one trace each, as `--compare --trace` writes them), side by
    side: a totals table, then one column per run with the calls aligned by number, each with its context as a
    small bar (the full text folded), the reply and the observation. With `expect`, each answer is marked right
    or wrong as --compare marks it."""
    counter = counter or local_counter()
    store = Store(counter)
    runs = []
    for header, events in traces:
        policies = [e["policy"] for e in events if e["type"] == "context"]
        name = header.get("policy") or (policies[0] if policies else "?")
        runs.append((name, header, list(events), [item for item in timeline(events) if isinstance(item, Call)]))
    names = [name for name, *_ in runs]
    labels = [name if names.count(name) == 1 else f"{name} (run {names[:i + 1].count(name)})" for i, name in enumerate(names)]
    asked = next((e["text"] for _, _, events, _ in runs for e in events if e["type"] == "question"), "")
    title = title or f"Policies compared: {asked}"
    models = ", ".join(dict.fromkeys(str(header.get("model")) for _, header, _, _ in runs if header.get("model")))
    first_events = next((events for _, _, events, _ in runs), [])
    body = [f"<h1>{esc(title)}</h1>",
            f'<p class="meta">{len(runs)} runs · model: {esc(models or "not recorded")}'
            + (f" · expected answer: {esc(expect)}" if expect else "") + "</p>"]
    rows = []
    for label, (name, header, events, calls) in zip(labels, runs):
        answer, reason = outcome(events)
        counts = summarise(events)
        row = [esc(label), f"<b>{esc(answer)}</b>" if answer is not None else "<i>no answer</i>"]
        if expect:
            right = matches(answer, expect)
            row.append(f'<span class="{"right" if right else "wrong"}">{"✓ right" if right else "✗ wrong"}</span>')
        cost = priced(events, str(header.get("model", "")), str(header.get("backend", ""))) if header.get("model") else None
        cached = counts["usage"].cached_input_tokens
        row += [f'<span class="stop {reason}">{esc(reason)}</span>', str(counts["steps"]), str(counts["model_calls"]),
                f'{counts["usage"].input_tokens:,}' + (f" ({cached:,} cached)" if cached else ""),
                f'{counts["usage"].output_tokens:,}', dollars(cost.dollars) if cost else "–", f'{counts["context"].peak:,}',
                f"{seconds(events):.1f}"]
        rows.append(row)
    columns = ["policy", "answer", *(["correct"] if expect else []), "stop", "steps", "calls", "tokens in", "tokens out",
               "cost at list price", "peak context", "seconds"]
    body += [table(columns, rows, "totals", 4 if expect else 3), legend(counter_name(first_events, counter))]
    body.append(side_by_side(store, runs, labels))
    return page(title, body, store)


def side_by_side(store: Store, runs: list, labels: list[str]) -> str:
    """One column per run, one row per call number: what each policy showed, what changed since its call before,
    and what the model did with it."""
    scale = max((sum(call.context["tokens"].values()) for *_, calls in runs for call in calls if call.context), default=0)
    rendered = []
    for name, header, events, calls in runs:
        contexts, before, column = Contexts(events), None, []
        for call in calls:
            messages = contexts.at(call)
            found = changes(before, messages, store.counter.count) if messages is not None else None
            column.append((call, messages, found))
            before = messages if messages is not None else before
        rendered.append(column)
    head = "".join(f"<th>{esc(label)}</th>" for label in labels)
    rows = []
    for number in range(max((len(calls) for calls in rendered), default=0)):
        cells = []
        for calls in rendered:
            if number >= len(calls):
                cells.append('<td class="ended"></td>')
                continue
            call, messages, found = calls[number]
            cell = []
            if call.context:
                tokens = call.context["tokens"]
                cell.append(bar(tokens, scale, small=True))
            if messages is not None:
                cell.append(folded_context(store.context(messages), "context"))
                cell.append(f'<details class="diff"><summary>{change_line(found)}</summary>{change_list(store, found)}</details>')
            cell += [call_event(store, event) for event in call.shown() if event["type"] not in ("usage", "reply")]
            took = [call_seconds(call.context, event) for event in call.events if event["type"] == "usage"]
            if took and took[0] is not None:
                cell.append(f'<p class="usage">{took[0]:.2f} s</p>')
            cells.append(f'<td>{"".join(cell)}</td>')
        rows.append(f'<tr><th class="call-number">call {number + 1}</th>{"".join(cells)}</tr>')
    return (f'<table class="side-by-side"><thead><tr><th></th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


# ---------------------------------------------------------------- the replay page

def replay_page(header: dict, events: Sequence[dict], reports: list[PolicyReplay], counter: TokenCounter | None = None,
                facts: list[Fact] | None = None, points: list[ProbePoint] | None = None,
                answers: list[ProbeAnswer] | None = None, summaries: Summaries | None = None,
                model: str | None = None, title: str | None = None, priced: tuple | None = None) -> str:
    """A replay of a recorded session under several policies: context size per call (an inline SVG, probe points
    marked), the totals and buckets, with `priced` (a model's name and list price) the input cost without and with
    prompt caching, the state of each planted fact at each probe point, every probe answer with
    its verdict when probes ran, and every call's context under every measured policy, folded. `facts` and
    `points` default to the trace header's, as replay's do; `summaries` is the replay's, so that compact:T's
    contexts are rebuilt with the summaries it measured (from its cache: no model is called)."""
    counter = counter or local_counter()
    store = Store(counter)
    if facts is None:
        facts, declared = load_facts(header)
        points = probe_points(declared, events) if points is None else points
    points = points if points is not None else probe_points({}, events)
    calls = call_points(events)
    at_call = probe_calls(points, events)
    title = title or f"Replay: {header.get('title') or 'a recorded session'}"
    measured = [report for report in reports if report.measured]
    asked = sum(event["type"] == "question" for event in events)
    body = [f"<h1>{esc(title)}</h1>",
            f'<p class="meta">{len(calls)} model calls · {asked} questions · every policy shown the same recorded '
            f'replies · token counts: {esc(counter.name)}; nothing here was billed · no call takes any time: '
            'the replies were recorded, not asked'
            + (f" · probes asked of {esc(model)}" if model else "") + "</p>",
            "<h2>Context size per call</h2>\n" + context_chart(measured, counter.name, points, at_call),
            totals_table(measured)]
    panels = tradeoff_panels(measured, answers, priced)
    if panels:
        body.append("<h2>Cost against what is kept</h2>\n" + tradeoff_chart(panels))
        body += [f'<p class="frontier">{esc(frontier_sentence(frontier(points_), x_words, y_words, show_x))}</p>'
                 for x_words, y_words, points_, show_x in panels]
    if priced:
        body.append(caching_table(measured, *priced))
    body += [f'<p class="warning">{esc(report.policy)}: {esc(report.note)}</p>' for report in reports if not report.measured]
    body += [f'<p class="meta">{esc(report.policy)}: {esc(report.note)}</p>' for report in measured if report.note]
    shown = {report.policy: rendered_calls(events, report, counter, summaries) for report in measured}
    if facts and points and measured:
        body.append(fact_table(facts, points, measured, left_at(facts, shown, at_call)))
        body.append(missing_table(store, facts, points, measured, shown, at_call, counter))
    if answers is not None:
        body.append(answer_tables(store, facts, answers, model))
    body.append("<h2>Every call under each policy</h2>" + legend(counter.name))
    scale = max((report.peak for report in measured), default=0)
    for report in measured:
        body.append(policy_calls(store, set(at_call.values()), report, scale, counter, shown[report.policy]))
    return page(title, body, store)


def totals_table(reports: list[PolicyReplay]) -> str:
    baseline = next((report.total for report in reports if report.policy == BASELINE), None)
    extra = [("summary calls", "summary_calls"), ("calls over the window", "over_window")]
    extra = [(name, attribute) for name, attribute in extra if any(getattr(report, attribute) for report in reports)]
    rows = []
    for report in reports:
        change = f"{(report.total / baseline - 1) * 100:+.0f}%" if baseline and report.policy != BASELINE else ""
        rows.append([esc(report.policy), f"{report.total:,}", change, f"{report.peak:,}", str(report.violations),
                     *(f"{getattr(report, attribute):,}" for _, attribute in extra),
                     *(f"{report.buckets.get(name, 0):,}" for name in BUCKET_NAMES)])
    columns = ["policy", "input tokens, all calls", "vs full", "peak context", "invariant violations",
               *(name for name, _ in extra), *BUCKET_NAMES]
    return "<h2>What each policy would have sent</h2>" + table(columns, rows, "totals")


def caching_table(reports: list[PolicyReplay], name: str, price) -> str:
    """Each policy's input cost at a model's list price without and with an implicit prefix cache, which serves what
    repeats the call before from the start: windows and summaries break that prefix, full history keeps it."""
    rows = [[esc(report.policy), *caching_cells(report, price)] for report in reports]
    return (f"<h2>What it would cost at {esc(name)}'s list price, without and with prompt caching</h2>"
            + table(["policy", "input repeating the call before", "no cache", "with the cache", "saved"], rows, "caching")
            + f'<p class="meta">A cache serves the part of a call\'s input that repeats the call before from its start, '
              f'from 1,024 tokens (OpenAI\'s and Gemini Flash\'s minimum); counted part by part, a lower bound. Input '
              f'only, at ${price.input:g} and ${price.cached_input:g} per million ({esc(price.source)}, read '
              f'{esc(price.read)}).</p>')


def fact_table(facts: list[Fact], points: list[ProbePoint], reports: list[PolicyReplay], left: dict | None = None) -> str:
    """For each planted fact, a table of its state (see FACT_STATES) in each policy's context at each probe point;
    a fact no longer in the context links to the call where it left (`left`, from left_at)."""
    left = left or {}
    labels = "".join(f"<th>{esc(point.label)}</th>" for point in points)
    out, shown = ["<h2>Is each planted fact still in the context?</h2>"], {}
    for fact in facts:
        rows = []
        for report in reports:
            states = report.facts.get(fact.id, {})
            cells = []
            for point in points:
                css, mark, words = FACT_STATES.get(states.get(point.label), ("unknown", "?", str(states.get(point.label))))
                shown[css] = f'<span class="fact {css}">{mark}</span> {esc(words)}'
                gone_at = left.get((fact.id, report.policy, point.label))
                where = (f' <a class="left" href="#{call_anchor(report.policy, gone_at)}">left at call {gone_at}</a>'
                         if gone_at and css in ("gone", "cut", "partly") else "")
                cells.append(f'<td class="fact {css}" title="{esc(words)}">{mark} {esc(css)}{where}</td>')
            rows.append(f'<tr><th>{esc(report.policy)}</th>{"".join(cells)}</tr>')
        out.append(f'<h3 title="{esc(fact.kind)}">{esc(fact.id)}: <q>{esc(fact.text)}</q></h3>'
                   f'<table class="facts" data-fact="{esc(fact.id)}"><thead><tr><th>policy</th>{labels}</tr></thead>'
                   f'<tbody>{"".join(rows)}</tbody></table>')
    out.append(f'<p class="legend">{" · ".join(shown.values())}</p>')
    return "\n".join(out)


def answer_tables(store: Store, facts: list[Fact], answers: list[ProbeAnswer], model: str | None) -> str:
    """The probe answers: correct out of asked per condition and fact, with the 95% interval and the verdicts of the
    rest; then every answer, folded by condition, with its verdict. Each phrasing is listed once, by number."""
    scored = tally(answers, "fact")
    asked_about = [fact for fact in facts if any(fact.id in row for row in scored.values())]
    rows = []
    for condition, row in scored.items():
        cells = [esc(condition)]
        for fact in asked_about:
            cell = row.get(fact.id)
            if cell is None:
                cells.append("–")
                continue
            wrong = ", ".join(f"{cell[verdict]} {verdict}" for verdict in VERDICTS[1:] if cell[verdict])
            cells.append(f'<span class="score" style="--share:{cell["k"] / cell["n"] if cell["n"] else 0:.2f}">'
                         f'{cell["k"]}/{cell["n"]}</span> <small>({cell["low"]:.2f}–{cell["high"]:.2f})'
                         f'{"<br>" + esc(wrong) if wrong else ""}</small>')
        rows.append(cells)
    columns = ["condition", *(f"{fact.id} (gold: {fact.gold})" for fact in asked_about)]
    out = [f"<h2>Probe answers{' · model ' + esc(model) if model else ''}</h2>",
           table(columns, rows, "scores"),
           '<p class="legend">correct/asked, the 95% Wilson interval, and what the other answers were: '
           f'{esc(", ".join(VERDICTS[1:]))}. Closed book: no history; facts only: just the facts stated so far.</p>']
    phrasings = "".join(f"<li>{esc(fact.id)} {number}: {esc(question)}</li>"
                        for fact in asked_about for number, question in enumerate(fact.phrasings, 1))
    out.append(f'<details class="phrasings"><summary>The probe questions</summary><ul>{phrasings}</ul></details>')
    for condition in scored:
        lines = []
        for answer in (a for a in answers if a.condition == condition):
            text = (f"<q>{esc(answer.answer)}</q>" if len(answer.answer) <= PREVIEW
                    else folded(store, answer.answer, f"<q>{preview(answer.answer)}</q>"))
            lines.append([esc(answer.point), f"{esc(answer.fact)} {answer.phrasing}", str(answer.repeat), text,
                          f'<span class="verdict {esc(answer.verdict.replace(" ", "-"))}">{esc(answer.verdict)}</span>'])
        out.append(f'<details class="answers"><summary>Every answer under {esc(condition)} ({len(lines)})</summary>'
                   + table(["probe point", "question", "repeat", "answer", "verdict"], lines, "answers", 5) + "</details>")
    return "\n".join(out)


def rendered_calls(events: Sequence[dict], report: PolicyReplay, counter: TokenCounter,
                   summaries: Summaries | None) -> list[list[Message]]:
    """What the policy of `report` showed at each call of the replay. A policy that asks for summaries is shown the
    session with the summaries the replay measured it with."""
    policy = make_policy(report.policy)
    session = list(events)
    if policy.needs_summaries:
        session = summarised(policy, events, counter.count, summaries).events or []
    return [policy.render(session[:index]) for index in call_points(session)][:len(report.calls)]


def call_anchor(policy: str, number: int) -> str:
    return "call-" + re.sub(r"[^A-Za-z0-9]+", "-", policy) + f"-{number}"


def left_at(facts: list[Fact], shown: dict, at_call: dict) -> dict:
    """{(fact id, policy, probe point label): the call at which the fact left that policy's context, the last time
    before the point} for each point where it is not in the context but had been."""
    out = {}
    for fact in facts:
        for policy, calls in shown.items():
            present = [fact.text in "\n".join(part.text for message in messages for part in message.parts)
                       for messages in calls]
            for label, call in at_call.items():
                before = present[:call - 1] if call <= len(present) else present
                gone = [n + 1 for n in range(1, len(before)) if before[n - 1] and not before[n]]
                if gone:
                    out[(fact.id, policy, label)] = gone[-1]
    return out


def missing_table(store: Store, facts: list[Fact], points: list[ProbePoint], reports: list[PolicyReplay],
                  shown: dict, at_call: dict, counter: TokenCounter) -> str:
    """At each probe point, what each policy's context lacks that full history's holds: how many parts and tokens,
    and, in full, the parts that hold a planted fact, the fact marked."""
    full = shown.get(BASELINE)
    if full is None:
        return ""
    out = ["<h2>What each policy is missing that full history holds, at each probe point</h2>"]
    for point in points:
        call = at_call.get(point.label)
        if not call or call > len(full):
            continue
        held = [part for message in full[call - 1] for part in message.parts]
        rows = []
        for report in reports:
            if report.policy == BASELINE or call > len(shown[report.policy]):
                continue
            texts = {part.text for message in shown[report.policy][call - 1] for part in message.parts}
            lacking = [part for part in held if part.text not in texts]
            with_facts = [(part, [fact for fact in facts if fact.text in part.text]) for part in lacking]
            with_facts = [(part, named) for part, named in with_facts if named]
            listed = "".join(f'<li><span class="tag dropped">{esc(part.kind)}</span> '
                             f'{marked(part.text, [fact.text for fact in named])}</li>' for part, named in with_facts)
            tokens = sum(counter.count(part.text) for part in lacking)
            rows.append(f'<tr><th>{esc(report.policy)}</th><td class="n">{len(lacking):,} parts, {tokens:,} tokens</td>'
                        f'<td>{f"<ul class=missing>{listed}</ul>" if listed else "no part that holds a planted fact"}</td></tr>')
        out.append(f"<h3>{esc(point.label)}</h3>" + f'<table class="missing"><thead><tr><th>policy</th><th>lacks</th>'
                   f'<th>of them, the parts that hold a planted fact</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')
    return "\n".join(out)


def marked(text: str, found: list[str]) -> str:
    """`text` escaped, each of `found` in it marked, the parts between cut to their ends when long."""
    pattern = "|".join(re.escape(item) for item in sorted(set(found), key=len, reverse=True))
    pieces, at = [], 0
    for match in re.finditer(pattern, text):
        between = text[at:match.start()]
        pieces.append(esc(between if len(between) <= 160 else between[:60] + " … " + between[-60:]))
        pieces.append(f"<mark>{esc(match.group(0))}</mark>")
        at = match.end()
    tail = text[at:]
    pieces.append(esc(tail if len(tail) <= 160 else tail[:60] + " …"))
    return "".join(pieces)


def policy_calls(store: Store, probing: set[int], report: PolicyReplay, scale: int, counter: TokenCounter,
                 rendered: list[list[Message]]) -> str:
    """Every call of the replay under one policy, folded: a bar of its buckets, what changed since the call before
    (each part added, dropped, elided or summarised, as the run page lists them), the context itself."""
    rows, before = [], None
    for number, (messages, tokens) in enumerate(zip(rendered, report.calls), 1):
        probe = ' class="probe-point"' if number in probing else ""
        found = changes(before, messages, counter.count)
        rows.append(f'<tr{probe} id="{call_anchor(report.policy, number)}"><th>call {number}{" · probe" if probe else ""}</th>'
                    f'<td class="bar-cell">{bar(tokens, scale, small=True)}</td>'
                    f'<td><details class="diff"><summary>{change_line(found)}</summary>{change_list(store, found)}</details></td>'
                    f'<td>{folded_context(store.context(messages), "context")}</td></tr>')
        before = messages
    return (f'<details class="policy-calls"><summary>{esc(report.policy)}: {plural(len(report.sizes), "call")}, peak '
            f'{report.peak:,} tokens</summary><table class="calls">{"".join(rows)}</table></details>')


# ---------------------------------------------------------------- style and script

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; } h3 { font-size: 1em; margin: 0 0 .4em; }
h4 { font-size: .9em; font-weight: normal; margin: .5em 0 .2em; }
.meta, .legend, .counts, .usage { color: #555; font-size: .9em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .5em; text-align: left; vertical-align: top; }
td.n { text-align: right; } .scores td.n { text-align: center; }
.bar { display: flex; height: 18px; background: #f2f2f2; margin: .3em 0; min-width: 2px; }
.bar.small { height: 10px; display: inline-flex; vertical-align: middle; }
.bar span { display: block; height: 100%; }
.key { display: inline-block; width: .9em; height: .9em; margin: 0 .25em 0 .5em; vertical-align: -.1em; }
""" + "".join(f".b-{name} {{ background: {colour}; }}\n" for name, colour in COLOURS.items()) + """
section.call { border-left: 4px solid #ccc; padding: .5em .8em; margin: .8em 0; background: #fcfcfc; }
h2.question { border-top: 2px solid #4e79a7; padding-top: .5em; } h2.reset { color: #9467bd; }
details { margin: .2em 0; } summary { cursor: pointer; }
details .body pre, details .body .part pre { white-space: pre-wrap; word-break: break-word; margin: .2em 0 .6em;
  padding: .4em; background: #f6f6f6; border: 1px solid #eee; font-size: .85em; }
.part-label { font-size: .8em; color: #666; }
ul.changes { list-style: none; padding-left: 0; margin: 0; }
.tag { display: inline-block; padding: 0 .35em; border-radius: 3px; font-size: .85em; }
.tag.added { background: #d9f2d9; } .tag.dropped { background: #f8d4d4; } .tag.elided, .tag.marker { background: #fde8c4; }
.tag.summarised { background: #e6daf5; } .tag.pinned { background: #fff2b3; } .tag.instructions { background: #dde6f3; }
details.change.dropped summary q { text-decoration: line-through; color: #a33; }
details.change.added summary q { background: #eefbee; }
.thought { color: #17606e; margin: .2em 0; } .action { color: #8a5a00; margin: .2em 0; }
.answer { color: #1a6b1a; font-size: 1.05em; margin: .2em 0; }
.observation summary { color: #2f6b2f; } .observation.failed summary { color: #b22; }
.error, .warning { color: #b22; font-weight: 600; } .notice { color: #a05a00; } .note { color: #8a6d00; }
.stop.answer { color: #1a6b1a; } .stop.ttl, .stop.format_errors, .stop.error, .stop.interrupted, .stop.cut, .stop.filtered { color: #b22; }
.right { color: #1a6b1a; } .wrong { color: #b22; }
.between { margin: .6em 0; color: #555; } .policy-change { color: #9467bd; font-weight: 600; }
.side-by-side { table-layout: fixed; width: 100%; } .side-by-side td { font-size: .85em; overflow-wrap: anywhere; }
.side-by-side td.ended { background: #f6f6f6; } .side-by-side thead th:first-child { width: 4.5em; } .size { font-size: .8em; color: #555; margin-left: .3em; }
.plot { width: 100%; height: auto; font: 12px sans-serif; }
svg.tradeoff { width: 100%; max-width: var(--natural); height: auto; font: 12px sans-serif; }
.fact { text-align: center; white-space: nowrap; } .facts th { white-space: nowrap; } .fact.kept { background: #d9f2d9; } .fact.gone { background: #f8d4d4; }
.fact.cut, .fact.partly { background: #fde8c4; } .fact.unstated { color: #888; }
.verdict.correct { color: #1a6b1a; } .verdict.distractor, .verdict.stale { color: #b22; } .verdict.refusal { color: #a05a00; }
.verdict.no-answer { color: #777; font-style: italic; }
ul.missing { margin: 0; padding-left: 1em; font-size: .9em; } mark { background: #fff2b3; } a.left { font-size: .8em; }
@media print { .side-by-side { table-layout: fixed; width: 100%; } .side-by-side td { overflow-wrap: anywhere; word-break: break-word; } details > summary { list-style: none; } }
.score { display: inline-block; min-width: 3em; text-align: center;
  background: color-mix(in srgb, #59a14f calc(var(--share) * 100%), #f8d4d4); }
.calls td.bar-cell { width: 45%; } tr.probe-point th { background: #fff2b3; } tr:target { outline: 2px solid #e15759; }
nav.tools { float: right; } nav.tools form { display: inline; }
@media print {
  nav.tools, noscript { display: none; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  section.call { break-inside: avoid; }
}
"""

# Fills a folded section from the page's JSON block the first time it opens. Text goes in as textContent, so
# nothing a model or a tool wrote can become markup.
SCRIPT = """
const data = JSON.parse(document.getElementById("page-data").textContent);
function pre(text) { const element = document.createElement("pre"); element.textContent = text; return element; }
function fill(details) {
  const body = details.querySelector(":scope > .body");
  if (!body || details.dataset.filled) return;
  details.dataset.filled = "yes";
  if (details.dataset.text !== undefined) body.append(pre(data.texts[Number(details.dataset.text)]));
  if (details.dataset.context === undefined) return;
  for (const number of data.contexts[Number(details.dataset.context)]) {
    const [role, kind, text, tokens] = data.parts[number];
    const label = document.createElement("div");
    label.className = "part-label";
    label.textContent = `[${role} · ${kind} · ${tokens.toLocaleString("en")} tokens]`;
    body.append(label, pre(data.texts[text]));
  }
}
document.addEventListener("toggle", (event) => { if (event.target.open) fill(event.target); }, true);
window.addEventListener("beforeprint", () => document.querySelectorAll("details[open]").forEach(fill));
function openAll(open, which) {
  document.querySelectorAll(which).forEach((details) => { details.open = open; if (open) fill(details); });
}
document.getElementById("open-all").addEventListener("click", () => openAll(true, "details:not(.context)"));
document.getElementById("close-all").addEventListener("click", () => openAll(false, "details"));
// A link to a call inside a closed fold (a fact's "left at call N") opens the folds around it: the HTML standard
// asks a browser to do so itself, and Chromium does; this is for one that does not.
function reveal(id) {
  const target = id && document.getElementById(id);
  for (let fold = target && target.closest("details"); fold; fold = fold.parentElement && fold.parentElement.closest("details")) {
    fold.open = true;
  }
  if (target) target.scrollIntoView();
}
window.addEventListener("hashchange", () => reveal(decodeURIComponent(location.hash.slice(1))));
reveal(decodeURIComponent(location.hash.slice(1)));
// A folded text is not in the page until it opens, so the browser's own find cannot see it: this opens every
// fold whose text holds what is typed (and the folds around it), after which Ctrl-F finds it.
function texts(details) {
  const found = [];
  if (details.dataset.text !== undefined) found.push(data.texts[Number(details.dataset.text)]);
  if (details.dataset.context !== undefined) {
    for (const number of data.contexts[Number(details.dataset.context)]) found.push(data.texts[data.parts[number][2]]);
  }
  return found;
}
document.getElementById("find").addEventListener("submit", (event) => {
  event.preventDefault();
  const wanted = event.target.elements.text.value.trim().toLowerCase();
  if (!wanted) return;
  let opened = 0;
  for (const details of document.querySelectorAll("details[data-text], details[data-context]")) {
    if (details.open || !texts(details).some((text) => text.toLowerCase().includes(wanted))) continue;
    for (let fold = details; fold; fold = fold.parentElement && fold.parentElement.closest("details")) {
      fold.open = true;
      fill(fold);
    }
    opened += 1;
  }
  document.getElementById("found").textContent = opened ? `opened ${opened} fold${opened === 1 ? "" : "s"} that `
    + "hold it: Ctrl-F finds it now" : "no closed fold holds it";
});
"""
