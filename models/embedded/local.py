"""What the embedded models share above the network: the Model seam, the plain-text ReAct transcript they
continue, and where a continuation is cut.

Both models are given the conversation as one plain-text transcript ending in the opening they should
continue from (`Thought1:`, `ThoughtN:` or `Answer:`), and decode greedily until a stop text, the end of an
Answer line, or one of their end tokens. Qwen is an instruct model, but this plain layout did as well as its
chat template on the project's questions (and the template with one turn per step did worse).
"""
import re
from typing import Callable, Protocol

from models import MAX_NEW_TOKENS, ContextOverflow, Message, ModelReply
from models.embedded.prefixes import PrefixStore
from models.embedded.transformer import Transformer
from replies import observation_at, observation_may_begin


class Tokenizer(Protocol):
    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...

    def count(self, text: str) -> int: ...


class LocalModel:
    """The Model seam for an embedded model: renders the messages as a transcript and continues it."""
    backend = "local"
    usage_source = "counted by its tokenizer, nothing billed"
    temperature = 0.0  # greedy decoding

    def __init__(self, name: str, tokenizer: Tokenizer, network: Transformer, start: list[int],
                 end_tokens: frozenset[int], prefixes: PrefixStore | None = None):
        self.name, self.tokenizer, self.network = name, tokenizer, network
        self.start = start  # put before every prompt: a BOS, or nothing
        self.end_tokens = end_tokens  # any of them ends a continuation
        self.prefixes = prefixes  # saved starts of prompts (the instructions), across runs: models/embedded/prefixes.py

    @property
    def window(self) -> int:
        return self.network.arch.context

    def generate(self, messages: list[Message], stop: list[str], on_text: Callable[[str], None] | None = None,
                 tools: list[dict] | None = None, **ignored) -> ModelReply:
        """The continuation of the transcript of `messages`; `on_text` receives it piece by piece as decided. With
        `tools` (the native protocol, a model with a chat template for them), the model's own chat template."""
        if tools:
            return self.native_reply(messages, tools, on_text)
        ids, opening = self.prompt_ids(messages)
        self.fits(ids)
        if on_text is not None and opening:
            on_text(opening)
        text, count, finish = self.run(ids, len(self._instructions(messages, ids)) if messages else 0,
                                       StopRule(stop, opening), on_text)
        return ModelReply(opening + text, input_tokens=len(ids), output_tokens=count, finish=finish,
                          temperature=self.temperature)

    def log_likelihood(self, messages: list[Message], answer: str) -> float:
        """log p(answer | messages) in nats: how likely the model finds `answer` as the Answer line that continues
        the transcript of `messages` (`Answer: <answer>`). Nothing is generated. The network's cache is reused for
        the start this prompt shares with the last one (the conversation, then the question), so scoring several
        answers to one question, or several questions after one context, works through that context once.
        ContextOverflow when the prompt and the answer pass the model's window; ValueError for an empty answer."""
        if not answer.strip():
            raise ValueError("an empty answer has no likelihood to score")
        prompt = "\n".join(part.text for message in messages for part in message.parts) + "\nAnswer:"
        asked = self.start + self.tokenizer.encode(prompt)
        ids = self.start + self.tokenizer.encode(f"{prompt} {answer.strip()}")
        shared = next((n for n, (a, b) in enumerate(zip(asked, ids)) if a != b), len(asked))
        self.fits(ids)
        if self.prefixes is not None and not self.network.cached:  # a new process: the instructions may be saved
            self.prefixes.restore(self.network, ids)
        return self.network.log_likelihood(ids[:shared], ids[shared:])

    def native_reply(self, messages: list[Message], tools: list[dict], on_text) -> ModelReply:
        """A model with a chat template for tools overrides this (Qwen: models/embedded/qwen.py)."""
        raise NotImplementedError(f"{self.name} has no chat template for tools")

    def fits(self, ids: list[int]) -> None:
        """ContextOverflow when the prompt is longer than the model's window."""
        if len(ids) > self.window:
            raise ContextOverflow(f"the context is {len(ids):,} tokens, more than {self.name}'s window of "
                                  f"{self.window:,}: it was not run (a policy that keeps less, such as "
                                  "--policy window:4, keeps the context smaller)")

    def run(self, ids: list[int], instructions: int, stop: "StopRule", on_text) -> tuple[str, int, str]:
        """Continue `ids`, whose first `instructions` tokens every call of a session shares (saved across runs, so a
        new process does not work through them again)."""
        if self.prefixes is not None and not self.network.cached:  # a new process: the instructions may be saved
            self.prefixes.restore(self.network, ids)
        result = self.complete(ids, stop, on_text)
        if self.prefixes is not None and instructions:
            self.prefixes.save(self.network, ids[:instructions])
        return result

    def prompt_ids(self, messages: list[Message]) -> tuple[list[int], str]:
        """The tokens the network is given for `messages` (their transcript), and the opening it continues from."""
        prompt, opening = transcript(messages)
        return self.start + self.tokenizer.encode(prompt), opening

    def _instructions(self, messages: list[Message], ids: list[int]) -> list[int]:
        """The tokens the prompt `ids` begins with for its first part (the instructions, on a line of its own): the
        start that every call of a session, and every run with the same tools, shares."""
        first = self.start + self.tokenizer.encode(messages[0].parts[0].text + "\n")
        shared = next((n for n, (a, b) in enumerate(zip(first, ids)) if a != b), min(len(first), len(ids)))
        return ids[:shared]

    def complete(self, ids: list[int], stop: "StopRule", on_text: Callable[[str], None] | None = None,
                 max_new_tokens: int = MAX_NEW_TOKENS) -> tuple[str, int, str]:
        """Greedy continuation of `ids`, cut by `stop`: the text, the number of tokens generated, and how it ended
        ("stop": a stop text or an end token; "length": `max_new_tokens` or the window ran out first)."""
        generated: list[int] = []
        text, shown, finish = "", 0, None
        for token in self.network.greedy(ids, self.end_tokens, max_new_tokens):
            generated.append(token)
            text = self.tokenizer.decode(generated)
            cut = stop.cut(text)
            if cut >= 0:
                text, finish = text[:cut], "stop"
                break
            decided = len(text) - stop.undecided(text)
            if on_text is not None and decided > shown:
                on_text(text[shown:decided])
                shown = decided
        if on_text is not None and len(text) > shown:
            on_text(text[shown:])
        if finish is None:  # the network ended it: at an end token, or with every token it had room for
            room = min(max_new_tokens, self.window - len(ids))
            finish = "length" if len(generated) >= room else "stop"
        return text, len(generated), finish


