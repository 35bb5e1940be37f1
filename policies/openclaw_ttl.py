"""openclaw-ttl: OpenClaw's session pruning (`contextPruning` in `cache-ttl` mode), replayed.

A prompt cache forgets a prefix minutes after its last use, and the call after that writes its
whole prompt again. OpenClaw prunes old tool results only for a call made `ttl` or more after the
call before, by the trace's clock (`t`; the replay's --pace sets it on a recorded conversation).
Pruning shapes that one request: the calls after it send the history unpruned, as does every call
after a shorter gap, which sends exactly what `full` sends.

When it prunes, it estimates the context in characters (a token of `context_window` is 4). Past
soft_trim_ratio of it, results over soft_trim_max_chars keep their first and last characters
(shown with TinyReAct's cut marker, not OpenClaw's note); past hard_clear_ratio, if the prunable
results hold min_prunable_tool_chars, whole results, oldest first, become the placeholder until
the estimate is below it. Results after the last keep_last_assistants replies are never pruned.

Parameters, OpenClaw's in Python spelling (keepLastAssistants -> keep_last_assistants,
softTrim.maxChars -> soft_trim_max_chars, hardClear.enabled -> hard_clear_enabled, tools.allow ->
tools_allow with one key a glob), and their defaults: ttl 5m (minutes unless it says ms, s or h),
keep_last_assistants 3, soft_trim_ratio 0.3, hard_clear_ratio 0.5, min_prunable_tool_chars
50,000, soft_trim_max_chars 4,000, soft_trim_head_chars and soft_trim_tail_chars 1,500 each,
hard_clear_enabled true, hard_clear_placeholder "[Old tool result content cleared]" (shown in
brackets as every marker is), tools_allow and tools_deny none, context_window 200,000 (the
model's; OpenClaw's default when it knows none).

Pick it for a person's conversation with pauses longer than the cache keeps a prefix. At its
defaults it prunes nothing of a context under about 60,000 tokens (240,000 characters).
"""
import re
from dataclasses import replace
from fnmatch import fnmatchcase

from policies.base import Policy, written
from policies.rendering import Conversation, Step, View, reply_text

# The sources of every rule below, read 2026-12-07: [docs] is
# https://docs.openclaw.ai/concepts/session-pruning ("Saved? No (per-request)"), with its "Defaults
# (when enabled)" as docs/concepts/session-pruning.md of https://github.com/openclaw/openclaw
# lists them; where the pages give no number or order, [source] is that repository's
# src/agents/pi-extensions/context-pruning/ (pruner.ts, extension.ts, settings.ts, tools.ts)
CHARS_PER_TOKEN = 4  # [docs] "Pruning uses an estimated context window (chars ≈ tokens × 4)"
DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)?")
SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


