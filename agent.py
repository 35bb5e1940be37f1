"""TinyReAct: a ReAct agent you can read in one sitting.

The model writes `Thought:` and `Action: tool(args)` as plain text; the program runs the tool and feeds
the result back as `Observation:`, until the model writes `Answer:` or the TTL (a budget of model calls)
runs out. Everything that happens is appended to a trace; a context policy decides what part of the
trace the model is shown on each call.

    python agent.py "What is 7 * 6 + 5?"
"""
import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

from models import Model, ModelConfigError, ModelError, ModelReply, load_model
from policies import POLICIES, Policy, make_policy
from policies.full import FullHistory
from prompts import render_instructions
from replies import ActionError, parse_action, parse_reply, cut_at_observation
from tools import DEFAULT_TOOLS, bind_arguments
from traces import Trace

STOP_SEQUENCES = ["\nObservation"]  # and replies are cut at an Observation line too: some backends ignore these
MAX_FORMAT_ERRORS = 3  # consecutive replies with neither Action nor Answer before the run gives up
MAX_REPEATS = 3  # identical actions in a row before a fourth is refused with a warning
OBSERVATION_LIMIT = 2_000
FINISH_REQUEST = "You have no steps left. Using only the Observations above, write your best final Answer now, as: Answer: <answer>"


class StopReason(str, Enum):
    ANSWER = "answer"
    TTL = "ttl"
    FORMAT_ERRORS = "format_errors"
    ERROR = "error"


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class Result:
    answer: str | None
    stop_reason: StopReason
    steps: int  # actions taken (tool runs, including failed ones)
    model_calls: int
    usage: Usage  # summed from the API's own usage numbers, over every call
    trace: list[dict]
    seconds: float = 0.0
    error: Exception | None = None

    def to_dict(self) -> dict:
        return {
            "answer": self.answer, "stop_reason": self.stop_reason.value, "steps": self.steps,
            "model_calls": self.model_calls, "usage": vars(self.usage), "seconds": round(self.seconds, 3),
            "error": str(self.error) if self.error else None, "trace": self.trace,
        }


@dataclass
class _Run:
    """Counters for one query()."""
    model_calls: int = 0
    steps: int = 0
    format_errors: int = 0
    usage: Usage = field(default_factory=Usage)
    actions: list = field(default_factory=list)


class TinyReAct:
    def __init__(self, model: Model, tools: list[Callable] = DEFAULT_TOOLS, ttl: int = 8,
                 policy: Policy | None = None, trace: Trace | None = None):
        if ttl < 1:
            raise ValueError("ttl must be at least 1 model call")
        self.model, self.ttl = model, ttl
        self.tools = {tool.__name__: tool for tool in tools}
        self.policy = policy or FullHistory()
        self.trace = trace if trace is not None else Trace()
        self.trace.add("instructions", text=render_instructions(self.tools.values()))

    def query(self, question: str, finish: bool = False) -> Result:
        """Reason, act and observe until an answer, the TTL, or three unreadable replies in a row."""
        run, started = _Run(), time.monotonic()
        self.trace.add("question", text=question)
        answer, stop, error = None, StopReason.TTL, None
        try:
            while run.model_calls < self.ttl:
                model_reply, reply = self._think(run)  # render the context, call the model, record what it wrote
                if reply.answer is not None:
                    answer, stop = reply.answer, StopReason.ANSWER
                    break
                if reply.action is None:
                    run.format_errors += 1
                    self._observe(run, _format_error(model_reply))
                    if run.format_errors == MAX_FORMAT_ERRORS:
                        stop = StopReason.FORMAT_ERRORS
                        break
                    continue
                run.format_errors = 0
                run.steps += 1
                self._observe(run, self._act(run, reply.action))  # run the tool; its result is the observation
            if stop is StopReason.TTL and finish:
                self.trace.add("finish", text=FINISH_REQUEST)
                answer = self._think(run)[1].answer
        except ModelError as failure:
            self.trace.add("error", message=str(failure))
            stop, error = StopReason.ERROR, failure
        return Result(answer, stop, run.steps, run.model_calls, run.usage, list(self.trace.events),
                      time.monotonic() - started, error)

    def _think(self, run: _Run):
        messages = self.policy.render(self.trace.events)
        model_reply = self.model.generate(messages, STOP_SEQUENCES)  # <- the model is called here
        run.model_calls += 1
        run.usage.input_tokens += model_reply.input_tokens
        run.usage.output_tokens += model_reply.output_tokens
        text = cut_at_observation(model_reply.text)
        self.trace.add("reply", step=run.model_calls, text=text, raw=model_reply.text, blocked=model_reply.blocked)
        self.trace.add("usage", input_tokens=model_reply.input_tokens, output_tokens=model_reply.output_tokens,
                       thoughts_tokens=model_reply.thoughts_tokens)
        reply = parse_reply(text)
        for kind in ("thought", "action", "answer"):
            if getattr(reply, kind) is not None:
                self.trace.add(kind, step=run.model_calls, text=getattr(reply, kind))
        return model_reply, reply

    def _act(self, run: _Run, action: str) -> str:
        try:
            call = parse_action(action)
            tool = self.tools.get(call.name)
            if tool is None:
                return f"Error: there is no tool named {call.name!r}. Available tools: {', '.join(self.tools)}."
            arguments = bind_arguments(tool, call.args, call.kwargs)
        except ActionError as problem:
            return f"Error: {problem}."
        except TypeError as problem:
            return f"Error: {call.name}(): {problem}."
        run.actions.append((call.name, repr(arguments)))
        if run.actions[-MAX_REPEATS - 1:] == [run.actions[-1]] * (MAX_REPEATS + 1):
            return (f"Warning: you have already run {action} {MAX_REPEATS} times in a row; it was not run again. "
                    "Use the earlier Observation, try something different, or give your Answer.")
        try:
            result = tool(**arguments)  # <- the tool runs here
        except Exception as failure:  # a tool's failure is news for the model, not a crash
            return f"Error: {call.name} failed: {type(failure).__name__}: {failure}".replace("\n", " ")
        return str(result)

    def _observe(self, run: _Run, text: str) -> None:
        self.trace.add("observation", step=run.model_calls, text=cap(text, OBSERVATION_LIMIT))


