"""The one place a streamed reply is cut: used by every backend that streams.

A reply streams in as pieces. The loop cuts every reply before a stop sequence and before a line that
starts with `Observation`, or an `ObservationN:` after other text (replies.cut_at_observation): the model must not
write its own observations.
So a piece is shown only once it is decided: a partial line that could still become `Observation`, or an
ending that could still become a stop sequence, is held back until the next piece settles it; at the cut
the stream is closed. `text` is then everything received up to the cut, the same text a non-streamed call
returns when the server applies the stop sequences itself.

Reasoning that a server sends inline, as a `<think>…</think>` block at the start of the reply, is split
off here too: it is passed to `on_reasoning`, never shown as reply text, never parsed for Actions.
"""
from typing import Callable

from models import MAX_REPLY_CHARS
from replies import observation_at, observation_may_begin

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def split_reasoning(text: str) -> tuple[str, str]:
    """(reasoning, reply) for a whole reply that may start with a `<think>…</think>` block."""
    stripped = text.lstrip()
    if not stripped.startswith(THINK_OPEN):
        return "", text
    inside, closed, rest = stripped[len(THINK_OPEN):].partition(THINK_CLOSE)
    return (inside.strip(), rest.lstrip()) if closed else (inside.strip(), "")


def cut_position(text: str, stop: list[str], start: int = 0) -> int:
    """Where the reply ends: the first stop sequence or Observation of the model's own at or after `start`, else -1."""
    cuts = [i for i in (text.find(s, start) for s in stop if s) if i >= 0]
    at = observation_at(text, text.rfind("\n", 0, start) + 1)
    return min(cuts + ([at] if at >= 0 else []), default=-1)


def undecided_from(text: str, stop: list[str]) -> int:
    """The index from which the end of `text` could still grow into a stop sequence or an Observation line."""
    held = len(text)
    for s in stop:
        for length in range(min(len(s) - 1, len(text)), 0, -1):  # the longest proper prefix of s ending the text
            if text.endswith(s[:length]):
                held = min(held, len(text) - length)
                break
    return min(held, observation_may_begin(text))


class StreamCut:
    """Feeds on streamed pieces; shows decided text through `show` and says when the stream must close."""

    def __init__(self, stop: list[str], show: Callable[[str], None] = lambda text: None,
                 on_reasoning: Callable[[str], None] = lambda text: None):
        self.stop, self.show, self.on_reasoning = [s for s in stop if s], show, on_reasoning
        self.received = ""  # reply text so far, reasoning removed
        self.shown = 0  # how much of `received` has been shown
        self.done = False  # the cut was reached: close the stream
        self.too_long = False  # the cut was MAX_REPLY_CHARS: the reply is cut as at an output limit (finish "length")
        self._head = ""  # the start of the stream, until it is known whether it opens a <think> block
        self._thinking: bool | None = None  # None until the start of the stream shows whether it opens <think>
        self._after_think = False

    def feed(self, piece: str) -> bool:
        """Take one piece; True once the reply is complete (a stop sequence or an Observation line came)."""
        if self.done:
            return True
        piece = self._without_reasoning(piece)
        if not piece:
            return False
        checked = max(0, self.shown - max((len(s) for s in self.stop), default=0))
        self.received += piece
        cut = cut_position(self.received, self.stop, checked)
        if cut >= 0:
            self.received = self.received[:cut]
            self.done = True
            self._show_up_to(cut)
            return True
        if len(self.received) > MAX_REPLY_CHARS:  # a runaway reply: nothing past the part kept is read or shown
            self.received, self.done, self.too_long = self.received[:MAX_REPLY_CHARS], True, True
            self._show_up_to(MAX_REPLY_CHARS)
            return True
        self._show_up_to(undecided_from(self.received, self.stop))
        return False

    def ending(self, finish: str | None) -> str | None:
        """How the reply ended, in ModelReply.finish's words: "length" when it was cut here for its size, else the
        server's word (`finish`), else "stop" (cut here at a stop sequence or an Observation, or the stream ended)."""
        return "length" if self.too_long else finish or "stop"

    def finish(self) -> str:
        """The stream ended: what was held back is decided now. Returns the reply text."""
        if self._thinking is None and self._head:  # too short to tell: it was reply text after all
            head, self._head, self._thinking = self._head, "", False
            self.feed(head)
        if self._thinking:
            self.on_reasoning(self._head)
            self._head = ""
        if not self.done:
            cut = cut_position(self.received, self.stop)
            if cut >= 0:
                self.received = self.received[:cut]
            self._show_up_to(len(self.received))
            self.done = True
        return self.received

    @property
    def text(self) -> str:
        return self.received

    def _show_up_to(self, end: int) -> None:
        if end > self.shown:
            self.show(self.received[self.shown:end])
            self.shown = end

    def _without_reasoning(self, piece: str) -> str:
        """The part of `piece` that is reply text; a leading <think> block goes to on_reasoning."""
        if self._thinking is False:
            if self._after_think:  # the reply proper starts at its first non-blank character, as in split_reasoning
                piece = piece.lstrip()
                self._after_think = not piece
            return piece
        self._head += piece
        if self._thinking is None:
            opening = self._head.lstrip()
            if len(opening) < len(THINK_OPEN) and THINK_OPEN.startswith(opening):  # may become "<think>": wait
                return ""
            if not opening.startswith(THINK_OPEN):
                self._thinking = False
                piece, self._head = self._head, ""
                return piece
            self._thinking = True
            self._head = opening[len(THINK_OPEN):]
        inside, closed, rest = self._head.partition(THINK_CLOSE)
        if not closed:
            keep = len(THINK_CLOSE) - 1  # a partial "</think>" may end the piece: keep it for the next one
            if len(inside) > keep:
                self.on_reasoning(inside[:-keep])
                self._head = inside[-keep:]
            return ""
        if inside:
            self.on_reasoning(inside)
        self._thinking, self._head, self._after_think = False, "", True
        return self._without_reasoning(rest)
