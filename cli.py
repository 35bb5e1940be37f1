"""The command line: `python agent.py "question"`, a chat, a comparison of policies, or a replay.

This is the top layer. It reads the arguments and the `.env` files, loads the model, wires the loop
(agent.py) to the terminal view (views/display.py), and turns every outcome into output and an exit code:
0 answered, 1 no answer, 2 usage or configuration error, 130 interrupted.
"""
import argparse
import json
import os
import re
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from agent import TinyReAct
from models import OFFLINE_MODEL, Model, ModelConfigError, ModelError, available_models, describe_models, load_model, parse_spec
from policies import POLICY_HELP, make_policy
from prompts import render_instructions
from tokens import local_counter, read_vocabulary_elsewhere
from tools import DEFAULT_TOOLS
from traces import Trace, TraceFile, as_text, load_trace
from views.terminal import clean

EXIT_ANSWERED, EXIT_NO_ANSWER, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_POLICIES = "full,window:2,user-only:4,elide:2,pinned,compact:8000"
CHAT_HELP = "one question per line · /context shows what the model sees · /policy NAME switches · /reset starts over · Ctrl-D quits"


class UsageError(Exception):
    """Bad input found after the arguments were read (a file that is not a trace, say): one line, exit 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):
        """A usage error is one line, not the whole usage text."""
        print(f"error: {message} (see --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = Parser(
        prog="agent.py", description="Ask a question; a ReAct agent reasons, uses tools and answers. "
                                     "With no question on a terminal, or with --chat, it opens a conversation.",
        epilog="Environment (also read from ./.env and the .env beside agent.py, never from a folder above; the real "
               "environment wins): TINYREACT_MODEL; GEMINI_API_KEY (or GOOGLE_API_KEY), GEMINI_MODEL, GEMINI_THINKING "
               "(none|minimal|low|medium|high|<budget>), GEMINI_TEMPERATURE, GEMINI_MAX_OUTPUT_TOKENS (8192), "
               "GOOGLE_GEMINI_BASE_URL; OPENAI_API_KEY, OPENAI_BASE_URL; OLLAMA_HOST (http://localhost:11434); "
               "LLAMACPP_BASE_URL (http://localhost:8080/v1); TINYREACT_CALL_DEADLINE (seconds for a whole model call, "
               "retries included: 120); TINYREACT_CACHE_DIR (~/.cache/tinyreact); WIKIPEDIA_API_URL, OPEN_METEO_URL; "
               "NO_COLOR. Exit codes: 0 answered, 1 no answer, 2 usage or configuration error, 130 interrupted.")
    parser.add_argument("question", nargs="?", help="the question to answer")
    parser.add_argument("--model", type=_given, metavar="SPEC",
                        help="gemini:NAME (or a bare gemini-… name), openai:NAME, ollama:NAME, llamacpp:NAME, or "
                             "local:NAME for an embedded model (default: $TINYREACT_MODEL, else $GEMINI_MODEL, else "
                             "gemini-flash-latest with a key, the embedded model without)")
    parser.add_argument("--models", action="store_true", help="list the models that can run here, and why others cannot")
    parser.add_argument("--verify-cache", action="store_true",
                        help="check every unpacked embedded model against the checksums written when it was unpacked")
    parser.add_argument("--no-stream", action="store_true",
                        help="show each reply when it is complete, not as it is written (replies stream only to a terminal)")
    parser.add_argument("--ttl", type=_positive_int, help="at most this many model calls a question (default: 8)")
    parser.add_argument("--policy", type=_given, metavar="NAME",
                        help=f"context policy, what the model sees each call: {POLICY_HELP} (default: full)")
    parser.add_argument("--chat", action="store_true", help="a conversation: each line you type is a question")
    parser.add_argument("--trace", type=_given, metavar="FILE", help="write every event to FILE as JSON Lines, as it happens; "
                                                        "with --compare, one file per run, named FILE.POLICY.jsonl")
    parser.add_argument("--json", action="store_true", help="print one JSON object with the answer, counts and trace")
    parser.add_argument("--show-prompt", action="store_true", help="print the instruction prompt and exit")
    parser.add_argument("--show-context", nargs="?", const="auto", type=_context_choice, metavar="full|changes",
                        help="before every model call, print what the model is sent, part by part, with sizes: "
                             "every part (full), or only what changed since the previous call (changes, the default "
                             "on a terminal)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the answer")
    parser.add_argument("--finish", action="store_true",
                        help="when the TTL runs out, make one more call asking for the best answer so far")
    group = parser.add_argument_group("comparing policies")
    group.add_argument("--compare", type=_given, metavar="LIST", help="run the question once per policy, e.g. full,window:2,user-only:4")
    group.add_argument("--expect", type=_given, metavar="TEXT", help="with --compare: mark answers containing TEXT correct")
    group.add_argument("--repeat", type=_positive_int, metavar="N", help="with --compare: N runs per policy (default: 1)")
    group.add_argument("--replay", type=_given, metavar="FILE", help="replay a recorded session (a --trace file) under each policy")
    group.add_argument("--policies", type=_given, metavar="LIST",
                       help=f"with --replay: the policies to measure (default: {DEFAULT_POLICIES})")
    group.add_argument("--probe", action="store_true", help="with --replay: ask the probe questions with the model")
    group.add_argument("--plot", type=_given, metavar="FILE.svg", help="with --replay: also save the context-size chart as SVG")
    group.add_argument("--csv", type=_given, metavar="FILE", help="with --replay: also save per-call context sizes and buckets as CSV")
    group.add_argument("--facts", type=_given, metavar="FILE", help="with --replay: the planted facts, their probes and probe points "
                                                       "(a facts file, see conversations/README.md); overrides the trace's")
    group.add_argument("--probe-facts", type=_given, metavar="IDS", help="with --replay: only these facts, e.g. booking,sintra")
    group.add_argument("--probe-points", type=_given, metavar="LIST", help="with --replay: only these probe points, by the number "
                                                              "in their label (turns, or calls for a trace header's)")
    group.add_argument("--phrasings", type=_positive_int, metavar="N", help="with --probe: ask only the first N phrasings")
    group.add_argument("--jobs", type=_positive_int, metavar="N",
                       help="with --probe: N calls at once, for network models (default: 1)")
    group.add_argument("--answers", type=_given, metavar="FILE.csv", help="with --probe: save every answer and its verdict as CSV")
    group.add_argument("--record", type=_given, metavar="SCRIPT.json", help="turn a scripted conversation into a trace (--trace FILE, "
                                                               "default SCRIPT.jsonl), through the real loop")
    group = parser.add_argument_group("seeing inside")
    group.add_argument("--html", type=_given, metavar="FILE.html",
                       help="also write one self-contained HTML page of the run, the chat, the comparison or the replay")
    group.add_argument("--from", type=_given, dest="source", metavar="TRACE.jsonl",
                       help="with --html: write the page of a saved trace (a run, a chat, or a --compare run's file)")
    return parser.parse_args(argv)


def _given(text: str) -> str:
    """An option's value, refused when empty: `--trace "$FILE"` with FILE unset must not turn the trace off."""
    if not text.strip():
        raise argparse.ArgumentTypeError("needs a value, got an empty one")
    return text