def _format_error(model_reply: ModelReply) -> str:
    if model_reply.blocked:
        return f"Error: your reply was blocked ({model_reply.blocked}). Rephrase, then write a Thought and an Action or an Answer."
    if not model_reply.text.strip():
        return "Error: your reply was empty. Write a Thought, then an Action like add_numbers(2, 3) or an Answer."
    return "Error: your reply had no Action or Answer line. Write a Thought, then either Action: tool(args) or Answer: <answer>."


def cap(text: str, limit: int) -> str:
    """Keep at most `limit` characters: the head and the tail, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    budget = max(limit - 40, 0)
    head, tail = text[: budget - budget // 3], text[len(text) - budget // 3:]
    return f"{head}\n[... {len(text) - len(head) - len(tail):,} characters cut ...]\n{tail}"[:limit]


# ---------------------------------------------------------------- command line

EXIT_ANSWERED, EXIT_NO_ANSWER, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="agent.py", description="Ask a question; a ReAct agent reasons, uses tools and answers.",
        epilog="Environment: GEMINI_API_KEY (or GOOGLE_API_KEY), GEMINI_MODEL, GEMINI_TEMPERATURE, GEMINI_THINKING, "
               "GOOGLE_GEMINI_BASE_URL, WIKIPEDIA_API_URL, OPEN_METEO_URL, NO_COLOR; read from .env too. "
               "Exit codes: 0 answered, 1 no answer, 2 usage or configuration error, 130 interrupted.")
    parser.add_argument("question", nargs="?", help="the question to answer")
    parser.add_argument("--model", help="model name (default: $GEMINI_MODEL, else gemini-flash-latest)")
    parser.add_argument("--ttl", type=_positive_int, default=8, help="at most this many model calls (default: 8)")
    parser.add_argument("--policy", default="full", metavar="NAME",
                        help=f"context policy: what the model sees each call ({', '.join(POLICIES)}; default: full)")
    parser.add_argument("--trace", metavar="FILE", help="write every event to FILE as JSON Lines, as it happens")
    parser.add_argument("--json", action="store_true", help="print one JSON object with the answer, counts and trace")
    parser.add_argument("--show-prompt", action="store_true", help="print the instruction prompt and exit")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the answer")
    parser.add_argument("--finish", action="store_true",
                        help="when the TTL runs out, make one more call asking for the best answer so far")
    return parser.parse_args(argv)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"must be between 1 and 1000, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.show_prompt:
        print(render_instructions(DEFAULT_TOOLS))
        return EXIT_ANSWERED
    if not (args.question or "").strip():
        return _fail("no question: run  python agent.py \"your question\"  (or --help)")
    _load_dotenv()
    try:
        policy = make_policy(args.policy)
        model = load_model(args.model)
    except (ValueError, ModelConfigError) as problem:
        return _fail(str(problem))

    display = None
    if not (args.json or args.quiet):
        from display import LiveDisplay
        display = LiveDisplay()
    try:
        trace = Trace(args.trace, on_event=display.show if display else None)
    except OSError as problem:
        return _fail(f"cannot write the trace file: {problem.strerror}: {args.trace}")
    agent = TinyReAct(model, ttl=args.ttl, policy=policy, trace=trace)
    try:
        result = agent.query(args.question.strip(), finish=args.finish)
    except KeyboardInterrupt:
        trace.add("error", message="interrupted")
        if args.json:
            print(json.dumps({"answer": None, "stop_reason": "interrupted", "trace": list(trace.events)}))
        print("interrupted" + (f"; the trace so far is in {args.trace}" if args.trace else ""), file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if display:
            display.close()
        trace.close()

    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
    elif args.quiet:
        if result.answer is not None:
            print(result.answer)
    else:
        display.summary(result)
    if isinstance(result.error, ModelConfigError):
        return _fail(str(result.error))
    if result.error and not display:
        print(f"error: {result.error}", file=sys.stderr)
    return EXIT_ANSWERED if result.answer is not None else EXIT_NO_ANSWER


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _load_dotenv() -> None:
    """Read .env from the current folder or the nearest folder above it; the real environment wins."""
    from dotenv import find_dotenv, load_dotenv

    load_dotenv(find_dotenv(usecwd=True))


if __name__ == "__main__":
    sys.exit(main())
