"""pinned[:top|end]: a block of notes the agent keeps itself, plus the last 4 steps.

The policy adds two tools while it is active, `pin_note(text)` and `unpin_note(index)`. Each pin and unpin
is a trace event, so the notes are part of the record and replay exactly. The notes block is shown at
the top of the context (`top`, the default) or just before the current question (`end`). Pick it for
long sessions where the model can tell which facts matter; it forgets what it did not pin.
"""
from dataclasses import replace
from typing import Callable

from models import Part
from policies.base import Policy
from policies.rendering import Conversation, View, pinned_notes
from policies.window import hide_all_but_recent

MAX_NOTES = 20
MAX_NOTE_CHARS = 500
RECENT_STEPS = 4


class PinnedNotes(Policy):
    name = "pinned"
    usage = "pinned[:top|end]"
    trial_arguments = ("top", "end")

    def __init__(self, where: str = "top"):
        if where not in ("top", "end"):
            raise ValueError(f"pinned takes top or end, got {where!r}")
        self.where = where
        self.name = "pinned" if where == "top" else "pinned:end"

    def choose(self, conversation: Conversation, view: View) -> View:
        view = hide_all_but_recent(conversation, view, RECENT_STEPS)
        if not conversation.notes:
            return view
        lines = [f"{number}. {note}" for number, note in enumerate(conversation.notes, 1)]
        return replace(view, blocks=view.blocks + [(self.where, Part("notes", "Pinned notes:\n" + "\n".join(lines)))])

    def tools(self, trace) -> list[Callable]:
        """pin_note and unpin_note, writing their note events into this trace."""

        def pin_note(text: str) -> str:
            """Pin a short note (a fact, a name, a number, an instruction from the user) so that it stays in
            your context for the rest of the session, even after old steps are no longer shown.
            Example: pin_note("The user's budget is 250 EUR") returns "Pinned as note 1."
            """
            text = " ".join(text.split())
            notes = pinned_notes(trace.events)
            if not text:
                return "Error: the note is empty."
            if len(text) > MAX_NOTE_CHARS:
                return f"Error: a note holds at most {MAX_NOTE_CHARS} characters; this one has {len(text)}."
            if len(notes) >= MAX_NOTES:
                return f"Error: there are already {MAX_NOTES} notes; unpin one first."
            trace.add("note", op="pin", text=text)
            return f"Pinned as note {len(notes) + 1}."

        def unpin_note(index: int) -> str:
            """Remove the pinned note with this number; the notes after it move up by one.
            Example: unpin_note(2) returns "Unpinned note 2."
            """
            notes = pinned_notes(trace.events)
            if not 1 <= index <= len(notes):
                return f"Error: there is no note {index}; the notes are numbered 1 to {len(notes)}."
            trace.add("note", op="unpin", index=index)
            return f"Unpinned note {index}."

        return [pin_note, unpin_note]

    def replay_caveat(self, events) -> str:
        if any(event["type"] == "note" for event in events):
            return ""
        return (f"the recorded replies never pin a note, so here it keeps only the last {RECENT_STEPS} steps; its "
                "notes need a session recorded under pinned (--record)")