def _context_choice(text: str) -> str:
    if text not in ("auto", "changes", "full"):  # auto: the const when the flag comes alone
        raise argparse.ArgumentTypeError(f"takes full or changes, got {text!r} (write the question before --show-context)")
    return text


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"must be between 1 and 1000, got {value}")
    return value


# Options that only mean something in one mode: (option, the mode it needs, what to say).
ONLY_WITH = [
    ("expect", "compare", "--expect"), ("repeat", ("compare", "probe"), "--repeat"),
    ("policies", "replay", "--policies"), ("probe", "replay", "--probe"), ("plot", "replay", "--plot"),
    ("csv", "replay", "--csv"), ("facts", "replay", "--facts"), ("probe_facts", "replay", "--probe-facts"),
    ("probe_points", "replay", "--probe-points"), ("phrasings", "probe", "--phrasings"), ("jobs", "probe", "--jobs"),
    ("answers", "probe", "--answers"), ("source", "html", "--from"),
]
# Options a mode cannot use: (mode, option, flag).
NOT_WITH = [
    ("compare", "chat", "--chat"), ("compare", "quiet", "-q"), ("compare", "show_context", "--show-context"),
    ("compare", "policy", "--policy"), ("compare", "replay", "--replay"),
    ("replay", "question", "a question"), ("replay", "chat", "--chat"), ("replay", "trace", "--trace"),
    ("replay", "quiet", "-q"), ("replay", "show_context", "--show-context"), ("replay", "policy", "--policy"),
    ("replay", "ttl", "--ttl"), ("replay", "finish", "--finish"),
    ("chat", "json", "--json"),
    ("record", "question", "a question"), ("record", "chat", "--chat"), ("record", "compare", "--compare"),
    ("record", "replay", "--replay"), ("record", "show_context", "--show-context"),
    ("source", "question", "a question"), ("source", "chat", "--chat"), ("source", "compare", "--compare"),
    ("source", "replay", "--replay"), ("source", "record", "--record"), ("source", "trace", "--trace"),
    ("chat", "question", "a question (it takes its questions from the terminal)"),
    ("source", "json", "--json"), ("source", "quiet", "-q"), ("source", "policy", "--policy"),
    ("record", "json", "--json"), ("record", "quiet", "-q"), ("record", "ttl", "--ttl"), ("record", "model", "--model"),
    ("record", "html", "--html"), ("record", "finish", "--finish"),
    ("source", "model", "--model"), ("source", "ttl", "--ttl"), ("source", "finish", "--finish"),
    ("source", "show_context", "--show-context"), ("json", "quiet", "-q"),
]


