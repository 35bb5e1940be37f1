"""strands-window: Strands Agents' default manager, `SlidingWindowConversationManager`, replayed.

Strands edits its list of messages in place; this policy replays those edits on the trace from
its start at every call, so that what it shows is a function of the trace. A question is one
message, a reply one, and the result answering it one more. After each question is answered (an
"invocation"), if more than `window_size` messages are kept, the oldest go, up to the first
question at least `window_size` from the end or, when there is none, up to the first reply with
a tool call: the messages kept never start with a result without its call. A tool result is cut
to its first and last 200 characters only when the model refuses a prompt as longer than its
window; `context_window` stands in for that refusal. Below both, it sends exactly what `full` sends.

Parameters, with Strands' names and defaults: window_size (40 messages), should_truncate_results
(true), per_turn (false, written 0; true is 1; N trims before every N-th model call too), and
context_window (the replay's, not Strands': 200,000 tokens, the window of Claude Sonnet 4, the
model Strands uses when given none). Strands' pin_first is not replayed. TinyReAct differs twice:
a marker says how many steps went, and a question stays in view with any of its steps.

Pick it to see what a Strands agent at its defaults keeps: 40 messages are about 13 tool calls.
"""
from dataclasses import replace

from policies.base import Policy, written
from policies.rendering import Conversation, View
from policies.sizes import Sizes
from tokens import local_counter

# The sources of every rule below, read 2026-12-07: [docs] is
# https://strandsagents.com/docs/api/python/strands.agent.conversation_manager.sliding_window_conversation_manager/
# with https://strandsagents.com/docs/user-guide/concepts/agents/conversation-management/ and,
# for the default model ("a default Claude 4 Sonnet inference model"),
# https://strandsagents.com/docs/user-guide/sdk/model-providers/amazon-bedrock/; where the pages
# give no order, [source] is the class's source, strands-py/src/strands/agent/conversation_manager/
# sliding_window_conversation_manager.py of https://github.com/strands-agents/harness-sdk
PRESERVE = 200  # [docs] "preserving the first and last 200 characters" of a truncated result
CUT = (PRESERVE, PRESERVE)


class StrandsWindow(Policy):
    name = "strands-window"
    usage = "strands-window[:window_size=N/...] (Strands' sliding window)"
    trial_arguments = ("window_size=4", "window_size=3/per_turn=1", "window_size=0",
                       "window_size=6/context_window=600",
                       "context_window=300/should_truncate_results=false")

    def __init__(self, window_size: int = 40, should_truncate_results: bool = True,
                 per_turn: int = 0, context_window: int = 200_000):
        # [docs] "ValueError: If window_size is negative, or if per_turn is 0 or a negative integer"
        if window_size < 0 or per_turn < 0 or context_window < 0:
            raise ValueError("window_size, per_turn and context_window need >= 0")
        self.window_size, self.should_truncate_results = window_size, should_truncate_results
        self.per_turn, self.context_window = per_turn, context_window
        self.name = written("strands-window", self, window_size=window_size, per_turn=per_turn,
                            should_truncate_results=should_truncate_results,
                            context_window=context_window)
        self._sizes = Sizes()

    def choose(self, conversation: Conversation, view: View) -> View:
        kept, sizes = _Kept(self, conversation), self._sizes
        for number, turn in enumerate(conversation.turns):
            if number:  # [docs] "Applies sliding window management after each invocation"
                kept.manage()
            kept.add(("question", turn), sizes.question(conversation, turn))
            for step in turn.steps:
                kept.before_call()
                kept.add(("use" if step.actions else "reply", step), sizes.step(conversation, step))
                if step.actions or step.observations:  # its result, counted with the step
                    kept.add(("result", step), 0)
        kept.before_call()  # the call this context is for
        hidden_before = max(view.hidden_before, kept.boundary())
        return replace(view, hidden_before=hidden_before,
                       trims=dict.fromkeys(kept.truncated, CUT) | view.trims)


class _Kept:
    """The messages Strands keeps as it edits them: those from `start` on, some results cut."""

    def __init__(self, policy: StrandsWindow, conversation: Conversation):
        self.policy, self.conversation = policy, conversation
        # (kind, its turn or step); kind: question, use (a reply with calls), reply or result
        self.messages: list[tuple] = []
        self.start, self.calls = 0, 0
        self.truncated: set[int] = set()  # the steps (by trace index) whose results were cut
        self.size = local_counter().count(conversation.instructions["text"])  # tokens kept

    def add(self, message: tuple, tokens: int) -> None:
        self.messages.append(message)
        self.size += tokens

    def before_call(self) -> None:
        self.calls += 1
        # [docs] per_turn: "True: Apply management before every model call - int (e.g., 3):
        # Apply management before every N model calls"
        if self.policy.per_turn and self.calls % self.policy.per_turn == 0:
            self.manage()
        # the model refuses a prompt longer than its window: [docs] "AfterModelCallEvent: Reduces
        # context on overflow errors and requests retry", until it fits or cannot be reduced
        window = self.policy.context_window
        while window and self.size > window and self.reduce(overflow=True):
            pass

    def manage(self) -> None:
        """[docs] apply_management: reduce once "if the message count exceeds the window size"."""
        if len(self.messages) - self.start > self.policy.window_size:
            self.reduce(overflow=False)

    def reduce(self, overflow: bool) -> bool:
        """reduce_context; False when it cannot (Strands raises; the replay sends what is left)."""
        kept, window = self.messages[self.start:], self.policy.window_size
        if window == 0:  # [source] "Use 0 to clear all messages on every reduction"
            return self._drop(len(kept))
        # [source] reduce_context: "When e is set (reactive overflow recovery), attempts to
        # truncate large tool results first": the oldest result, unless it was cut already or is at
        # most 2 * 200 characters; "When e is None ... only trims messages"
        oldest = next((step for kind, step in kept if kind == "result"), None)
        if overflow and self.policy.should_truncate_results and oldest is not None \
                and oldest.index not in self.truncated \
                and any(len(result["text"]) > 2 * PRESERVE for result in oldest.observations):
            sizes = self.policy._sizes
            self.size += sizes.step(self.conversation, oldest, trim=CUT) \
                - sizes.step(self.conversation, oldest)
            self.truncated.add(oldest.index)
            return True
        # [source] find_valid_trim_point, from "2 if len(messages) <= self.window_size else
        # len(messages) - self.window_size": a user message that is no tool result (a question);
        # failing that, the Python SDK's fallback, a tool call with its result after it
        start = 2 if len(kept) <= window else len(kept) - window
        at = next((i for i in range(start, len(kept)) if kept[i][0] == "question"), None)
        if at is None:
            at = next((i for i in range(start, len(kept) - 1) if kept[i][0] == "use"), None)
        return at is not None and self._drop(at)

    def _drop(self, count: int) -> bool:
        sizes = self.policy._sizes
        for kind, item in self.messages[self.start:self.start + count]:
            if kind == "question":
                self.size -= sizes.question(self.conversation, item)
            elif kind != "result":
                cut = CUT if item.index in self.truncated else None
                self.size -= sizes.step(self.conversation, item, trim=cut)
                self.truncated.discard(item.index)
        self.start += count
        return count > 0

    def boundary(self) -> int:
        """The trace index the kept messages start at (View.hidden_before)."""
        if self.start == 0:
            return 0
        if self.start < len(self.messages):
            return self.messages[self.start][1].index
        return self.conversation.steps[-1].index + 1 if self.conversation.steps else 0
