"""A question (`agent.py "question"`) and a chat (`--chat`, or no question on a terminal): the loop (agent.py)
wired to the terminal view (views/display.py), the trace written as it happens, and the page kept."""
import argparse
import os
import sys

from agent import DEFAULT_TTL, TinyReAct
from results import echoed_error
from models import Model, ModelConfigError
from policies import POLICIES, Policy, make_policy
from protocols import Instructed, make_protocol
from settings import quoted
from tokens import local_counter
from traces import Trace
from views.terminal import clean
from tools import DEFAULT_TOOLS
from cli.approval import approval_for
from cli.arguments import call_number
from cli.compare import compare_trace_path
from cli.loading import mcp_servers, model_for_a_run, open_trace
from cli.otel import exporting
from cli.output import (EXIT_ANSWERED, EXIT_INTERRUPTED, EXIT_NO_ANSWER, EXIT_USAGE, UsageError, fail, print_json,
                        write_output)

# Models measured to fail at native calls (docs/protocols.md): said once, before the run, with what works instead.
NATIVE_WEAK = {"qwen2.5-coder-0.5b": "the embedded 0.5B repeats its tool calls in the native protocol (2 of 39 test "
                                     "questions right, against 30 with text): use --protocol text, or --model "
                                     "local:qwen2.5-coder-1.5b"}
CHAT_HELP = ("one question per line · /context shows what the model sees · "
             "/policy [NAME] names or switches the policy · /fork N goes on from model call N, asked again · "
             "/confirm [on|off] asks before every tool call, or only where needed · /reset starts over · Ctrl-D quits")


def ask(args, policy: Policy, specs: list[str]) -> int:
    """A question, or a chat: the model loaded, the run shown as it happens, the trace and the page kept."""
    chat = args.chat or (args.question is None and sys.stdin.isatty())
    if not chat and not (args.question or "").strip():
        return fail("no question: run  python agent.py \"your question\"  (or --chat, or --help)")
    with exporting(args) as export:  # --otel: each question's spans, sent as it stops
        model = model_for_a_run(args)
        with mcp_servers(args, DEFAULT_TOOLS) as servers:  # their processes end with the run, Ctrl-C included
            return _run_with(args, model, policy, chat, servers.tools, export)


def _run_with(args, model: Model, policy: Policy, chat: bool, more_tools: list, export=None) -> int:
    """A question or a chat, with the built-in tools and `more_tools` (an MCP server's); its spans sent through
    `export` (--otel)."""
    before = _resumed(args.resume) if args.resume else None
    agent, display = _agent_shown(args, model, policy, DEFAULT_TOOLS + more_tools, export, before)
    if before:
        display.note(f"resumed {args.resume}: {sum(e['type'] == 'question' for e in before)} questions so far")
    session = Session(agent, display, args.trace, export)
    try:
        return _chat(session, args) if chat else _answer(agent, display, args, args.question.strip())
    except KeyboardInterrupt:
        _interrupted(session.agent, session.display, args)
        if args.json:
            print_json({"answer": None, "stop_reason": "interrupted", "trace": list(session.agent.trace.events)})
        return EXIT_INTERRUPTED
    finally:
        session.display.close()
        session.agent.trace.close()
        if args.html:  # written whatever happened, Ctrl-C included: the page shows what there is
            _write_run_page(args.html, model, session.agent.trace, session.agent.counter)


class Session:
    """What a chat goes on with: its agent, the view that shows it, and the file its trace is written to (None:
    none). /fork N replaces them with the fork's, in a new file beside the chat's; the chat's own file is left as it
    was, and is the fork's parent."""

    def __init__(self, agent: TinyReAct, display, path: str | None, export=None):
        self.agent, self.display, self.path, self.export = agent, display, path, export


def _agent_shown(args, model: Model, policy: Policy, tools: list, export=None, before: list | None = None,
                 meta: dict | None = None) -> tuple[TinyReAct, object]:
    """The agent of a run or a chat, its trace written to --trace (and sent through `export`), and the terminal view
    that shows it as it goes; a fork's trace begins with the events `before` (not shown again) and its header with
    `meta`."""
    protocol = _protocol_for(args, model)
    # rich takes longer to import than --help takes to run: only when showing a run
    from views.display import LiveDisplay

    quiet = args.json or args.quiet
    display = LiveDisplay(events=not quiet, context=args.show_context, stderr=quiet)
    sent = {}  # what each call sends, by digest: the loop fills it, the view, the spans and the page read it
    follow = export.follow(_header(model), sent) if export else None
    on_event = display.show if follow is None else lambda event: (display.show(event), follow(event))
    trace = _trace(args.trace, meta or _header(model), sent, before or [])
    trace.watch(on_event)
    stream = not (args.no_stream or quiet) and sys.stdout.isatty()
    agent = TinyReAct(model, tools, ttl=args.ttl or DEFAULT_TTL, policy=policy, trace=trace, counter=local_counter(),
                      on_text=display.stream if stream else None, protocol=protocol,
                      approval=approval_for(args, display))
    display.counter = agent.counter
    display.render_context = lambda event: trace.sent[event["sent"]]  # what the loop sent, as it sent it
    display.offered = lambda: agent.protocol.offer(agent.tools.values(), model.name).schemas
    return agent, display