# The options that name a file: the ones read, then the ones written.
FILES = ["replay", "record", "source", "facts", "trace", "html", "plot", "csv", "answers"]
WRITTEN = {"trace", "html", "plot", "csv", "answers"}
# The modes that do one thing and exit, and every option of a run, none of which they take.
EXITS = {"models": "lists the models and exits", "verify_cache": "checks the model cache and exits",
         "show_prompt": "prints the prompt and exits"}
RUN_OPTIONS = ["question", "chat", "compare", "replay", "record", "source", "html", "model", "policy", "ttl", "trace",
               "json", "quiet", "finish", "show_context", "no_stream", *EXITS]


def _device(path: str) -> bool:
    """/dev/null, /dev/stdout and the like: naming one twice overwrites nothing."""
    return os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path)


def _flag(option: str) -> str:
    """An option's name as typed: show_prompt is --show-prompt, source is --from."""
    return "--from" if option == "source" else "--" + option.replace("_", "-")


def conflict(args: argparse.Namespace) -> str | None:
    """The first combination of options that cannot work together, said in one line; None when they can."""
    for option, modes, flag in ONLY_WITH:
        modes = modes if isinstance(modes, tuple) else (modes,)
        if getattr(args, option) and not any(getattr(args, mode) for mode in modes):
            return f"{flag} only works with {' or '.join(map(_flag, modes))}"
    for mode, option, flag in NOT_WITH:
        if getattr(args, mode) and getattr(args, option):
            return f"{_flag(mode)} does not go with {flag}"
    if args.replay and args.model and not args.probe and "compact" not in (args.policies or DEFAULT_POLICIES):
        return "--model with --replay is for --probe, or for writing the summaries compact:T asks for"
    if args.jobs and args.jobs > 1 and args.model and _is_local(args.model):
        return "--jobs runs calls at once against network models; an embedded model answers one at a time"
    files = [(option, os.path.realpath(getattr(args, option))) for option in FILES if getattr(args, option)
             and not (option == "trace" and args.compare)]  # with --compare, --trace names the files it writes beside
    for number, (option, path) in enumerate(files):
        for other, other_path in files[number + 1:]:
            if path == other_path and other in WRITTEN and not _device(path):  # FILES lists what is read first
                return f"{_flag(option)} and {_flag(other)} name the same file: {_flag(other)} would overwrite it"
    if args.compare and args.trace and os.path.basename(args.trace) in ("", ".", ".."):
        return "--trace names a file, not a folder: with --compare, FILE.POLICY.jsonl are written beside it"
    for mode, does in EXITS.items():
        given = [option for option in RUN_OPTIONS if getattr(args, option) and option != mode
                 and not (mode == "show_prompt" and option == "policy")]  # the prompt shows the policy's tools
        if getattr(args, mode) and given:
            what = "a question" if given[0] == "question" else _flag(given[0])
            return f"{_flag(mode)} {does}; it does not go with {what}"
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the command line; Ctrl-C anywhere is one line and exit 130, and a closed stdout stops output, not the run."""
    sys.stdout = PipeGuard(sys.stdout)
    try:
        return _main(argv)
    except UsageError as problem:
        return fail(str(problem))
    except KeyboardInterrupt:  # before a run began, or between runs: nothing to keep
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        sys.stdout = sys.stdout.stream if isinstance(sys.stdout, PipeGuard) else sys.stdout


def _main(argv: list[str] | None) -> int:
    args = parse_args(argv)
    if args.question is not None:
        args.question = readable(args.question)
    if args.expect is not None:
        args.expect = readable(args.expect)
    problem = conflict(args)
    if problem:
        return fail(problem)
    try:
        policy = make_policy(args.policy or "full")
        if args.compare is not None:
            specs = _specs(args.compare)
        else:
            specs = _specs(args.policies if args.policies is not None else DEFAULT_POLICIES) if args.replay else []
    except ValueError as problem:
        return fail(str(problem))
    if args.show_prompt:
        print(render_instructions(DEFAULT_TOOLS + policy.tools(Trace())))
        return EXIT_ANSWERED
    if args.models:
        read = load_env_files()
        print(clean(describe_models(available_models(read))))
        return EXIT_ANSWERED
    if args.verify_cache:
        return _verify_cache()
    if args.source:
        return _page_of_trace(args.source, args.html)
    if args.replay:
        return _replay(args, specs)
    if args.record:
        return _record(args, policy)
    if args.compare is not None and args.trace and args.html and os.path.realpath(args.html) in {
            os.path.realpath(compare_trace_path(args.trace, make_policy(spec).name, attempt, args.repeat or 1))
            for spec in specs for attempt in range(args.repeat or 1)}:
        return fail(f"--html names one of the trace files --compare writes: {args.html}")
    if args.compare is not None and not (args.question or "").strip():
        return fail("--compare needs a question: python agent.py \"your question\" --compare full,window:2")
    chat = args.chat or (args.question is None and sys.stdin.isatty())
    if not chat and not (args.question or "").strip():
        return fail("no question: run  python agent.py \"your question\"  (or --chat, or --help)")
    load_env_files()
    read_vocabulary_elsewhere()  # the first run's token counter is made ready while the model loads
    try:
        model = _load_model(args.model)
    except (ModelConfigError, ValueError) as problem:
        return fail(str(problem))
    if args.compare is not None:
        return _compare(args, specs, model)
    from views.display import LiveDisplay  # rich takes longer to import than --help takes to run: only when showing a run

    display = LiveDisplay(events=not (args.json or args.quiet), context=_context_view(args),
                          stderr=args.json or args.quiet)
    try:
        trace = Trace(args.trace, on_event=display.show, meta={"model": model.name, "backend": model.backend},
                      on_error=lambda message: print(f"warning: {message}", file=sys.stderr))
    except OSError as problem:
        return fail(f"cannot write the trace file: {problem.strerror}: {args.trace}")
    stream = not (args.no_stream or args.json or args.quiet) and sys.stdout.isatty()
    agent = TinyReAct(model, ttl=args.ttl or 8, policy=policy, trace=trace, counter=local_counter(),
                      on_text=display.stream if stream else None)
    display.counter = agent.counter
    display.render_context = lambda: agent.policy.render(agent.trace.events)
    try:
        if chat:
            return _chat(agent, display, args)
        return _answer(agent, display, args, args.question.strip())
    except KeyboardInterrupt:
        _interrupted(agent, display, args)
        if args.json:
            print(json.dumps({"answer": None, "stop_reason": "interrupted", "trace": list(trace.events)}, ensure_ascii=False))
        return EXIT_INTERRUPTED
    finally:
        display.close()
        trace.close()
        if args.html:  # written whatever happened, Ctrl-C included: the page shows what there is
            from views.pages import run_page  # the modes' own modules load only in those modes (see _compare)

            write_output(args.html, lambda: run_page({"model": model.name, "backend": model.backend}, trace.events,
                                                   agent.counter))


def write_output(path: str, text: Callable[[], str]) -> bool:
    """Write a page, a chart or a table the run made; a failure is one warning line, never the loss of the run's own
    output. The text is made and encoded before the file is opened, so a failure there leaves an old file whole."""
    try:
        data = text().encode("utf-8")
        Path(path).write_bytes(data)
    except (OSError, UnicodeError) as problem:
        print(f"warning: cannot write {readable(path)}: {getattr(problem, 'strerror', None) or problem}", file=sys.stderr)
        return False
    return True


def _open_trace(path: str) -> TraceFile:
    """A saved trace, its cut last line (if any) said in one warning; UsageError for a file that is not one."""
    try:
        recorded = load_trace(path)
    except ValueError as problem:
        raise UsageError(str(problem)) from None
    except OSError as problem:
        raise UsageError(f"{problem.strerror}: {problem.filename}") from None
    if recorded.warning:
        print(f"warning: {path}: {recorded.warning}", file=sys.stderr)
    return recorded


def _page_of_trace(source: str, path: str) -> int:
    """`agent.py --html FILE --from TRACE.jsonl`: the page of a saved run, chat or comparison run."""
    from views.pages import run_page  # the modes' own modules load only in those modes (see _compare)

    recorded = _open_trace(source)
    page = lambda: run_page(recorded.header, recorded.events, local_counter(), title=f"TinyReAct: {readable(source)}")  # noqa: E731
    return EXIT_ANSWERED if write_output(path, page) else EXIT_USAGE


def _verify_cache() -> int:
    """`agent.py --verify-cache`: every model folder in the cache read back and checked; exit 1 if one is damaged."""
    from models.cache import cache_root, verify_caches  # numpy: only for this

    results = verify_caches()
    if not results:
        print(f"no unpacked model in {cache_root()}")
    for folder, damaged in results.items():
        if damaged:
            print(f"✗ {folder}: damaged: {', '.join(damaged)} — clear it with: rm -rf {folder}")
        else:
            print(f"✓ {folder}")
    return EXIT_NO_ANSWER if any(results.values()) else EXIT_ANSWERED


def _is_local(spec: str) -> bool:
    try:
        return parse_spec(spec)[0] == "local"
    except ModelConfigError:
        return False  # a bad spec is said when the model is loaded


def _context_view(args) -> str | None:
    """--show-context's view: as asked, else only the changes when the output is a terminal someone reads."""
    if args.show_context != "auto":
        return args.show_context
    stream = sys.stderr if args.json or args.quiet else sys.stdout
    return "changes" if stream.isatty() else "full"


