"""Showing a run in the terminal as it happens, with rich: each trace event styled, a spinner while the model thinks.

Model and tool text is printed as plain Text, never parsed as rich markup. NO_COLOR is honoured by rich.
"""
from rich.console import Console
from rich.text import Text

STYLES = {
    "question": ("Question", "bold"),
    "thought": ("Thought", "cyan"),
    "action": ("Action", "yellow"),
    "observation": ("Observation", "green"),
    "answer": ("Answer", "bold green"),
    "finish": ("TTL reached", "magenta"),
    "error": ("Error", "bold red"),
}
SHOWN_CHARS = 600  # of a long observation; the trace keeps all of it


class LiveDisplay:
    def __init__(self, console: Console | None = None):
        self.console = console or Console(highlight=False)
        self._status = None

    def show(self, event: dict) -> None:
        """Print one trace event; start the spinner when the model is about to be called."""
        self._stop_spinner()
        kind = event["type"]
        if kind in STYLES:
            label, style = STYLES[kind]
            text = event.get("text") or event.get("message") or ""
            if kind == "observation" and text.startswith(("Error", "Warning")):
                style = "red"
            if len(text) > SHOWN_CHARS:
                text = text[:SHOWN_CHARS] + f" … ({len(text) - SHOWN_CHARS:,} more characters in the trace)"
            step = event.get("step")
            line = Text(f"{label}{step if step and kind != 'answer' else ''}: ", style=style + " bold")
            line.append(text, style=style)
            self.console.print(line)
        if kind in ("question", "observation", "finish"):
            self._status = self.console.status("thinking…", spinner="dots")
            self._status.start()

    def close(self) -> None:
        self._stop_spinner()

    def summary(self, result) -> None:
        usage = result.usage
        parts = [
            f"{result.steps} step{'s' if result.steps != 1 else ''}",
            f"{result.model_calls} model call{'s' if result.model_calls != 1 else ''}",
            f"{usage.input_tokens:,} tokens in / {usage.output_tokens:,} out",
            f"{result.seconds:.1f} s",
        ]
        if result.stop_reason.value != "answer":
            parts.append(f"stopped: {result.stop_reason.value}")
        self.console.print(Text(" · ".join(parts), style="dim"))

    def _stop_spinner(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
