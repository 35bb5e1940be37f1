"""anthropic-clear: Anthropic's tool-result clearing (`clear_tool_uses_20250919`), replayed.

Anthropic's API edits each request on its server; the client keeps sending its whole history. So
at every call this policy measures what full history sends (in the local tokenizer's tokens, not
Claude's), and past `trigger` it replaces the results of all tool uses but the latest `keep` with
a placeholder. Below the trigger it sends exactly what `full` sends. A clearing breaks the cached
prefix where it starts: `clear_at_least` skips one that would save too little to be worth it.

Parameters, with Anthropic's names and defaults: trigger (100,000 input tokens; with
trigger_type=tool_uses, a count of tool uses), keep (3 tool uses), clear_at_least (none: 0
tokens), exclude_tools (none; one key a tool), clear_tool_inputs (false: true clears the calls'
arguments too; the API's other form, a list of tool names, is not replayed).

Pick it to see what Anthropic's context editing keeps of a long tool-using session, and what it
costs with caching: conversations below its default trigger are sent whole.
"""
from dataclasses import replace

from policies.base import Policy, written
from policies.rendering import Conversation, Step, View
from policies.sizes import Sizes

# The source of every rule below, read 2026-12-07: "Tool result clearing" and "Configuration
# options for tool result clearing" of
# https://platform.claude.com/docs/en/build-with-claude/context-editing
CLEARED = "tool result cleared"  # "replacing them with placeholder text": its words are not given
# trigger: "You can specify this value in either input_tokens or tool_uses"
TRIGGER_TYPES = ("input_tokens", "tool_uses")


class AnthropicClear(Policy):
    name = "anthropic-clear"
    usage = "anthropic-clear[:trigger=T/keep=N/...] (Anthropic's tool-result clearing)"
    trial_arguments = ("trigger=200/keep=1",
                       "trigger=300/keep=0/clear_at_least=100/clear_tool_inputs=true",
                       "trigger=2/trigger_type=tool_uses/keep=1/exclude_tools=fetch")

    def __init__(self, trigger: int = 100_000, keep: int = 3, clear_at_least: int = 0,
                 exclude_tools: tuple[str, ...] = (), clear_tool_inputs: bool = False,
                 trigger_type: str = "input_tokens"):
        if trigger < 0 or keep < 0 or clear_at_least < 0:
            raise ValueError("trigger, keep and clear_at_least need >= 0")
        if trigger_type not in TRIGGER_TYPES:
            raise ValueError(f"trigger_type is one of {', '.join(TRIGGER_TYPES)}")
        # The docs are silent on a keep above a trigger of tool uses; we refuse it: the trigger
        # would fire at calls where keep leaves nothing to clear.
        if trigger_type == "tool_uses" and keep > trigger:
            raise ValueError(f"keep={keep} is more than trigger={trigger} tool uses allows")
        self.trigger, self.keep, self.clear_at_least = trigger, keep, clear_at_least
        self.exclude_tools, self.clear_tool_inputs = exclude_tools, clear_tool_inputs
        self.trigger_type = trigger_type
        self.name = written("anthropic-clear", self, trigger=trigger, keep=keep,
                            clear_at_least=clear_at_least, exclude_tools=exclude_tools,
                            clear_tool_inputs=clear_tool_inputs, trigger_type=trigger_type)
        self._sizes = Sizes()

    def choose(self, conversation: Conversation, view: View) -> View:
        uses = [step for step in conversation.steps if step.actions]
        # "Once the prompt exceeds this threshold, clearing will begin": the prompt as sent
        if self.trigger_type == "tool_uses":
            over = sum(len(step.actions) for step in uses) > self.trigger
        else:
            over = self._sizes.prompt(conversation) > self.trigger
        if not over:
            return view
        # keep: "how many recent tool use/result pairs to keep after clearing occurs. The API
        # removes the oldest tool interactions first". Ours: a step is cleared whole, and kept
        # if any of the calls its reply made is among the latest `keep`.
        cleared, later = [], 0
        for step in reversed(uses):
            if later >= self.keep and self._clearable(step, view):
                cleared.append(step)
            later += len(step.actions)
        # clear_at_least: "If the API can't clear at least the specified amount, the strategy will
        # not be applied." Silent on the placeholder's own tokens: we count what the prompt loses.
        inputs = not self.clear_tool_inputs
        saved = sum(self._sizes.step(conversation, step)
                    - self._sizes.step(conversation, step, CLEARED, inputs=inputs)
                    for step in cleared)
        if not cleared or (self.clear_at_least and saved < self.clear_at_least):
            return view
        stand_ins = {step.index: CLEARED for step in cleared} | view.stand_ins
        bare = view.bare | ({step.index for step in cleared} if not inputs else set())
        return replace(view, stand_ins=stand_ins, bare=bare)

    def _clearable(self, step: Step, view: View) -> bool:
        """A result shown as it is, of no tool in exclude_tools: "List of tool names whose tool
        uses and results should never be cleared"."""
        names = {action["text"].partition("(")[0].strip() for action in step.actions}
        return bool(step.observations) and step.index not in view.stand_ins \
            and view.why_hidden(step.index) is None and not names & set(self.exclude_tools)