def _interrupted(agent: TinyReAct, display, args) -> None:
    """Ctrl-C during a question: recorded in the trace, said in one line."""
    agent.trace.add("error", message="interrupted")
    display.close()
    print("interrupted" + (f"; the trace so far is in {args.trace}" if args.trace else ""), file=sys.stderr)


def _answer(agent: TinyReAct, display, args, question: str) -> int:
    """One question: run it, print the outcome as asked, and return the exit code."""
    result = agent.query(question, finish=args.finish)
    display.close()
    if args.json:
        print(json.dumps({**result.to_dict(), "trace": list(agent.trace.events)}, ensure_ascii=False))
    elif args.quiet:
        if result.answer is not None:
            print(clean(result.answer))
    else:
        display.summary(result)
    if isinstance(result.error, ModelConfigError):
        return fail(str(result.error))
    if result.error and (args.json or args.quiet):
        print(f"error: {clean(result.error)}", file=sys.stderr)
    return EXIT_ANSWERED if result.answer is not None else EXIT_NO_ANSWER


def _chat(agent: TinyReAct, display, args) -> int:
    """A conversation in one trace: each line is a question; a few /commands look inside. Ctrl-C during a question
    cancels it and returns to the prompt; Ctrl-C at the prompt, or Ctrl-D, leaves."""
    display.note(f"TinyReAct chat, policy {agent.policy.name}: {CHAT_HELP}")
    if hasattr(sys.stdin, "reconfigure"):
        sys.stdin.reconfigure(errors="replace")  # bytes that are not UTF-8 become U+FFFD, as in a question argument
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
            try:
                code = _answer(agent, display, args, line)
            except KeyboardInterrupt:
                _interrupted(agent, display, args)
                display.note("the question was cancelled; ask another, or Ctrl-D to leave")
                continue
            if code == EXIT_USAGE:
                return code


