"""facts[:top|end]: a block of key facts kept apart from the history, at the top or before the current question.

The facts are extracted by a rule, with no model call: every statement the user made (a sentence of a question
that is not itself a question, of four words or more, not a greeting or thanks), and every short tool result
(at most 160 characters, not an error; its lines joined into one) with the call that produced it. The user's
standing instructions ("whenever you give me a cost, ...", "from now on ...") come first and are always kept; then
the latest of the others, 60 in all, in the order they came; a correction stays below the value it corrects. On
its own it adds the block to full history; composed (`window:2+facts`, `user-only:4+facts`), it adds the block to
what the other policies chose, which is where it saves tokens.
Pick it when the facts that matter are said in so many words by the user or returned as short tool results;
a fact inside a long page is not extracted.
"""
import re
from dataclasses import replace

from models import Part
from policies.base import Policy
from policies.invariants import KEY_FACTS
from policies.rendering import Conversation, View, read_conversation

MAX_FACTS = 30  # the latest facts the block keeps, standing instructions first (bench/facts_cap.py chose it)
SHORT_RESULT = 160  # characters: a tool result this short is a fact; a longer one is a document
SENTENCE = re.compile(r"(?<=[.!?])\s+")
SMALL_TALK = re.compile(r"^(hi|hello|hey|thanks|thank you|great|ok|okay)\b", re.IGNORECASE)
# A user's standing instruction: a rule for the rest of the conversation ("whenever you give me a cost, ...", "from
# now on ...", "always ..."). It holds however long ago it was said, so the block keeps it first, before the latest
# facts, and never lets it drop out for a later one (chosen on renovation.jsonl's rule; long.jsonl's is reported).
STANDING = re.compile(r"\b(whenever|from now on|every time|each time|always|never|for the whole (chat|conversation))\b",
                      re.IGNORECASE)
TOOL_FACT = re.compile(r"^[A-Za-z_][\w.]*\(.*\) returned ", re.DOTALL)  # a short tool result, as all_facts writes it


class KeyFacts(Policy):
    name = "facts"
    usage = "facts[:top|end] (extracted by rule, no model call)"
    trial_arguments = ("top", "end")

    def __init__(self, where: str = "top"):
        if where not in ("top", "end"):
            raise ValueError(f"facts takes top or end, got {where!r}")
        self.where = where
        self.name = "facts" if where == "top" else "facts:end"

    def choose(self, conversation: Conversation, view: View) -> View:
        lines = key_facts(conversation)
        if not lines:
            return view
        return replace(view, blocks=view.blocks + [(self.where, facts_block(lines))])

    def replay_caveat(self, events) -> str:
        """Said when the block could not hold every fact the rule found: the oldest dropped out."""
        try:
            found = len(all_facts(read_conversation(events).turns))
        except ValueError:  # no instructions: nothing was rendered
            return ""
        return (f"its block holds the latest {MAX_FACTS} of the {found} facts the rule finds in this session, so the "
                f"oldest {found - MAX_FACTS} of them that are not standing instructions dropped out of it"
                if found > MAX_FACTS else "")


def facts_block(facts: list[str]) -> Part:
    """The key-facts block as the model is shown it, one fact a line (stable:T shows the same block)."""
    return Part("notes", KEY_FACTS + "\n" + "\n".join(f"- {fact}" for fact in facts))


def key_facts(conversation: Conversation) -> list[str]:
    """The facts the rule finds in every turn before the current one: the standing instructions, then the latest of
    the others, MAX_FACTS in all."""
    return capped(all_facts(conversation.turns[:-1]), MAX_FACTS)


def standing(fact: str) -> bool:
    """Whether a fact is a user's standing instruction (STANDING), not a tool's result."""
    return bool(STANDING.search(fact)) and not TOOL_FACT.match(fact)


def capped(facts: list[str], most: int) -> list[str]:
    """At most `most` of `facts` (oldest first): the standing instructions first, in order (the latest `most` of them
    if there are more), then the latest of the others."""
    return latest(*by_kind(facts), most)


def by_kind(facts: list[str]) -> tuple[list[str], list[str]]:
    """The standing instructions among `facts`, and the others, each in order."""
    rules = [fact for fact in facts if standing(fact)]
    return rules, [fact for fact in facts if not standing(fact)]


def latest(rules: list[str], others: list[str], most: int) -> list[str]:
    """capped's choice from facts already split by_kind (a caller trying several `most` splits once)."""
    kept = rules[-most:] if most > 0 else []
    room = most - len(kept)
    return kept + (others[-room:] if room > 0 else [])


def all_facts(turns, before: int | None = None) -> list[str]:
    """Every fact the rule finds in these turns (with `before`, only in the questions and steps before that trace
    index), oldest first, each once."""
    found = []
    for turn in turns:
        if before is not None and turn.index >= before:
            break
        found += statements(turn.question["text"])
        steps = [step for step in turn.steps if before is None or step.index < before]
        for observation in (observation for step in steps for observation in step.observations):
            if observation.get("call") and len(observation["text"]) <= SHORT_RESULT \
                    and not observation["text"].startswith(("Error", "Warning", "Declined")):
                found.append(f"{observation['call']} returned {' '.join(observation['text'].split())}")  # one line
    return list(dict.fromkeys(found))


def statements(text: str) -> list[str]:
    """The sentences of a question that state something (the rule's user facts)."""
    return [sentence for sentence in SENTENCE.split(text.strip()) if _statement(sentence)]


def _statement(sentence: str) -> bool:
    sentence = sentence.strip()
    return len(sentence.split()) >= 4 and not sentence.endswith("?") and not SMALL_TALK.match(sentence) \
        and "\n" not in sentence
