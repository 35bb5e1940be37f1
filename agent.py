"""TinyReAct: a ReAct agent you can read in one sitting.

The model writes `Thought:` and `Action: tool(args)` as plain text; the program runs the tool and feeds
the result back as `Observation:`, until the model writes `Answer:` or the TTL (a budget of model calls)
runs out. Everything that happens is appended to a trace; a context policy decides what part of the
trace the model is shown on each call.

    python agent.py "What is 7 * 6 + 5?"
"""
import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

from models import Model, ModelConfigError, ModelError, ModelReply, load_model
from policies import POLICY_HELP, Policy, make_policy, measure, policy_tools
from policies.full import FullHistory
from prompts import render_instructions, tool_docs
from replies import ActionError, parse_action, parse_reply, cut_at_observation
from tokens import counter
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
class Context:
    """What the model was shown over one query, in local token counts (see tokens.py), by bucket."""
    totals: dict = field(default_factory=dict)  # summed over every reasoning call
    peak: int = 0  # the largest single context
    counter: str = ""  # which local counter made these figures (tokens.counter())


@dataclass
class Result:
    answer: str | None
    stop_reason: StopReason
    steps: int  # actions taken (tool runs, including failed ones)
    model_calls: int  # every call: reasoning, the --finish call, summaries
    usage: Usage  # summed from the API's own usage numbers, over every call
    trace: list[dict]
    seconds: float = 0.0
    error: Exception | None = None
    summary_calls: int = 0
    context: Context = field(default_factory=Context)
    model: str = ""
    usage_source: str = ""  # where the usage numbers come from: the API's billing, or a local count

    def to_dict(self) -> dict:
        return {
            "answer": self.answer, "stop_reason": self.stop_reason.value, "steps": self.steps, "model": self.model,
            "model_calls": self.model_calls, "summary_calls": self.summary_calls, "usage": vars(self.usage),
            "usage_source": self.usage_source,
            "context": vars(self.context), "seconds": round(self.seconds, 3),
            "error": str(self.error) if self.error else None, "trace": self.trace,
        }


@dataclass
class _Run:
    """Counters for one query()."""
    model_calls: int = 0
    summary_calls: int = 0  # made for the compact policy; they do not count against the TTL
    steps: int = 0
    format_errors: int = 0
    usage: Usage = field(default_factory=Usage)
    context: Context = field(default_factory=Context)
    actions: list = field(default_factory=list)

    @property
    def reasoning_calls(self) -> int:
        """The calls the TTL counts, which is also the current step's number."""
        return self.model_calls - self.summary_calls