def _compare(args, specs: list[str], model: Model) -> int:
    """`agent.py QUESTION --compare LIST`: one table, or one JSON object with --json; --trace writes one file a run."""
    from views.display import LiveDisplay, live_table, spinner  # rich: only when showing a run (see main)
    # The experiments, report formats and pages load only in the modes that use them, so that --help and a
    # plain question do not pay the ~50 ms of importing them.
    from experiments.live import compare_live, summarise_runs
    from views.pages import compare_page

    question = (args.question or "").strip()
    counter, runs, interrupted, traces = local_counter(), [], False, []
    try:
        with spinner("starting…") as update:
            for run in compare_live(question, specs, model, DEFAULT_TOOLS, ttl=args.ttl or 8, finish=args.finish,
                                    expect=args.expect, repeat=args.repeat or 1, counter=counter,
                                    trace_path=lambda spec, attempt: compare_trace_path(args.trace, spec, attempt, args.repeat or 1),
                                    progress=lambda text: update(f"running {text}"), traces=traces):
                runs.append(run)
    except ModelConfigError as problem:
        return fail(str(problem))
    except OSError as problem:
        return fail(f"cannot write the trace file: {problem.strerror}: {problem.filename}")
    except KeyboardInterrupt:  # the runs that ended are still reported
        interrupted = True
    rows = summarise_runs(runs)
    if args.json:
        print(json.dumps({"question": question, "model": model.name, "expect": args.expect, "counter": counter.name,
                          "interrupted": interrupted, "rows": rows, "runs": [asdict(run) for run in runs]},
                         ensure_ascii=False))
    elif runs:
        live_table(LiveDisplay().console, rows, model.name, args.expect, counter.name)
    if args.html and traces:
        write_output(args.html, lambda: compare_page(traces, counter, expect=args.expect))
    if interrupted:
        print(f"interrupted after {len(runs)} of {len(specs) * (args.repeat or 1)} runs", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_ANSWERED if all(run.answer is not None for run in runs) else EXIT_NO_ANSWER


def compare_trace_path(path: str | None, spec: str, attempt: int, repeat: int) -> str | None:
    """`t.jsonl` becomes `t.window-2.jsonl` for the window:2 run (and `t.window-2.run2.jsonl` for its second)."""
    if not path:
        return None
    stem, suffix = (path[:-6], ".jsonl") if path.endswith(".jsonl") else (path, ".jsonl")
    slug = re.sub(r"[^A-Za-z0-9.+-]+", "-", spec).strip("-")
    return f"{stem}.{slug}{f'.run{attempt + 1}' if repeat > 1 else ''}{suffix}"


def _replay(args, specs: list[str]) -> int:
    """`agent.py --replay FILE [--policies LIST] [--facts FILE] [--probe]`: tables (and a plot), or JSON, CSV, SVG."""
    from views.display import LiveDisplay, replay_tables, spinner  # rich: only when showing a run (see main)
    from experiments.facts import cut_on_record, load_facts, probe_points
    from experiments.probe import probe
    from experiments.replay import Summaries, context_window, probe_calls, replay
    from views.pages import replay_page
    from views.reports import answers_csv, replay_csv, replay_json, svg_plot

    recorded = _open_trace(args.replay)
    header, events = recorded.header, recorded.events
    try:
        facts, declared = load_facts(header, args.facts)
        outside = []
        points = probe_points(declared, events, outside)
    except ValueError as problem:
        return fail(str(problem))
    except OSError as problem:
        return fail(f"{problem.strerror}: {problem.filename}")
    for problem in outside:  # a trace cut short, or one whose run ended before the point: the rest still replays
        print(f"warning: {args.replay}: {problem}; that probe point is left out", file=sys.stderr)
    if args.probe_facts:
        wanted = [name.strip() for name in args.probe_facts.split(",") if name.strip()]
        unknown = [name for name in wanted if name not in {fact.id for fact in facts}]
        if unknown:
            return fail(f"--probe-facts: no fact named {', '.join(unknown)}; the facts are {', '.join(f.id for f in facts)}")
        facts = [fact for fact in facts if fact.id in wanted]
    if args.probe_points:
        try:
            wanted = {int(number) for number in args.probe_points.split(",") if number.strip()}
        except ValueError:
            return fail(f"--probe-points takes numbers separated by commas, got {args.probe_points!r}")
        points = [point for point in points if point.number in wanted]
        if not points:
            return fail(f"--probe-points: none of {args.probe_points} is a probe point of {args.replay}")
    if args.probe and not any(event["type"] == "instructions" for event in events):
        return fail(f"{args.replay} has no instructions to probe with: it was cut short before its first model call")
    model, interrupted, answers = None, False, None
    if args.model or args.probe:
        load_env_files()
        try:
            model = _load_model(args.model)
        except (ModelConfigError, ValueError) as problem:
            return fail(str(problem))
        if args.jobs and args.jobs > 1 and model.backend == "local":
            return fail("--jobs runs calls at once against network models; an embedded model answers one at a time")
    counter = local_counter()
    stem = args.replay[:-6] if args.replay.endswith(".jsonl") else args.replay
    summaries = Summaries(model, stem + ".summaries.json")
    window_model = model.name if model else parse_spec(OFFLINE_MODEL)[1]
    window = context_window(window_model)
    try:
        reports = replay(header, events, specs, counter, facts, points, summaries, window)
    except OSError as problem:
        return fail(f"cannot write the summaries: {problem.strerror or problem}: {summaries.path}")
    except ModelError as problem:  # writing a summary for compact:T
        print(f"error: {clean(problem)}", file=sys.stderr)
        return EXIT_USAGE if isinstance(problem, ModelConfigError) else EXIT_NO_ANSWER
    failed = None
    if args.probe:
        answers = []
        try:
            with spinner("probing…") as update:
                probe(events, specs, model, facts, points, phrasings=args.phrasings, repeat=args.repeat or 1,
                      jobs=args.jobs or 1, summaries=summaries, counter=counter, progress=update, answers=answers)
        except KeyboardInterrupt:  # the answers so far are still reported
            interrupted = True
        except ModelError as problem:  # so are they when the model fails: the tables say how far it got
            failed = problem
    outputs = [(args.plot, lambda: svg_plot(reports, f"Context size per call: {readable(args.replay)}", counter.name,
                                            points, probe_calls(points, events))),
               (args.csv, lambda: replay_csv(reports)), (args.answers, lambda: answers_csv(answers or []))]
    unwritten = [path for path, text in outputs if path and not write_output(path, text)]  # the tables still follow
    model_name = model.name if model else None
    if args.json:
        print(json.dumps({**replay_json(reports, counter.name, facts, points, answers, model_name, window),
                          "interrupted": interrupted}, ensure_ascii=False))
    else:
        replay_tables(LiveDisplay().console, reports, facts, points, answers, model_name, args.replay, counter.name,
                      (window, window_model) if window else None, cut_on_record(events))
    if args.html and not write_output(args.html, lambda: replay_page(header, events, reports, counter, facts, points,
                                                                     answers, summaries, model_name,
                                                                     title=f"Replay of {readable(args.replay)}")):
        unwritten.append(args.html)
    if interrupted:
        print("interrupted: the probe tables hold the answers asked so far", file=sys.stderr)
        return EXIT_INTERRUPTED
    if failed:
        print(f"error: probing stopped, the tables hold the answers asked before: {clean(failed)}", file=sys.stderr)
        return EXIT_USAGE if isinstance(failed, ModelConfigError) else EXIT_NO_ANSWER
    if unwritten:
        return EXIT_USAGE
    return EXIT_ANSWERED if all(report.violations == 0 for report in reports) else EXIT_NO_ANSWER


def _record(args, policy) -> int:
    """`agent.py --record SCRIPT.json [--trace FILE] [--policy NAME]`: a scripted conversation played through the loop."""
    from experiments.recording import record_script  # see _compare

    path = args.trace or (args.record[:-5] if args.record.endswith(".json") else args.record) + ".jsonl"
    try:
        calls = record_script(args.record, path, policy)
    except ValueError as problem:
        return fail(str(problem))
    except OSError as problem:
        return fail(f"{problem.strerror}: {problem.filename}" if problem.filename else str(problem))
    print(f"{path}: {calls} model calls, recorded under {policy.name}")
    return EXIT_ANSWERED


def _load_model(name: str | None) -> Model:
    """load_model with its notice on stderr and a spinner there while a local model loads."""
    from views.display import spinner  # rich: only when showing a run (see main)

    with spinner("loading…", start=False) as update:
        return load_model(name, progress=lambda text: update(text + "…"), notice=lambda text: print(text, file=sys.stderr))


def _specs(text: str) -> list[str]:
    specs = [spec.strip() for spec in text.split(",") if spec.strip()]
    if not specs:
        raise ValueError("no policies given: list them separated by commas, as in full,window:2,user-only:4")
    names = [make_policy(spec).name for spec in specs]  # raises a clear ValueError for a bad one
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"policy {', '.join(twice)} is listed twice: use --repeat to run a policy more than once")
    return specs