class StopRule:
    """Where to cut a continuation: before the first stop text, or at the end of a finished Answer line
    (a model continuing a transcript does not stop by itself: after the answer it goes on to invent the next
    question)."""

    def __init__(self, stop: list[str], opening: str | None = None):
        """`opening` is where the continuation starts (see `transcript`); None: cut at the stop texts only."""
        self.stop = [s for s in stop if s]
        # An Answer line as the reply parser reads one (replies._LINE): numbered, bold or indented too.
        self.answer_line = None if opening is None else re.compile(
            r"(?:^|\n)[ \t]*\**[ \t]*Answer[ \t]*\d*[ \t]*\**[ \t]*:\**[^\n]*\S[^\n]*\n" if opening != "Answer:"
            else r"\S[^\n]*\n")

    def cut(self, text: str) -> int:
        """The position to cut `text` at, or -1 to go on."""
        cuts = [text.find(s) for s in self.stop if s in text]
        # With stop texts (a ReAct step, not a summary or a free continuation), an Observation the model writes after
        # other text on its line ends it too, as the loop's own cut would.
        made_up = observation_at(text) if self.stop else -1
        if made_up >= 0:
            cuts.append(made_up)
        finished = self.answer_line.search(text) if self.answer_line else None
        if finished:
            cuts.append(finished.end() - 1)
        return min(cuts, default=-1)

    def undecided(self, text: str) -> int:
        """How many characters at the end of `text` more text could still cut or change: the longest ending
        that begins a stop text, a final line break (it may end an Answer line), a partly decoded character."""
        held = max((n for s in self.stop for n in range(1, len(s)) if text.endswith(s[:n])), default=0)
        if self.stop:
            held = max(held, len(text) - observation_may_begin(text))
        if text.endswith("\n"):
            held = max(held, 1)
        return max(held, len(text) - len(text.rstrip("\ufffd")))


def transcript(messages: list[Message]) -> tuple[str, str]:
    """The conversation as plain text, one part after another on lines of their own, and the opening it should
    be continued from (`Thought1:` after a question, `ThoughtN:` after ObservationN-1, `Answer:` after the
    request to finish). This is the layout the reference measurements with llama.cpp used."""
    lines = [part.text for message in messages for part in message.parts]
    last = messages[-1].parts[-1] if messages and messages[-1].role == "user" else None
    opening = ""
    if last is not None and last.kind == "question":
        opening = "Thought1:"
    elif last is not None and last.kind == "observation":
        number = re.match(r"Observation(\d+)", last.text)
        opening = f"Thought{int(number.group(1)) + 1 if number else ''}:"
    elif last is not None and last.kind == "request" and len(messages) > 1:
        opening = "Answer:"
    return "\n".join(lines) + (f"\n{opening}" if opening else "\n"), opening