class OpenClawTTL(Policy):
    name = "openclaw-ttl"
    usage = "openclaw-ttl[:ttl=5m/...] (OpenClaw's pruning once the prompt cache has expired)"
    trial_arguments = (
        "ttl=1ms/context_window=200/min_prunable_tool_chars=0/keep_last_assistants=1",
        "ttl=1ms/context_window=500/soft_trim_max_chars=300/soft_trim_head_chars=100"
        "/soft_trim_tail_chars=50/hard_clear_enabled=false",
        "ttl=1ms/context_window=100/keep_last_assistants=0/min_prunable_tool_chars=0"
        "/tools_deny=fetch")

    def __init__(self, ttl: str = "5m", keep_last_assistants: int = 3,
                 soft_trim_ratio: float = 0.3, hard_clear_ratio: float = 0.5,
                 min_prunable_tool_chars: int = 50_000, soft_trim_max_chars: int = 4_000,
                 soft_trim_head_chars: int = 1_500, soft_trim_tail_chars: int = 1_500,
                 hard_clear_enabled: bool = True,
                 hard_clear_placeholder: str = "[Old tool result content cleared]",
                 tools_allow: tuple[str, ...] = (), tools_deny: tuple[str, ...] = (),
                 context_window: int = 200_000):
        # OpenClaw clamps or ignores a value it cannot use; a replay refuses it, so that no setting
        # silently means another
        duration = DURATION.fullmatch(ttl.strip())
        if duration is None:
            raise ValueError(f"ttl takes a duration such as 5m, 300s or 1h, got {ttl!r}")
        if not (0 <= soft_trim_ratio <= 1 and 0 <= hard_clear_ratio <= 1):
            raise ValueError("soft_trim_ratio and hard_clear_ratio need 0 to 1")
        if min(keep_last_assistants, min_prunable_tool_chars, soft_trim_max_chars,
               soft_trim_head_chars, soft_trim_tail_chars, context_window) < 0:
            raise ValueError("counts of replies, characters and tokens need >= 0")
        # ours: a trim keeping more than the size it is for would make the results it trims longer
        if soft_trim_head_chars + soft_trim_tail_chars >= soft_trim_max_chars:
            raise ValueError("soft_trim_head_chars + soft_trim_tail_chars is more than "
                             f"soft_trim_max_chars={soft_trim_max_chars} allows")
        if not hard_clear_placeholder.strip("[] "):
            raise ValueError("hard_clear_placeholder needs some text")
        # [source] settings.ts: "TTL to consider cache expired (duration string, default unit:
        # minutes)"
        self.seconds = float(duration.group(1)) * SECONDS[duration.group(2) or "m"]
        self.keep_last_assistants, self.context_window = keep_last_assistants, context_window
        self.soft_trim_ratio, self.hard_clear_ratio = soft_trim_ratio, hard_clear_ratio
        self.min_prunable_tool_chars = min_prunable_tool_chars
        self.max_chars, self.head, self.tail = (soft_trim_max_chars, soft_trim_head_chars,
                                                soft_trim_tail_chars)
        self.hard_clear_enabled = hard_clear_enabled
        self.placeholder = hard_clear_placeholder.strip("[] ")
        self.tools_allow, self.tools_deny = tools_allow, tools_deny
        self.name = written(
            "openclaw-ttl", self, ttl=ttl, keep_last_assistants=keep_last_assistants,
            soft_trim_ratio=soft_trim_ratio, hard_clear_ratio=hard_clear_ratio,
            min_prunable_tool_chars=min_prunable_tool_chars,
            soft_trim_max_chars=soft_trim_max_chars, soft_trim_head_chars=soft_trim_head_chars,
            soft_trim_tail_chars=soft_trim_tail_chars,
            hard_clear_enabled=hard_clear_enabled, hard_clear_placeholder=hard_clear_placeholder,
            tools_allow=tools_allow, tools_deny=tools_deny, context_window=context_window)

    def choose(self, conversation: Conversation, view: View) -> View:
        steps, now = conversation.steps, conversation.now
        before = steps[-1].reply.get("t") if steps else None  # the call before, by its reply
        # [docs] "pruning only runs if the last Anthropic API call for the session is older than
        # ttl"; [source] extension.ts: not with no call before, nor with a ttl of 0; it runs at a
        # gap of ttl or more
        if before is None or now is None or not self.seconds or now - before < self.seconds:
            return view
        # [docs] "If there aren't enough assistant messages to establish the cutoff, pruning is
        # skipped"
        if len(steps) < self.keep_last_assistants:
            return view
        # [source] pruner.ts: the estimate counts user messages, replies with their calls, results;
        # soft-trim from soft_trim_ratio on, hard-clear from hard_clear_ratio on
        window = self.context_window * CHARS_PER_TOKEN
        total = sum(len(turn.question["text"]) for turn in conversation.turns) \
            + sum(len(reply_text(step.reply)) + _result_chars(step) for step in steps)
        if not window or total / window < self.soft_trim_ratio:
            return view
        # [docs] "The last keepLastAssistants assistant messages are protected; tool results after
        # that cutoff are not pruned": a step's reply is its assistant message
        prunable = [step for step in steps[:len(steps) - self.keep_last_assistants]
                    if step.observations and self._allowed(step)
                    and view.why_hidden(step.index) is None and step.index not in view.stand_ins]
        trims, chars = {}, {step.index: _result_chars(step) for step in prunable}
        for step in prunable:  # [docs] "Soft-trim: only for oversized tool results"
            raw = chars[step.index]
            if raw > self.max_chars and self.head + self.tail < raw:
                trims[step.index] = (self.head, self.tail)
                chars[step.index] = self.head + len("\n...\n") + self.tail + len(
                    f"\n\n[Tool result trimmed: kept first {self.head} chars and last {self.tail}"
                    f" chars of {raw} chars.]")  # [source] pruner.ts: what a trimmed result holds
                total += chars[step.index] - raw
        cleared = {}
        if self.hard_clear_enabled and total / window >= self.hard_clear_ratio \
                and sum(chars.values()) >= self.min_prunable_tool_chars:
            for step in prunable:  # [source] pruner.ts: oldest first, while past the ratio
                if total / window < self.hard_clear_ratio:
                    break
                cleared[step.index] = self.placeholder
                total += len(self.placeholder) + 2 - chars[step.index]
                trims.pop(step.index, None)
        return replace(view, trims=trims | view.trims, stand_ins=cleared | view.stand_ins)

    def _allowed(self, step: Step) -> bool:
        """[docs] tools.allow / tools.deny: "support * wildcards. Deny wins. Matching is
        case-insensitive. Empty allow list => all tools allowed." Ours: a step's calls are pruned
        together, when all are allowed."""
        def matches(name, globs):
            return any(fnmatchcase(name, glob.lower()) for glob in globs)
        names = [action["text"].partition("(")[0].strip().lower() for action in step.actions]
        return all(not matches(name, self.tools_deny)
                   and (not self.tools_allow or matches(name, self.tools_allow)) for name in names)


def _result_chars(step: Step) -> int:
    """A step's tool results in characters as OpenClaw counts them: joined by a newline."""
    results = [result["text"] for result in step.observations]
    return len("\n".join(results))
