"""The terminal view, with rich: a run as it happens (each trace event styled, a spinner while the model thinks,
on request the exact context of every call, part by part with its size), and the tables of a comparison
or a replay.

Model, tool and user text is hostile to a terminal. It is always handed to rich as Text, never parsed as
markup, and control characters (escape sequences that could set the window title, clear the screen or
write the clipboard) are removed from it on the way out; the trace keeps it raw. NO_COLOR is honoured by rich.
"""
import json
import re
import time
from contextlib import contextmanager
from typing import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from experiments.probe import VERDICTS, tally
from experiments.provenance import said
from models.prices import dollars
from models.services.retry import describe
from policies import BASELINE, BUCKET_NAMES as BUCKETS
from redaction import StreamRedactor
from replies import answer_at, answer_may_begin, continued
from views.reports import CACHING_COLUMNS, caching_cells, lift_cell, noise_kept
from views.tables import Column, Fitted
from views.terminal import clean
from tokens import TokenCounter, local_counter
from tools.approval import approval_line
from policies.rendering import observation_cut



def plain(text: object, style: str = "") -> Text:
    """Data for rich: cleaned, and never read as markup."""
    return Text(clean(text), style=style)

STYLES = {
    "question": ("Question", "bold"),
    "thought": ("Thought", "cyan"),
    "action": ("Action", "yellow"),
    "observation": ("Observation", "green"),
    "answer": ("Answer", "bold green"),
    "finish": ("TTL reached", "magenta"),
    "summary": ("Summary written", "magenta"),
    "error": ("Error", "bold red"),
}
SHOWN_CHARS = 600  # of a long observation; the trace keeps all of it