class TinyReAct:
    def __init__(self, model: Model, tools: list[Callable] = DEFAULT_TOOLS, ttl: int = 8,
                 policy: Policy | None = None, trace: Trace | None = None):
        if ttl < 1:
            raise ValueError("ttl must be at least 1 model call")
        self.model, self.ttl, self.base_tools = model, ttl, list(tools)
        self.trace = trace if trace is not None else Trace()
        self._instructions = None
        self.use_policy(policy or FullHistory())

    def use_policy(self, policy: Policy) -> None:
        """Choose what the model is shown from now on; a policy's own tools (pinned notes) come and go with it."""
        self.policy = policy
        self.tools = {tool.__name__: tool for tool in self.base_tools + policy_tools(policy, self.trace)}
        self._instruct()

    def reset(self) -> None:
        """Start a new conversation; the trace keeps the old one, and policies look only past the reset."""
        self.trace.add("reset")
        self._instructions = None
        self._instruct()

    def _instruct(self) -> None:
        text = render_instructions(self.tools.values())
        if text != self._instructions:
            self._tool_docs = tool_docs(self.tools.values())
            self.trace.add("instructions", text=text, tools=self._tool_docs)
            self._instructions = text

    def query(self, question: str, finish: bool = False) -> Result:
        """Reason, act and observe until an answer, the TTL, or three unreadable replies in a row."""
        run, started = _Run(), time.monotonic()
        self.trace.add("question", text=question)
        answer, stop, error = None, StopReason.TTL, None
        try:
            while run.reasoning_calls < self.ttl:
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
                      time.monotonic() - started, error, run.summary_calls, run.context, self.model.name,
                      getattr(self.model, "usage_source", "reported by the model"))

    def _think(self, run: _Run):
        self._summarise_if_asked(run)
        messages = self.policy.render(self.trace.events)
        self._measure(run, messages)
        model_reply = self.model.generate(messages, STOP_SEQUENCES)  # <- the model is called here
        self._count(run, model_reply)
        step = run.reasoning_calls
        text = cut_at_observation(model_reply.text)
        self.trace.add("reply", step=step, text=text, raw=model_reply.text, blocked=model_reply.blocked)
        reply = parse_reply(text)
        for kind in ("thought", "action", "answer"):
            if getattr(reply, kind) is not None:
                self.trace.add(kind, step=step, text=getattr(reply, kind))
        return model_reply, reply

    def _summarise_if_asked(self, run: _Run) -> None:
        """The compact policy asks for a model-written summary of older steps when the context is too big."""
        request = self.policy.summary_request(self.trace.events) if hasattr(self.policy, "summary_request") else None
        if request is None:
            return
        upto, messages = request
        summary = self.model.generate(messages, [])
        run.summary_calls += 1
        self._count(run, summary, purpose="summary")
        self.trace.add("summary", upto=upto, text=summary.text.strip(), policy=self.policy.name)

    def _measure(self, run: _Run, messages) -> None:
        tokens = measure(messages, self._tool_docs)
        run.context.counter = counter()
        self.trace.add("context", policy=self.policy.name, tokens=tokens, counter=run.context.counter)
        for bucket, count in tokens.items():
            run.context.totals[bucket] = run.context.totals.get(bucket, 0) + count
        run.context.peak = max(run.context.peak, sum(tokens.values()))

    def _count(self, run: _Run, reply: ModelReply, purpose: str = "step") -> None:
        run.model_calls += 1
        run.usage.input_tokens += reply.input_tokens
        run.usage.output_tokens += reply.output_tokens
        self.trace.add("usage", purpose=purpose, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
                       thoughts_tokens=reply.thoughts_tokens)

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
        self.trace.add("observation", step=run.reasoning_calls, text=cap(text, OBSERVATION_LIMIT))


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
CHAT_HELP = "one question per line · /context shows what the model sees · /policy NAME switches · /reset starts over · Ctrl-D quits"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="agent.py", description="Ask a question; a ReAct agent reasons, uses tools and answers. "
                                     "With no question on a terminal, or with --chat, it opens a conversation.",
        epilog="Environment: GEMINI_API_KEY (or GOOGLE_API_KEY), GEMINI_MODEL, GEMINI_TEMPERATURE, GEMINI_THINKING, "
               "GOOGLE_GEMINI_BASE_URL, WIKIPEDIA_API_URL, OPEN_METEO_URL, NO_COLOR; read from .env too. "
               "Exit codes: 0 answered, 1 no answer, 2 usage or configuration error, 130 interrupted.")
    parser.add_argument("question", nargs="?", help="the question to answer")
    parser.add_argument("--model", help="gemma-3-270m (offline), or a Gemini model (default: $GEMINI_MODEL, else "
                                        "gemini-flash-latest with a key, gemma-3-270m without)")
    parser.add_argument("--ttl", type=_positive_int, default=8, help="at most this many model calls a question (default: 8)")
    parser.add_argument("--policy", default="full", metavar="NAME",
                        help=f"context policy, what the model sees each call: {POLICY_HELP} (default: full)")
    parser.add_argument("--chat", action="store_true", help="a conversation: each line you type is a question")
    parser.add_argument("--trace", metavar="FILE", help="write every event to FILE as JSON Lines, as it happens")
    parser.add_argument("--json", action="store_true", help="print one JSON object with the answer, counts and trace")
    parser.add_argument("--show-prompt", action="store_true", help="print the instruction prompt and exit")
    parser.add_argument("--show-context", action="store_true",
                        help="before every model call, print exactly what the model is sent, part by part, with sizes")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the answer")
    group = parser.add_argument_group("comparing policies")
    group.add_argument("--compare", metavar="LIST", help="run the question once per policy, e.g. full,window:2,user-only:4")
    group.add_argument("--expect", metavar="TEXT", help="with --compare: mark answers containing TEXT correct")
    group.add_argument("--repeat", type=_positive_int, default=1, metavar="N", help="with --compare: N runs per policy")
    group.add_argument("--replay", metavar="FILE", help="replay a recorded session (a --trace file) under each policy")
    group.add_argument("--policies", metavar="LIST", default="full,window:2,user-only:4,elide:2,pinned,compact:8000",
                       help="with --replay: the policies to measure (default: all six)")
    group.add_argument("--probe", action="store_true", help="with --replay: ask the probe questions with the model")
    group.add_argument("--plot", metavar="FILE.svg", help="with --replay: also save the context-size chart as SVG")
    group.add_argument("--csv", metavar="FILE", help="with --replay: also save per-call context sizes as CSV")
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
    try:
        policy = make_policy(args.policy)
    except ValueError as problem:
        return _fail(str(problem))
    if args.show_prompt:
        print(render_instructions(DEFAULT_TOOLS + policy_tools(policy, Trace())))
        return EXIT_ANSWERED
    if args.replay:
        return _replay(args)
    if args.compare and not (args.question or "").strip():
        return _fail("--compare needs a question: python agent.py \"your question\" --compare full,window:2")
    chat = args.chat or (args.question is None and sys.stdin.isatty())
    if not chat and not (args.question or "").strip():
        return _fail("no question: run  python agent.py \"your question\"  (or --chat, or --help)")
    if chat and args.json:
        return _fail("--json answers one question; it does not go with --chat")
    _load_dotenv()
    try:
        model = _load_model(args.model)
        if args.compare:
            from compare import cli_compare
            return cli_compare(args, model)
    except (ModelConfigError, ValueError) as problem:
        return _fail(str(problem))

    from display import LiveDisplay
    display = LiveDisplay(events=not (args.json or args.quiet), context=args.show_context,
                          stderr=args.json or args.quiet)
    try:
        trace = Trace(args.trace, on_event=display.show)
    except OSError as problem:
        return _fail(f"cannot write the trace file: {problem.strerror}: {args.trace}")
    agent = TinyReAct(model, ttl=args.ttl, policy=policy, trace=trace)
    display.render_context = lambda: agent.policy.render(agent.trace.events)
    try:
        if chat:
            return _chat(agent, display, args)
        return _answer(agent, display, args, args.question.strip())
    except KeyboardInterrupt:
        trace.add("error", message="interrupted")
        display.close()
        if args.json:
            print(json.dumps({"answer": None, "stop_reason": "interrupted", "trace": list(trace.events)}))
        print("interrupted" + (f"; the trace so far is in {args.trace}" if args.trace else ""), file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        display.close()
        trace.close()


def _answer(agent: TinyReAct, display, args, question: str) -> int:
    """One question: run it, print the outcome as asked, and return the exit code."""
    result = agent.query(question, finish=args.finish)
    display.close()
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
    elif args.quiet:
        if result.answer is not None:
            print(result.answer)
    else:
        display.summary(result)
    if isinstance(result.error, ModelConfigError):
        return _fail(str(result.error))
    if result.error and (args.json or args.quiet):
        print(f"error: {result.error}", file=sys.stderr)
    return EXIT_ANSWERED if result.answer is not None else EXIT_NO_ANSWER


def _chat(agent: TinyReAct, display, args) -> int:
    """A conversation in one trace: each line is a question; a few /commands look inside."""
    display.note(f"TinyReAct chat, policy {agent.policy.name}: {CHAT_HELP}")
    code = EXIT_ANSWERED
    while True:
        try:
            line = input("> " if sys.stdin.isatty() else "").strip()
        except EOFError:
            return code
        if not line:
            continue
        command, _, argument = line.partition(" ")
        if command == "/context":
            display.show_context(agent.policy.render(agent.trace.events))
        elif command == "/policy":
            try:
                agent.use_policy(make_policy(argument))
                display.note(f"policy: {agent.policy.name}")
            except ValueError as problem:
                display.note(f"error: {problem}")
        elif command == "/reset":
            agent.reset()
            display.note("a new conversation; the trace keeps the old one")
        elif command.startswith("/"):
            display.note(f"unknown command {command}: {CHAT_HELP}")
        else:
            code = _answer(agent, display, args, line)
            if code == EXIT_USAGE:
                return code


def _load_model(name: str | None) -> Model:
    """load_model with its notice on stderr and a spinner there while a local model loads."""
    from rich.console import Console

    console = Console(stderr=True, highlight=False)
    status = console.status("loading…")
    try:
        return load_model(name, progress=lambda text: (status.update(text + "…"), status.start()),
                          notice=lambda text: console.print(text, style="dim", markup=False))
    finally:
        status.stop()


def _replay(args) -> int:
    from compare import cli_replay

    _load_dotenv()
    try:
        return cli_replay(args, lambda: _load_model(args.model))
    except (ModelConfigError, ValueError) as problem:
        return _fail(str(problem))
    except OSError as problem:
        return _fail(f"{problem.strerror}: {problem.filename}")


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _load_dotenv() -> None:
    """Read .env from the current folder or the nearest folder above it; the real environment wins."""
    from dotenv import find_dotenv, load_dotenv

    load_dotenv(find_dotenv(usecwd=True))


if __name__ == "__main__":
    sys.exit(main())
