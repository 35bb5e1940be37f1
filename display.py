"""Showing a run in the terminal as it happens, with rich: each trace event styled, a spinner while the model
thinks, and on request the exact context of every call, part by part with its size.

Model and tool text is printed as plain Text, never parsed as rich markup. NO_COLOR is honoured by rich.
"""
from rich.console import Console
from rich.text import Text

from tokens import COUNTER, count_tokens

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
BUCKETS = ["instructions", "tools", "user", "model", "observations", "notes", "markers"]


class LiveDisplay:
    def __init__(self, events: bool = True, context: bool = False, stderr: bool = False):
        self.console = Console(highlight=False, stderr=stderr)
        self.events, self.context = events, context
        self.render_context = None  # set by the caller: renders the context the model is about to see
        self._status = None

    def show(self, event: dict) -> None:
        """Print one trace event; start the spinner when the model is about to be called."""
        self._stop_spinner()
        kind = event["type"]
        if kind == "context" and self.context and self.render_context:
            self.show_context(self.render_context(), event["policy"])
        if not self.events:
            return
        if kind in STYLES:
            label, style = STYLES[kind]
            text = event.get("text") or event.get("message") or ""
            if kind == "observation" and text.startswith(("Error", "Warning")):
                style = "red"
            if len(text) > SHOWN_CHARS:
                text = text[:SHOWN_CHARS] + f" … ({len(text) - SHOWN_CHARS:,} more characters in the trace)"
            step = event.get("step") if kind != "answer" else None
            line = Text(f"{label}{step or ''}: ", style=style + " bold")
            line.append(text, style=style)
            self.console.print(line)
        if kind == "context":
            self._status = self.console.status("thinking…", spinner="dots")
            self._status.start()

    def show_context(self, messages, policy: str = "") -> None:
        """Exactly the messages a call sends, each part labelled with its role, kind and local token count."""
        total = sum(count_tokens(part.text) for message in messages for part in message.parts)
        title = f"context{' · policy ' + policy if policy else ''} · {total:,} tokens, {COUNTER}"
        self.console.rule(Text(title, style="bold magenta"))
        for message in messages:
            for part in message.parts:
                self.console.print(Text(f"[{message.role} · {part.kind} · {count_tokens(part.text):,} tokens]",
                                        style="magenta"))
                self.console.print(Text(part.text))
        self.console.rule(style="magenta")

    def note(self, text: str) -> None:
        self._stop_spinner()
        self.console.print(Text(text, style="dim"))

    def close(self) -> None:
        self._stop_spinner()

    def summary(self, result) -> None:
        usage = result.usage
        calls = f"{result.model_calls} model call{'s' if result.model_calls != 1 else ''}"
        if result.summary_calls:
            calls += f" ({result.summary_calls} for summaries)"
        parts = [f"{result.steps} step{'s' if result.steps != 1 else ''}", calls,
                 f"{usage.input_tokens:,} tokens in / {usage.output_tokens:,} out (billed, from the API)",
                 f"{result.seconds:.1f} s"]
        if result.stop_reason.value != "answer":
            parts.append(f"stopped: {result.stop_reason.value}")
        self.console.print(Text(" · ".join(parts), style="dim"))
        totals = result.context.totals
        if totals:
            buckets = " · ".join(f"{name} {totals.get(name, 0):,}" for name in BUCKETS)
            self.console.print(Text(f"context shown, summed over calls: {buckets} · peak {result.context.peak:,} "
                                    f"({result.context.counter})", style="dim"))

    def _stop_spinner(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