class LiveDisplay:
    def __init__(self, events: bool = True, context: str | None = None, stderr: bool = False,
                 counter: TokenCounter | None = None):
        """`context`: None, "full" (every part of every call) or "changes" (only what changed since the last call)."""
        self.console = Console(highlight=False, stderr=stderr)
        self.events, self.context = events, context
        self.counter = counter
        self.render_context = None  # set by the caller: the context a context event says is sent (the Trace's sent)
        self.offered = lambda: None  # set by the caller: the tool schemas sent beside it (native protocol), or None
        self._status = None
        self._shown: list | None = None  # the parts of the context shown last, for "changes"
        self._streamed = ""  # the text of the reply being streamed, shown as it came
        self._said, self._out = "", 0  # of it, what came through the redactor; how much of that is shown
        self._held = ""  # the last streamed reply's Answer line and what followed: shown if the run takes it
        self._redactor = StreamRedactor()
        self._replied = None  # the step whose reply was streamed: its parts are not printed again

    def show(self, event: dict) -> None:
        """Print one trace event; start the spinner when the model is about to be called."""
        self._stop_spinner()
        kind = event["type"]
        if kind == "context" and self.context and self.render_context:
            self.show_context(self.render_context(event), event["policy"], changes=self.context == "changes")
        if kind in ("retry", "config_fallback", "warning"):  # on stderr whatever the output, as it happens
            if event.get("restart_stream") and self._streamed:  # a retry, or a stream asked for again whole
                self._end_stream()  # an Answer in the attempt given up is not shown: it was never taken
            line = f"warning: {event['message']}" if kind == "warning" else describe(event)
            Console(stderr=True, highlight=False).print(plain(line, "yellow"))
        if kind == "approval":  # on stderr too, where the person was asked (or would have been)
            style = "red" if event["decision"] == "declined" else "yellow"
            Console(stderr=True, highlight=False).print(plain(f"Approval: {approval_line(event)}", style))
        if not self.events:
            return
        if kind == "error" and self._streamed:  # the call failed mid-reply: what came ends before the error is said
            self._end_stream()
        if kind == "reply":
            self._replied = event["step"] if self._streamed else None  # streamed: its parts were shown as they came
            self._held = self._end_stream() if self._streamed else ""
        if kind in ("thought", "action", "answer") and self._replied == event.get("step"):
            if kind == "answer" and self._held:  # the trace took the Answer held back: it shows now, as it came
                self.console.print(plain(self._held, "cyan"), end="" if self._held.endswith("\n") else "\n")
            return
        if kind in STYLES:
            label, style = STYLES[kind]
            text = event.get("text") or event.get("message") or ""
            if kind == "observation" and text.startswith(("Error", "Warning", "Declined")):
                style = "red"
            if len(text) > SHOWN_CHARS:
                text = text[:SHOWN_CHARS] + f" … ({len(text) - SHOWN_CHARS:,} more characters in the trace)"
            step = event.get("step") if kind != "answer" else None
            line = Text(f"{label}{step or ''}: ", style=style + " bold")
            if kind == "observation":  # its text in a column of its own: a line the terminal wraps stays indented
                grid = Table.grid()
                grid.add_row(line, Text(continued(clean(text)), style=style))
                self.console.print(grid)
            else:
                line.append(clean(text), style=style)
                self.console.print(line)
        if kind == "context":
            self._status = self.console.status("thinking…", spinner="dots")
            self._status.start()

    def show_context(self, messages, policy: str = "", changes: bool = False) -> None:
        """Exactly the messages a call sends, each part labelled with its role, kind and local token count; with
        `changes`, after the first call only the parts added since the previous call, and one line for each part
        the policy dropped."""
        counter = self.counter or local_counter()
        parts = [(message.role, part) for message in messages for part in message.parts]
        schemas = self.offered()
        described = json.dumps(schemas, ensure_ascii=False) if schemas else ""
        total = sum(counter.count(part.text) for _, part in parts) + (counter.count(described) if schemas else 0)
        title = f"context{' · policy ' + policy if policy else ''} · {total:,} tokens, {counter.name}"
        previous, self._shown = self._shown, parts
        if changes and previous is not None:
            before, now = set(previous), set(parts)
            kept = [item for item in parts if item in before]
            self.console.rule(plain(title, "bold magenta"))
            self.console.print(plain(f"= {len(kept)} parts as before ({sum(counter.count(p.text) for _, p in kept):,} "
                                     "tokens)", "dim"))
            for role, part in previous:
                if (role, part) not in now:
                    self.console.print(plain(f"− dropped [{role} · {part.kind} · {counter.count(part.text):,} tokens] "
                                             f"{_first_line(part.text)}", "red"))
            parts = [item for item in parts if item not in before]
        else:
            self.console.rule(plain(title, "bold magenta"))
            if schemas:  # the native protocol: the tools go beside the messages (--show-prompt prints them whole)
                self.console.print(Text(f"[tools · {len(schemas)} tool schemas, sent beside the messages · "
                                        f"{counter.count(described):,} tokens]", style="magenta"))
                self.console.print(plain(", ".join(schema["name"] for schema in schemas)))
        for role, part in parts:
            mark = "+ " if changes and previous is not None else ""
            self.console.print(Text(f"{mark}[{role} · {part.kind} · {counter.count(part.text):,} tokens]",
                                    style="magenta"))
            self.console.print(plain(part.text))
        self.console.rule(style="magenta")

    def stream(self, piece: str) -> None:
        """Show a piece of the reply as the model writes it (only text that will not be cut), redacted over the
        whole stream: a secret split across pieces is held back until it can be blanked whole."""
        self._stop_spinner()
        self._streamed += piece
        self._release(self._redactor.feed(piece))

    def _release(self, text: str) -> None:
        """Show streamed text up to an Answer line (any the reply's parser reads as one), and not a last line that
        may yet become one: the service may then withhold the reply or say it was cut, an Action may have come
        first, the attempt may start over, and then it is no answer. Only the answer the run takes is shown."""
        self._said += text
        at = answer_at(self._said, self._said.rfind("\n", 0, self._out) + 1)  # the lines shown hold none
        end = at if at >= 0 else answer_may_begin(self._said)
        if end > self._out:
            self.console.print(plain(self._said[self._out:end], "cyan"), end="")
            self._out = end

    def _end_stream(self) -> str:
        """Show the rest of the streamed reply up to its Answer line; give back that line and what follows."""
        self._release(self._redactor.end())
        at = answer_at(self._said, self._out)
        shown, held = (self._said[:at], self._said[at:]) if at >= 0 else (self._said, "")
        if len(shown) > self._out:
            self.console.print(plain(shown[self._out:], "cyan"), end="")
        if shown and not shown.endswith("\n"):
            self.console.print()
        self._streamed, self._said, self._out = "", "", 0
        return held

    def note(self, text: str) -> None:
        self._stop_spinner()
        self.console.print(plain(text, "dim"))

    def close(self) -> None:
        self._stop_spinner()
        if self._streamed:  # a stream that no reply ended (an error, Ctrl-C): shown, but for an Answer never taken
            self._end_stream()

    def summary(self, result) -> None:
        usage = result.usage
        calls = f"{result.model_calls} model call{'s' if result.model_calls != 1 else ''}"
        if result.summary_calls:
            calls += f" ({result.summary_calls} for summaries)"
        cached = f" ({usage.cached_input_tokens:,} cached)" if usage.cached_input_tokens else ""
        parts = [f"{result.model} ({result.backend})", f"{result.steps} step{'s' if result.steps != 1 else ''}", calls,
                 f"{usage.input_tokens:,} tokens in{cached} / {usage.output_tokens:,} out ({result.usage_source})",
                 f"{result.seconds:.1f} s"]
        if result.cost and result.cost.dollars:
            parts.insert(4, f"{dollars(result.cost.dollars)} at list price ({result.cost.priced_as}, "
                            f"prices of {result.cost.read})")
        elif result.cost and result.backend != "local":  # the embedded models say it in their usage source
            parts.insert(4, f"nothing billed: {result.cost.priced_as}")
        elif result.cost is None and result.backend in ("gemini", "openai"):
            parts.insert(4, "cost not known: no listed price for this model (models/prices.json)")
        if any(temperature is not None for temperature in result.temperatures):  # what sampled, and how
            sent = ", then ".join("the server's own" if t is None else f"{t:g}" for t in result.temperatures)
            parts.insert(4, f"temperature {sent}")
        if result.stop_reason.value != "answer":
            parts.append(f"stopped: {result.stop_reason.value}")
        self.console.print(plain(" · ".join(parts), "dim"))
        totals = result.context.totals
        if totals:
            buckets = " · ".join(f"{name} {totals.get(name, 0):,}" for name in BUCKETS)
            self.console.print(Text(f"context shown, summed over calls: {buckets} · peak {result.context.peak:,} "
                                    f"({result.context.counter})", style="dim"))

    def _stop_spinner(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


# The columns of the --compare table that give way first where it is too wide, least needed first. live tools checks
# the comparison itself (0 unless a policy asked what the first run never did); seconds measure the machine and the
# model more than the policy; out is the model's writing, much the same under every policy; calls mostly says what
# steps says (a call a step, one more for the answer). What a policy changes (answer, steps, in, peak ctx) stays.
COMPARE_LEAST_NEEDED = ["live tools", "s", "out", "calls"]


def live_table(console: Console, rows: list[dict], model: str, expect: str | None, counter: str) -> None:
    """The --compare table: one row per policy; with repeats, the median and (the range)."""
    def number(value) -> str:
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"

    def spread(cell: dict) -> str:
        text = number(cell["median"])
        return text if cell["min"] == cell["max"] else f"{text} ({number(cell['min'])}–{number(cell['max'])})"

    cached = any(row["cached_input_tokens"]["max"] for row in rows)
    costs = any(row.get("cost", {}).get("max") for row in rows)
    protocols = len({row.get("protocol", "text") for row in rows}) > 1  # text and native side by side
    unreadable = protocols or any(row.get("unreadable", {}).get("max") for row in rows)
    columns = [Column("policy", "left", "never"), *([Column("protocol", "left", "never")] if protocols else []),
               Column("answer", "left", "text"), *([Column("correct")] if expect else []), Column("stop", "left"),
               *map(Column, ["steps", "calls", "in", *(["cached"] if cached else []), "peak ctx", "out",
                             *(["unreadable"] if unreadable else []), *(["cost"] if costs else []), "s", "live tools"])]
    table = []
    for row in rows:
        answers = " | ".join(row["answers"])
        cells = [row["policy"], *([row["protocol"]] if protocols else []),
                 answers[:80] + ("…" if len(answers) > 80 else "")]
        if expect:
            cells.append(f"{row['correct']}/{row['runs']}")
        cells += ([", ".join(row["stop_reasons"])]
                  + [spread(row[name]) for name in ("steps", "model_calls", "input_tokens")])
        cells += [spread(row["cached_input_tokens"])] if cached else []
        cells += [spread(row[name]) for name in ("peak_context", "output_tokens")]
        cells += [spread(row["unreadable"])] if unreadable else []
        cells += [dollars(row["cost"]["median"]) if "cost" in row else "–"] if costs else []
        cells += [spread(row[name]) for name in ("seconds", "live_tool_calls")]
        table.append(cells)
    console.print(Fitted(f"{'Protocols' if protocols else 'Policies'} compared · model {model}", columns, table,
                         least_needed=COMPARE_LEAST_NEEDED))
    console.print(Text(f"in, out: the model's usage numbers over all calls (Gemini: billed, from the API; the "
                       f"offline model: its own tokenizer's count). peak ctx: the largest context, "
                       f"{counter}. Tool results were recorded on the first run and replayed to the others; live tools "
                       "after the first row are cache misses, which ran the real tool."
                       + (" cached: the part of in served from the service's prompt cache." if cached else "")
                       + (" cost: at list price (models/prices.json), the median over repeats." if costs else "")
                       + (" unreadable: replies with neither a call nor an answer." if unreadable else "")
                       + (" in counts the tool schemas sent beside a native run's messages; a text run's tools are in "
                          "its instructions." if protocols else ""),
                       style="dim"))


STATE_MARKS = {"kept": "✓", "partly": "◐", "cut": "✂", "gone": "✗", "unstated": "–"}


def caching_table(console: Console, measured, name: str, price) -> None:
    """What each policy's session would cost in input at a model's list price, with and without an implicit prefix
    cache: windows and summaries break the prefix, full history keeps it."""
    console.print(Fitted(f"Input cost at {name}'s list price, without and with prompt caching: {price.rule()}",
                         [Column("policy", "left", "never"), *map(Column, CACHING_COLUMNS[1:])],
                         [[report.policy, *caching_cells(report, price)] for report in measured]))


def replay_tables(console: Console, reports, facts, points, answers, model: str | None, path: str, counter: str,
                  window: tuple[int, str] | None = None, cut_on_record: int = 0, priced: list | None = None,
                  setup: dict | None = None, likelihood: dict | None = None) -> None:
    """The --replay report: cost per policy against full history, buckets, the state of each fact at each probe point,
    a plot, and with --probe the answers' tallies by probe point and by fact, with Wilson 95% intervals."""
    measured = [r for r in reports if r.measured]
    calls = max((len(r.sizes) for r in measured), default=0)
    console.print(totals_table(measured, path, calls))
    console.print(buckets_table(measured))
    for name, price in priced or []:
        caching_table(console, measured, name, price)
    console.print(plain(f"Token counts: {counter}; nothing here was billed. vs full: the share of full history's input "
                        "tokens, summary calls included.", "dim"))
    replay_warnings(console, reports, measured, window, cut_on_record)
    if facts and measured and points:
        console.print(facts_table(measured, facts, points))
        console.print(plain(f"probe points, left to right: {'; '.join(p.label for p in points)}", "dim"))
        noise = [(report.policy, share) for report in measured if (share := noise_kept(report)) is not None]
        if noise:
            console.print(plain("facts tracked but not to be kept, still in the context (counted apart from the facts "
                                "kept): " + ", ".join(f"{policy} {share:.0%}" for policy, share in noise), "dim"))
    size_plot(console, measured, calls)
    if answers is not None:
        probe_tables(console, answers, model, counter)
    if likelihood is not None:
        likelihood_tables(console, measured, facts, points, likelihood, model)
    if setup:
        console.print(plain(f"setup: {said(setup)}", "dim"))


def totals_table(measured, path: str, calls: int) -> Fitted:
    """Input tokens, peak and the rest per policy, each against full history."""
    baseline = next((r.total for r in measured if r.policy == BASELINE), None)
    rows = []
    for report in measured:
        change = f"{report.total / baseline * 100:.0f}%" if baseline and report.policy != BASELINE else ""
        summary = (f"{report.summary_calls} ({report.summary_input:,} / {report.summary_output:,})"
                   if report.summary_calls else "")
        rows.append([report.policy + (" *" if report.caveat else ""), f"{report.total:,}", change, f"{report.peak:,}",
                     summary, report.over_window or "", report.violations])
    numbers = ["input tokens, all calls", "vs full", "peak context", "summary calls (in / out)", "over window",
               "invariant violations"]
    return Fitted(f"Replay of {path}: {calls} model calls, each policy shown the same recorded replies",
                  [Column("policy", "left", "never"), *map(Column, numbers)], rows)


def buckets_table(measured) -> Fitted:
    """What the contexts held, by kind, summed over every call."""
    return Fitted("What the contexts held, summed over all calls",
                  [Column("policy", "left", "never"), *map(Column, BUCKETS)],
                  [[report.policy, *[f"{report.buckets.get(b, 0):,}" for b in BUCKETS]] for report in measured])


def replay_warnings(console: Console, reports, measured, window: tuple[int, str] | None, cut_on_record: int) -> None:
    """Contexts past a model's window, observations cut when recorded, and each policy's note and caveat."""
    over = [r.policy for r in measured if r.over_window]
    if window and over:
        size, whose = window
        console.print(plain(f"warning: {', '.join(over)} sent contexts larger than {whose}'s window of {size:,} "
                            "tokens (the over window column counts the calls); that model could not take them whole.",
                            "yellow"))
    if cut_on_record:
        console.print(plain(f"warning: {cut_on_record} observations were cut when recorded (an older TinyReAct cut at "
                            "2,000 characters): a fact in a part cut is missing from the trace itself, for every "
                            "policy.", "yellow"))
    for report in reports:
        if report.note:
            console.print(plain(f"{report.policy}: {report.note}.", "yellow" if not report.measured else "dim"))
        if report.caveat:  # marked * in the table
            console.print(plain(f"* {report.policy}: {report.caveat}.", style="yellow"))


def facts_table(measured, facts, points) -> Fitted:
    """Each planted fact's state under each policy, at each probe point, left to right."""
    cut = sum(state == "cut" for report in measured for states in report.facts.values() for state in states.values())
    title = (f"Is each planted fact's exact text in the context? (✓ kept, ◐ under some phrasings, ✂ cut by the "
             f"{observation_cut():,}-character observation cap, ✗ gone, – not stated yet)"
             + (f"; {cut} cells ✂: lost to the cap, a setting of the replay (--observation-cut), not to the policy"
                if cut else ""))
    rows = []
    for fact in facts:
        row = [f"{fact.id}: {fact.text[:40]}" + ("" if fact.keep else " (tracked, not to be kept)")]
        for report in measured:
            marks = report.facts.get(fact.id, {})
            row.append(" ".join(STATE_MARKS[marks[p.label]] for p in points if p.label in marks))
        rows.append(row)
    return Fitted(title, [Column("fact", "left", "text"), *(Column(r.policy, "center", "never") for r in measured)],
                  rows)


def size_plot(console: Console, measured, calls: int) -> None:
    """Each policy's context size per call as a sparkline, binned to the terminal's width."""
    top = max((r.peak for r in measured), default=0)
    width = max((len(r.policy) for r in measured), default=0)
    columns = max(min(calls, console.width - width - 10), 1)
    console.print(Text(f"Context size per call, calls 1 to {calls} left to right"
                       f"{f' ({calls / columns:.1f} calls a character)' if columns < calls else ''}, "
                       f"scaled to the largest ({top:,} tokens); the number is the last call's:", style="bold"))
    for report in measured:
        binned = [max(report.sizes[i * len(report.sizes) // columns:(i + 1) * len(report.sizes) // columns] or [0])
                  for i in range(columns)] if report.sizes else []
        last = report.sizes[-1] if report.sizes else 0
        console.print(plain(f"{report.policy:<{width}} {sparkline(binned, top)} {last:,}"))


def probe_tables(console: Console, answers, model: str | None, counter: str) -> None:
    """Correct answers k/n with the Wilson 95% interval, by probe point and by fact; then the verdicts of the rest."""
    for by, heading in (("point", "probe point"), ("fact", "fact")):
        cells = tally(answers, by)
        keys = list(dict.fromkeys(getattr(a, by) for a in answers))
        console.print(Fitted(f"Probe answers by {heading}: correct/asked [Wilson 95% interval] · model {model}",
                             [Column("context", "left", "never"), *(Column(key, "center") for key in keys)],
                             [[condition, *[f"{row[k]['k']}/{row[k]['n']} [{row[k]['low']:.2f}–{row[k]['high']:.2f}]"
                                            if k in row else "–" for k in keys]] for condition, row in cells.items()]))
    console.print(Fitted("Every answer, classified by its Answer line (correct holds the gold value; distractor and "
                         "stale hold a known wrong one; refusal says it does not know; no answer: the reply had no "
                         "Answer line, whatever its actions held)",
                         [Column("context", "left", "never"), *map(Column, VERDICTS)],
                         [[condition, *(row[condition][v] for v in VERDICTS)]
                          for condition, row in tally(answers, "condition").items()]))
    console.print(plain(f"closed book: no history (a lower bound); facts only: a short prompt holding just the facts "
                        f"stated so far (an upper bound). Contexts counted with {counter}. Every answer is in "
                        "--answers FILE.csv and --json.", "dim"))


def likelihood_tables(console: Console, measured, facts, points, likelihood: dict, model: str | None) -> None:
    """The likelihood reader's lifts: by probe point, with the 95% bootstrap interval and how many of the facts
    asked there the policy kept; then by fact, each point's lift after its state (kept, gone...)."""
    labels = [point.label for point in points]
    states = {report.policy: report.facts for report in measured}
    rows = []
    for condition, lifts in likelihood.items():
        cells = []
        for label in labels:
            cell = lifts["likelihood_by_point"].get(label)
            asked = [fact for fact, by_point in lifts["likelihood"].items() if label in by_point]
            kept = sum(states.get(condition, {}).get(fact, {}).get(label) == "kept" for fact in asked)
            cells.append("–" if cell is None else lift_cell(cell)
                         + (f" ✓{kept}/{len(asked)}" if condition in states else ""))
        rows.append([condition, *cells])
    console.print(Fitted(f"Lift of the gold answer, nats: log p(gold | context, question) less log p(gold | question "
                         f"alone), mean over facts and phrasings [95% bootstrap], ✓ facts kept of those asked · "
                         f"model {model}",
                         [Column("context", "left", "never"), *(Column(label, "center") for label in labels)], rows))
    rows = []
    for fact in (fact for fact in facts if fact.gold):
        row = [f"{fact.id}: {fact.gold[:30]}"]
        for report in measured:
            by_point = likelihood.get(report.policy, {}).get("likelihood", {}).get(fact.id, {})
            row.append(" ".join(f"{STATE_MARKS[report.facts.get(fact.id, {}).get(label, 'unstated')]}"
                                f"{by_point[label]['lift']:+.1f}" for label in labels if label in by_point))
        rows.append(row)
    console.print(Fitted("Each fact's lift at each probe point, after its state there (✓ kept, ◐ partly, ✂ cut, "
                         "✗ gone): a context that lost the fact should lift it by about nothing",
                         [Column("fact", "left", "text"), *(Column(r.policy, "center", "never") for r in measured)],
                         rows))
    console.print(plain("The likelihood reader generates nothing: each answer is scored as the Answer line after the "
                        "context. A distractor's lift is in --json and --answers.", "dim"))


def _first_line(text: str, limit: int = 70) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[:limit] + "…"


def sparkline(values: Sequence[int], top: int) -> str:
    blocks = "▁▂▃▄▅▆▇█"
    return "".join(blocks[min(int(v / top * (len(blocks) - 1) + 0.5), len(blocks) - 1)] if top else blocks[0]
                   for v in values)


PROGRESS_SECONDS = 10  # between two progress lines of one stage, when stderr is not a terminal
QUIET_SECONDS = 2  # a wait shorter than this prints no progress lines


def _progress_lines(console: Console):
    """Progress said in lines, for a stderr that is no terminal, once the wait is past QUIET_SECONDS: the first
    update of each stage (its text with the numbers taken out), then one every PROGRESS_SECONDS, so that a first
    run's minutes of unpacking are seen and an ordinary load says nothing."""
    last, started = {"stage": None, "at": 0.0}, time.monotonic()

    def update(text: str) -> None:
        stage, now = re.sub(r"\d+", "#", text), time.monotonic()
        if now - started < QUIET_SECONDS:  # a wait as short as loading unpacked weights says nothing
            return
        if stage != last["stage"] or now - last["at"] >= PROGRESS_SECONDS:
            console.print(plain(text), soft_wrap=True)
            last.update(stage=stage, at=now)
    return update


@contextmanager
def spinner(text: str, start: bool = True, lines: bool = False):
    """A spinner on stderr while something long goes on; yields the function that updates its text (and starts
    it, when `start` is False: a spinner that is never updated never shows). With `lines`, a stderr that is no
    terminal gets the progress as lines instead (_progress_lines): for a wait of minutes, such as a first run."""
    console = Console(stderr=True)
    if lines and not console.is_terminal:  # a log or a pipe: no spinner, but a line a stage and every few seconds
        yield _progress_lines(console)
        return
    status = console.status(text)
    if start:
        status.start()

    def update(new_text: str) -> None:
        status.update(new_text)
        status.start()

    try:
        yield update
    finally:
        status.stop()