def _resumed(path: str) -> list[dict]:
    """--resume: the saved conversation the run goes on from (its policy renders from all of it), without its
    header; UsageError for a file that is not a trace."""
    events = open_trace(path).events
    if not any(event["type"] == "question" for event in events):
        raise UsageError(f"--resume {path}: it holds no question to go on from")
    return events


def _trace(path: str | None, meta: dict, sent: dict, before: list[dict]) -> Trace:
    """The run's trace, written to `path` if given, beginning with the events `before` (a fork's)."""
    try:
        trace = Trace(path, meta=meta, on_error=lambda message: print(f"warning: {message}", file=sys.stderr),
                      sent=sent)
    except OSError as problem:
        raise UsageError(f"cannot write the trace file: {problem.strerror}: {path}") from None
    trace.copy(before)
    return trace


def _protocol_for(args, model: Model):
    """The --protocol of a run or a chat, checked against the model before a trace file is made; a model measured to
    fail at it is said so, once."""
    protocol = make_protocol((args.protocol or ["text"])[0])
    if getattr(args, "instructions_text", None):  # a fork's --instructions
        protocol = Instructed(protocol, args.instructions_text)
    try:
        protocol.check(model)
    except ModelConfigError as problem:
        raise UsageError(str(problem)) from None
    if protocol.name == "native" and model.name in NATIVE_WEAK:
        print(f"note: {NATIVE_WEAK[model.name]}", file=sys.stderr)
    return protocol


def _header(model: Model) -> dict:
    """What a trace file's first line says of the model: its name, backend, and the temperature it is sent."""
    return {"model": model.name, "backend": model.backend, "temperature": model.temperature}


def _write_run_page(path: str, model: Model, trace: Trace, counter) -> None:
    from views.pages import run_page  # a mode's own modules load only in that mode (see cli/__init__.py)

    write_output(path, lambda: run_page(_header(model), trace.events, counter, sent=trace.sent))


def _interrupted(agent: TinyReAct, display, args) -> None:
    """Ctrl-C during a question: recorded in the trace, said in one line."""
    agent.trace.add("error", message="interrupted")
    display.close()
    print("interrupted" + (f"; the trace so far is in {args.trace}" if args.trace else ""), file=sys.stderr)


def _answer(agent: TinyReAct, display, args, question: str) -> int:
    """One question: run it, print the outcome as asked, and return the exit code."""
    result = agent.query(question, finish=args.finish)
    display.close()
    return outcome(agent, display, args, result)


def outcome(agent: TinyReAct, display, args, result, said: dict | None = None) -> int:
    """A question's outcome printed as asked (--json, with `said` beside the result; -q; the summary line), and
    the exit code."""
    if args.json:
        print_json({**result.to_dict(), **(said or {}), "trace": list(agent.trace.events)})
    elif args.quiet:
        if result.answer is not None:
            print(clean(result.answer))
    else:
        display.summary(result)
    if isinstance(result.error, ModelConfigError):
        return fail(str(result.error))
    if result.error and (args.json or args.quiet):
        print(f"error: {clean(result.error)}", file=sys.stderr)
    return _exit_code(result)


def _exit_code(result) -> int:
    """Answered, or not: no answer, or an answer that only repeats a tool's error (said on stderr)."""
    if result.answer is not None and echoed_error(result.trace):
        print("warning: the answer only repeats a tool's error: the question was not answered", file=sys.stderr)
        return EXIT_NO_ANSWER
    return EXIT_ANSWERED if result.answer is not None else EXIT_NO_ANSWER


def _chat(session: Session, args) -> int:
    """A conversation in one trace: each line is a question; a few /commands look inside, and /fork N goes on in a
    fork. Ctrl-C during a question cancels it and returns to the prompt; Ctrl-C at the prompt, or Ctrl-D, leaves."""
    session.display.note(f"TinyReAct chat, policy {session.agent.policy.name}: {CHAT_HELP}")
    if hasattr(sys.stdin, "reconfigure"):
        sys.stdin.reconfigure(errors="replace")  # bytes that are not UTF-8 become U+FFFD, as in a question argument
    if sys.stdin.isatty():
        # input() then edits the line, keeps this session's history, takes a line of any length (the terminal's own
        # line discipline cuts one at 4,095 characters) and ends only at Ctrl-D on an empty line.
        import readline  # noqa: F401
    code = EXIT_ANSWERED
    while True:
        try:
            line = input("> " if sys.stdin.isatty() else "").strip()
        except EOFError:
            return code
        if not line:
            continue
        try:
            code = _line(session, args, line, code)
        except KeyboardInterrupt:
            _interrupted(session.agent, session.display, args)
            session.display.note("the question was cancelled; ask another, or Ctrl-D to leave")
            continue
        if code == EXIT_USAGE:
            return code