def load_env_files() -> list[str]:
    """Read ./.env and the .env beside agent.py, never a folder above them; the real environment wins.
    Returns the files read."""
    from dotenv import load_dotenv  # only when a model is about to be loaded: --help stays fast

    read = []
    for path in dict.fromkeys([Path.cwd() / ".env", Path(__file__).resolve().parent / ".env"]):
        if path.is_file():
            try:
                load_dotenv(path, override=False)
            except UnicodeDecodeError:
                raise UsageError(f"{path} is not UTF-8 text: save it as UTF-8 (KEY=value lines)") from None
            except OSError as problem:
                raise UsageError(f"cannot read {path}: {problem.strerror or problem}") from None
            read.append(str(path))
    return read


def fail(message: str) -> int:
    print(f"error: {readable(clean(message))}", file=sys.stderr)  # they may quote a server, a file or the model
    return EXIT_USAGE


def readable(text: str) -> str:
    """A command-line argument as text: bytes that were not UTF-8 (kept by Python as surrogates) become U+FFFD."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte (a JSON escape like \ud800 makes one)
        return as_text(text)


class PipeGuard:
    """stdout that a closed pipe (`| head -1`) silences instead of breaking: the run goes on and keeps its trace
    and exit code, as a Unix tool's output would simply stop."""

    def __init__(self, stream):
        self.stream, self.broken = stream, False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return self.stream.write(text)
            except UnicodeEncodeError:  # a file name that was not UTF-8, on a strict terminal: shown with U+FFFD
                encoding = self.stream.encoding or "utf-8"
                shown = as_text(text).encode(encoding, "replace").decode(encoding)
                try:
                    return self.stream.write(shown)
                except BrokenPipeError:
                    self._silence()
            except BrokenPipeError:
                self._silence()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._silence()

    def _silence(self) -> None:
        self.broken = True
        try:  # the interpreter flushes stdout once more at exit: point the descriptor at nothing so that it is quiet
            os.dup2(os.open(os.devnull, os.O_WRONLY), self.stream.fileno())
        except (OSError, ValueError):
            pass

    def __getattr__(self, name):
        return getattr(self.stream, name)


if __name__ == "__main__":
    sys.exit(main())