def _line(session: Session, args, line: str, code: int) -> int:
    """One line of a chat: /fork N, another /command, or a question; the exit code so far."""
    if line.startswith("/fork"):
        _fork_command(session, args, line.removeprefix("/fork"))
    elif line.startswith("/"):
        _chat_command(session.agent, session.display, line)
    else:
        return _answer(session.agent, session.display, args, line)
    return code


def _fork_command(session: Session, args, argument: str) -> None:
    """/fork N: the chat so far forked at its model call N, as --from TRACE --fork N forks a saved one: the calls
    before N copied, the rest asked again live under the chat's policy, into a new trace beside the chat's (its
    header names the chat's file's SHA-256 and N); the chat then goes on in the fork."""
    from experiments.fork import fork_plan, run
    from experiments.provenance import digest

    agent = session.agent
    number = call_number(argument)
    if number is None:
        session.display.note("error: /fork takes a model call's number, as in /fork 2")
        return
    try:
        plan = fork_plan(agent.trace.events, number)
    except ValueError as problem:
        session.display.note(f"error: {str(problem).replace('--fork', '/fork', 1)}")
        return
    session.display.close()
    agent.trace.close()  # the parent is whole before its digest is taken; the chat goes on in the fork
    n, path = int(argument), _fork_path(session.path, int(argument))
    meta = {**_header(agent.model), **({"parent": digest(session.path)} if session.path else {}), "fork": n}
    forked = argparse.Namespace(**{**vars(args), "trace": path})
    session.agent, session.display = _agent_shown(forked, agent.model, make_policy(agent.policy.name),
                                                  agent.base_tools, session.export, plan["copied"], meta)
    session.path = path
    session.display.note(f"forked at call {n} under {agent.policy.name}: the calls before it are the chat's"
                         + (f"; the chat goes on in {path}" if path else ""))
    session.display.summary(run(session.agent, plan))


def _fork_path(path: str | None, n: int) -> str | None:
    """Where a chat's fork at call `n` is written: beside the chat's trace, a name no file has yet."""
    if not path:
        return None
    named = (compare_trace_path(path, f"fork-{n}{f'.{number}' if number > 1 else ''}", 0, 1)
             for number in range(1, 10_000))  # CHAT.fork-N.jsonl, then CHAT.fork-N.2.jsonl, ...
    return next(name for name in named if not os.path.exists(name))


def _policy_command(agent: TinyReAct, display, name: str) -> None:
    """/policy NAME switches to that policy; /policy alone names the one in use, and how each is written (as the
    help lists them, their notes left out)."""
    if not name:
        written = ", ".join(kind.usage.split(" (")[0] for kind in POLICIES.values())
        display.note(f"policy: {agent.policy.name} · /policy NAME switches to {written}, or several joined by +")
        return
    try:
        agent.use_policy(make_policy(name))
        display.note(f"policy: {agent.policy.name}")
    except ValueError as problem:
        display.note(f"error: {problem}")


def _asking(approval) -> str:
    """When the chat asks before a tool call, as /confirm sets it."""
    if approval.confirm:
        return "asking before every tool call"
    return "asking only before MCP tools that may be destructive" + (" (but --yes runs them all)"
                                                                     if approval.yes else "")


def _chat_command(agent: TinyReAct, display, line: str) -> None:
    """/context, /policy [NAME], /confirm [on|off], /reset, or a command that is none of them."""
    command, _, argument = line.partition(" ")
    argument = argument.strip()  # `/confirm  on` is `/confirm on`
    if command == "/context":
        display.show_context(agent.policy.render(agent.trace.events))
    elif command == "/policy":
        _policy_command(agent, display, argument)
    elif command == "/confirm" and argument in ("on", "off"):
        approval = agent.approval
        approval.confirm = argument == "on"
        if approval.confirm:  # every call, as it says: not --yes, nor a tool allowed for the session before
            approval.yes = False
            approval.allowed.clear()
        display.note(_asking(approval))
    elif command == "/confirm" and not argument:
        display.note(f"{_asking(agent.approval)} · /confirm on|off changes it")
    elif command == "/confirm":
        display.note(f"error: /confirm takes on or off, not {quoted(argument)}; "
                     f"{_asking(agent.approval)} still")
    elif command == "/reset":
        agent.reset()
        display.note("a new conversation; the trace keeps the old one")
    else:
        display.note(f"unknown command {command}: {CHAT_HELP}")
