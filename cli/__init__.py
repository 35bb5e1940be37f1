"""The command line: `python agent.py "question"`, a chat, a comparison of policies, or a replay.

This is the top layer. It reads the arguments and the `.env` files, loads the model, wires the loop
(agent.py) to the terminal view (views/display.py), and turns every outcome into output and an exit code:
0 answered, 1 no answer, 2 usage or configuration error, 130 interrupted.
"""
import argparse
import importlib
import json
import os
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from agent import TinyReAct
from models import (BACKENDS, DEFAULT_MODEL, OFFLINE_MODEL, Model, ModelConfigError, ModelError, load_model,
                    parse_spec, resolved_spec)
from models.prices import price_of, prices
from policies import POLICY_HELP, Policy, make_policy
from prompts import render_instructions
from tokens import local_counter, read_vocabulary_elsewhere
from tools import DEFAULT_TOOLS
from redaction import redacted
from traces import Trace, TraceFile, as_text, load_trace, write_whole
from views.terminal import clean

EXIT_ANSWERED, EXIT_NO_ANSWER, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_POLICIES = "full,window:2,user-only:4,elide:2,pinned,compact:8000"
PRICED_REPLAY = "gemini-3.8-flash"  # what answers gemini-flash-latest, the default Gemini model, as of 2026-12
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
    group.add_argument("--prices-of", type=_given, metavar="MODEL", dest="prices_of",
                       help="with --replay: what each policy's input would cost at this model's list price, with and "
                            f"without prompt caching (default: {PRICED_REPLAY}; see models/prices.json)")
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


# The command line as one table: the modes, each chosen by its own option, and the options each one takes. Every
# refusal is read from it: an option given without a mode that takes it, a mode given an option it does not take,
# and a mode that does one thing and exits given anything else.
@dataclass(frozen=True)
class Mode:
    option: str | None  # the option that chooses it; None for a question, the default
    takes: str  # the options it works with, by their argparse names
    needs: str | None = None  # the one option it only works with: --from needs --html; --probe, a part of --replay,
    # needs --replay and takes what --replay takes too
    exits: str = ""  # what a mode that does one thing and exits does, as its refusal says


# When several modes are given, the first of them here speaks.
MODES = {
    "page": Mode("source", "html no_stream", needs="html"),
    "record": Mode("record", "trace policy no_stream"),
    "compare": Mode("compare", "question model ttl trace json finish html no_stream expect repeat"),
    "replay": Mode("replay", "model json html no_stream policies probe plot csv facts probe_facts probe_points prices_of"),
    "probe": Mode("probe", "repeat phrasings jobs answers", needs="replay"),
    "chat": Mode("chat", "model policy ttl trace quiet finish show_context html no_stream"),
    "run": Mode(None, "question model policy ttl trace json quiet finish show_context html no_stream"),
    "models": Mode("models", "", exits="lists the models and exits"),
    "verify_cache": Mode("verify_cache", "", exits="checks the model cache and exits"),
    "show_prompt": Mode("show_prompt", "policy model", exits="prints the prompt and exits"),
}
# Options that a mode takes, but not together.
EXCLUSIVE = [("json", "quiet")]
# Every option, in the order refusals name them (an option without its mode is said before a mode's other options).
OPTIONS = ["expect", "repeat", "policies", "probe", "plot", "csv", "facts", "probe_facts", "probe_points", "prices_of",
           "phrasings",
           "jobs", "answers", "source", "question", "chat", "compare", "replay", "record", "html", "model", "policy",
           "ttl", "trace", "json", "quiet", "finish", "show_context", "no_stream", "models", "verify_cache", "show_prompt"]
# The options that name a file: the ones read, then the ones written.
FILES = ["replay", "record", "source", "facts", "trace", "html", "plot", "csv", "answers"]
WRITTEN = {"trace", "html", "plot", "csv", "answers"}


def _device(path: str) -> bool:
    """/dev/null, /dev/stdout and the like: naming one twice overwrites nothing."""
    return os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path)


def _flag(option: str) -> str:
    """An option's name as typed: show_prompt is --show-prompt, source is --from."""
    return "--from" if option == "source" else "--" + option.replace("_", "-")


def _named(option: str, mode: str) -> str:
    """An option as a refusal names it: -q, a question."""
    if option == "question":
        return "a question (it takes its questions from the terminal)" if mode == "chat" else "a question"
    return "-q" if option == "quiet" else _flag(option)


# Read from MODES once: the mode each option chooses, the options of the modes that exit, and for each option that
# works only beside another (--expect beside --compare, --repeat beside --compare or --probe), which ones.
CHOOSERS = {mode.option: name for name, mode in MODES.items() if mode.option}
EXITS = {mode.option for mode in MODES.values() if mode.exits}
BESIDE = {option: [mode.option for mode in MODES.values() if mode.option and option in mode.takes.split()]
          for option in OPTIONS if option not in MODES["run"].takes.split() and option not in CHOOSERS}
BESIDE |= {mode.option: [mode.needs] for mode in MODES.values() if mode.needs}


def _takes(mode: Mode) -> set[str]:
    """The options a mode works with: its own, the one it needs, and all a mode it is a part of takes."""
    whole = _takes(MODES[CHOOSERS[mode.needs]]) if mode.needs in CHOOSERS else set()
    return set(mode.takes.split()) | {option for option in (mode.option, mode.needs) if option} | whole


def mode_of(args: argparse.Namespace) -> str:
    """The mode the options choose (after `conflict` has let them through)."""
    return _chosen([option for option in OPTIONS if getattr(args, option)])


def _chosen(given: list[str], exits: bool = True) -> str:
    """The first of MODES whose option is given, or the part of it given too (--replay with --probe is probe)."""
    names = [name for name, mode in MODES.items() if mode.option in given and (exits or not mode.exits)]
    if not names:
        return "run"
    parts = [name for name in names if MODES[name].needs == MODES[names[0]].option]
    return (parts or names)[0]


def conflict(args: argparse.Namespace) -> str | None:
    """The first combination of options that cannot work together, said in one line; None when they can."""
    given = [option for option in OPTIONS if getattr(args, option)]
    return _without_its_mode(args, given) or _not_taken(args, given) or _by_value(args) or _exits_alone(given)


def _without_its_mode(args, given: list[str]) -> str | None:
    """An option given without any mode that takes it: --expect without --compare, --probe without --replay."""
    for option in given:
        if option in BESIDE and not any(getattr(args, other) for other in BESIDE[option]):
            return f"{_flag(option)} only works with {' or '.join(map(_flag, BESIDE[option]))}"
    return None


def _not_taken(args, given: list[str]) -> str | None:
    """The first mode given, given an option it does not take (the modes that exit say so themselves); then two
    options that do not go together."""
    chosen = _chosen(given, exits=False)
    mode = MODES[chosen]
    speaker = mode.needs if mode.needs in CHOOSERS else mode.option  # a part of a mode speaks as the mode
    for option in _modes_first(given):
        if option not in _takes(mode) and option not in EXITS:
            return f"{_flag(speaker)} does not go with {_named(option, chosen)}"
    for first, second in EXCLUSIVE:
        if getattr(args, first) and getattr(args, second):
            return f"{_flag(first)} does not go with {_named(second, chosen)}"
    return None


def _by_value(args) -> str | None:
    """The refusals that depend on the values given."""
    return _model_unused(args) or _jobs_for_one(args) or _trace_folder(args) or _named_twice(args)


def _model_unused(args) -> str | None:
    """--model with --replay, where no probe and no summary asks for one."""
    if args.replay and args.model and not args.probe and not _asks_for_summaries(args.policies or DEFAULT_POLICIES):
        return "--model with --replay is for --probe, or for writing the summaries compact:T asks for"
    return None


def _jobs_for_one(args) -> str | None:
    if args.jobs and args.jobs > 1 and args.model and _is_local(args.model):
        return "--jobs runs calls at once against network models; an embedded model answers one at a time"
    return None


def _trace_folder(args) -> str | None:
    if args.compare and args.trace and os.path.basename(args.trace) in ("", ".", ".."):
        return "--trace names a file, not a folder: with --compare, FILE.POLICY.jsonl are written beside it"
    return None


def _named_twice(args) -> str | None:
    """A file read or written that another option would overwrite."""
    files = [(option, os.path.realpath(getattr(args, option))) for option in FILES if getattr(args, option)
             and not (option == "trace" and args.compare)]  # with --compare, --trace names the files it writes beside
    for number, (option, path) in enumerate(files):
        for other, other_path in files[number + 1:]:
            if path == other_path and other in WRITTEN and not _device(path):  # FILES lists what is read first
                return f"{_flag(option)} and {_flag(other)} name the same file: {_flag(other)} would overwrite it"
    return None


def _exits_alone(given: list[str]) -> str | None:
    """A mode that does one thing and exits, given an option it does not take."""
    for mode in MODES.values():
        others = [option for option in _modes_first(given) if option != mode.option and option not in _takes(mode)]
        if mode.exits and mode.option in given and others:
            what = "a question" if others[0] == "question" else _flag(others[0])
            return f"{_flag(mode.option)} {mode.exits}; it does not go with {what}"
    return None


def _modes_first(given: list[str]) -> list[str]:
    """The options given, with those that choose a mode first: a refusal names another mode before its options."""
    rank = {option: 1 if MODES[name].needs else 0 for option, name in CHOOSERS.items()}
    return sorted(given, key=lambda option: rank.get(option, 2))


def _asks_for_summaries(policies: str) -> bool:
    """Whether any of these policies shows model-written summaries (compact:T), which a replay writes with --model.
    A policy that cannot be read is said when the policies are read, after the options are checked."""
    try:
        return any(make_policy(spec).needs_summaries for spec in _listed(policies))
    except ValueError:
        return True


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
    mode = mode_of(args)
    try:  # the policies as given: one for a run, a chat, a recording or the prompt; a list to compare or replay
        policy = make_policy(args.policy or "full")
        listed = args.compare if mode == "compare" else args.policies or DEFAULT_POLICIES
        specs = _specs(listed) if mode in ("compare", "replay", "probe") else []
    except ValueError as problem:
        return fail(str(problem))
    return HANDLERS[mode](args, policy, specs)


def _show_prompt(args, policy: Policy, specs: list[str]) -> int:
    load_env_files()
    try:  # the prompt the model of this run would be given: a model may have its own (prompts.PROFILES)
        _, name = resolved_spec(args.model)
    except ModelConfigError as problem:
        return fail(str(problem))
    print(render_instructions(DEFAULT_TOOLS + policy.tools(Trace()), name))
    return EXIT_ANSWERED


def _models(args, policy: Policy, specs: list[str]) -> int:
    read = load_env_files()
    print(clean(describe_models(available_models(read))))
    return EXIT_ANSWERED


def available_models(env_files: list[str], probe_seconds: float = 1.0) -> list[dict]:
    """What can run here, for `--models`: the rows of every backend in models.BACKENDS (each module's
    `available`), so a new backend is listed with no change here; the first row's `note` says which model runs
    with no --model and which .env files were read, so the user knows where settings came from."""
    rows = []
    for backend, module in BACKENDS.items():
        rows += importlib.import_module(module).available(backend, probe_seconds)
    read = ", ".join(env_files) if env_files else "none"
    rows[0]["note"] = f"{_default_said()}; .env read: {read}"
    return rows


def _default_said() -> str:
    """Which model runs when --model names none, and what set it, as --models says it."""
    for variable in ("TINYREACT_MODEL", "GEMINI_MODEL"):
        if os.environ.get(variable, "").strip():
            return f"with no --model: {os.environ[variable].strip()} (set by {variable})"
    return f"with no --model: gemini:{DEFAULT_MODEL} with a key, else {OFFLINE_MODEL}"


def describe_models(rows: list[dict]) -> str:
    """The `--models` listing as text: one line per row, ready ones marked with ✓."""
    lines = []
    for row in rows:
        mark = "✓" if row["ready"] else "✗"
        where = f"  ({row['url']})" if row.get("url") else ""
        why = f" — {row['why']}" if row["why"] else ""
        lines.append(f"{mark} {row['spec']}{where}{why}")
    notes = [row["note"] for row in rows if row.get("note")]
    return "\n".join(lines + notes)


def _ask(args, policy: Policy, specs: list[str]) -> int:
    """A question, or a chat: the model loaded, the run shown as it happens, the trace and the page kept."""
    chat = args.chat or (args.question is None and sys.stdin.isatty())
    if not chat and not (args.question or "").strip():
        return fail("no question: run  python agent.py \"your question\"  (or --chat, or --help)")
    model = _model_for_a_run(args)
    agent, display = _agent_shown(args, model, policy)
    trace = agent.trace
    try:
        return _chat(agent, display, args) if chat else _answer(agent, display, args, args.question.strip())
    except KeyboardInterrupt:
        _interrupted(agent, display, args)
        if args.json:
            print_json({"answer": None, "stop_reason": "interrupted", "trace": list(trace.events)})
        return EXIT_INTERRUPTED
    finally:
        display.close()
        trace.close()
        if args.html:  # written whatever happened, Ctrl-C included: the page shows what there is
            _write_run_page(args.html, model, trace, agent.counter)


def _agent_shown(args, model: Model, policy: Policy) -> tuple[TinyReAct, object]:
    """The agent of a run or a chat, its trace written to --trace, and the terminal view that shows it as it goes."""
    from views.display import LiveDisplay  # rich takes longer to import than --help takes to run: only when showing a run

    quiet = args.json or args.quiet
    display = LiveDisplay(events=not quiet, context=_context_view(args), stderr=quiet)
    try:
        trace = Trace(args.trace, on_event=display.show, meta=_header(model),
                      on_error=lambda message: print(f"warning: {message}", file=sys.stderr))
    except OSError as problem:
        raise UsageError(f"cannot write the trace file: {problem.strerror}: {args.trace}") from None
    stream = not (args.no_stream or quiet) and sys.stdout.isatty()
    agent = TinyReAct(model, ttl=args.ttl or 8, policy=policy, trace=trace, counter=local_counter(),
                      on_text=display.stream if stream else None)
    display.counter = agent.counter
    display.render_context = lambda: agent.policy.render(agent.trace.events)
    return agent, display


def _header(model: Model) -> dict:
    """What a trace file's first line says of the model: its name, backend, and the temperature it is sent."""
    return {"model": model.name, "backend": model.backend, "temperature": model.temperature}


def _model_for_a_run(args) -> Model:
    """The model a question, a chat or a comparison runs, with .env read first; a UsageError when it cannot load,
    or when the price file TINYREACT_PRICES names cannot be read."""
    load_env_files()
    read_vocabulary_elsewhere()  # the first run's token counter is made ready while the model loads
    try:
        prices()  # a TINYREACT_PRICES file that cannot be read is one line before the run, not a missing cost after it
        return _load_model(args.model)
    except (ModelConfigError, ValueError) as problem:
        raise UsageError(str(problem)) from None


def _write_run_page(path: str, model: Model, trace: Trace, counter) -> None:
    from views.pages import run_page  # the modes' own modules load only in those modes (see _compare)

    write_output(path, lambda: run_page(_header(model), trace.events, counter))


def write_output(path: str, text: Callable[[], str]) -> bool:
    """Write a page, a chart or a table the run made; a failure is one warning line, never the loss of the run's own
    output. The text is made and encoded before the file is opened, so a failure there leaves an old file whole."""
    try:
        data = text().encode("utf-8")
        write_whole(path, data)
    except (OSError, UnicodeError) as problem:
        print(f"warning: cannot write {readable(path)}: {getattr(problem, 'strerror', None) or problem}", file=sys.stderr)
        return False
    print(f"wrote {readable(path)} ({len(data):,} bytes)", file=sys.stderr)  # stdout stays the run's, or its JSON
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


def _page_of_trace(args, policy: Policy, specs: list[str]) -> int:
    """`agent.py --html FILE --from TRACE.jsonl`: the page of a saved run, chat or comparison run."""
    from views.pages import run_page  # the modes' own modules load only in those modes (see _compare)

    recorded = _open_trace(args.source)
    named = recorded.header.get("title")  # the trace's own title, and the file it was read from
    title = f"{named} — {readable(args.source)}" if isinstance(named, str) and named else f"TinyReAct: {readable(args.source)}"
    page = lambda: run_page(recorded.header, recorded.events, local_counter(), title=title)  # noqa: E731
    return EXIT_ANSWERED if write_output(args.html, page) else EXIT_USAGE


def _verify_cache(args, policy: Policy, specs: list[str]) -> int:
    """`agent.py --verify-cache`: every model folder in the cache read back and checked; exit 1 if one is damaged."""
    from models.embedded.cache import cache_root, verify_caches  # numpy: only for this

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
        print_json({**result.to_dict(), "trace": list(agent.trace.events)})
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
        if line.startswith("/"):
            _chat_command(agent, display, line)
        else:
            try:
                code = _answer(agent, display, args, line)
            except KeyboardInterrupt:
                _interrupted(agent, display, args)
                display.note("the question was cancelled; ask another, or Ctrl-D to leave")
                continue
            if code == EXIT_USAGE:
                return code


def _chat_command(agent: TinyReAct, display, line: str) -> None:
    """/context, /policy NAME, /reset, or a command that is none of them."""
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
    else:
        display.note(f"unknown command {command}: {CHAT_HELP}")


def _compare(args, policy: Policy, specs: list[str]) -> int:
    """`agent.py QUESTION --compare LIST`: one table, or one JSON object with --json; --trace writes one file a run."""
    if args.html and os.path.realpath(args.html) in _comparison_traces(args, specs):
        return fail(f"--html names one of the trace files --compare writes: {args.html}")
    if not (args.question or "").strip():
        return fail("--compare needs a question: python agent.py \"your question\" --compare full,window:2")
    model = _model_for_a_run(args)
    counter, runs, traces = local_counter(), [], []
    interrupted = _run_comparison(args, specs, model, counter, runs, traces)
    _comparison_report(args, model, counter, runs, traces, interrupted)
    if interrupted:
        print(f"interrupted after {len(runs)} of {len(specs) * (args.repeat or 1)} runs", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_ANSWERED if all(run.answer is not None for run in runs) else EXIT_NO_ANSWER


def _comparison_report(args, model: Model, counter, runs: list, traces: list, interrupted: bool) -> None:
    """The comparison's table, or its JSON; and its page with --html."""
    # The experiments, report formats and pages load only in the modes that use them, so that --help and a
    # plain question do not pay the ~50 ms of importing them.
    from experiments.live import summarise_runs
    from views.display import LiveDisplay, live_table  # rich: only when showing a run (see main)
    from views.pages import compare_page

    rows = summarise_runs(runs)
    if args.json:
        print_json({"question": args.question.strip(), "model": model.name, "expect": args.expect,
                    "counter": counter.name, "interrupted": interrupted, "rows": rows, "runs": [asdict(run) for run in runs]})
    elif runs:
        live_table(LiveDisplay().console, rows, model.name, args.expect, counter.name)
    if args.html and traces:
        write_output(args.html, lambda: compare_page(traces, counter, expect=args.expect))


def _run_comparison(args, specs: list[str], model: Model, counter, runs: list, traces: list) -> bool:
    """Every run of a comparison, appended to `runs` as it ends; True when Ctrl-C stopped it (the runs that ended are
    still reported). A rejected key, or a trace file that cannot be written, is a UsageError."""
    from experiments.live import compare_live
    from views.display import spinner  # rich: only when showing a run (see main)

    repeat = args.repeat or 1
    try:
        with spinner("starting…") as update:
            for run in compare_live(args.question.strip(), specs, model, DEFAULT_TOOLS, ttl=args.ttl or 8,
                                    finish=args.finish, expect=args.expect, repeat=repeat, counter=counter,
                                    trace_path=lambda spec, attempt: compare_trace_path(args.trace, spec, attempt, repeat),
                                    progress=lambda text: update(f"running {text}"), traces=traces):
                runs.append(run)
    except ModelConfigError as problem:
        raise UsageError(str(problem)) from None
    except OSError as problem:
        raise UsageError(f"cannot write the trace file: {problem.strerror}: {problem.filename}") from None
    except KeyboardInterrupt:
        return True
    return False


def _comparison_traces(args, specs: list[str]) -> set[str]:
    """The trace files a comparison writes with --trace, one a run."""
    if not args.trace:
        return set()
    runs = [(make_policy(spec).name, attempt) for spec in specs for attempt in range(args.repeat or 1)]
    return {os.path.realpath(compare_trace_path(args.trace, name, attempt, args.repeat or 1)) for name, attempt in runs}


def compare_trace_path(path: str | None, spec: str, attempt: int, repeat: int) -> str | None:
    """`t.jsonl` becomes `t.window-2.jsonl` for the window:2 run (and `t.window-2.run2.jsonl` for its second)."""
    if not path:
        return None
    stem, suffix = (path[:-6], ".jsonl") if path.endswith(".jsonl") else (path, ".jsonl")
    slug = re.sub(r"[^A-Za-z0-9.+-]+", "-", spec).strip("-")
    return f"{stem}.{slug}{f'.run{attempt + 1}' if repeat > 1 else ''}{suffix}"


@dataclass
class Replaying:
    """What `--replay` has read and made so far, handed from one step to the next."""
    path: str
    header: dict
    events: list[dict]
    facts: list = field(default_factory=list)
    points: list = field(default_factory=list)
    model: Model | None = None
    summaries: object = None  # experiments.replay.Summaries: compact:T's summaries, cached beside the trace
    window: int | None = None  # the context window reports are checked against
    window_model: str = ""  # whose it is
    priced: tuple | None = None  # (a model's name, its list price) for the input cost with and without caching
    reports: list = field(default_factory=list)
    answers: list | None = None  # with --probe
    stopped: BaseException | None = None  # what ended probing early: Ctrl-C, or the model failing


def _replay(args, policy: Policy, specs: list[str]) -> int:
    """`agent.py --replay FILE [--policies LIST] [--facts FILE] [--probe]`: tables (and a plot), or JSON, CSV, SVG."""
    from experiments.replay import replay

    recorded = _open_trace(args.replay)
    run = Replaying(args.replay, recorded.header, recorded.events)
    run.facts, run.points = _facts_and_points(args, run)
    if args.probe and not any(event["type"] == "instructions" for event in run.events):
        return fail(f"{args.replay} has no instructions to probe with: it was cut short before its first model call")
    _replay_model(args, run)
    counter = local_counter()
    try:
        run.reports = replay(run.header, run.events, specs, counter, run.facts, run.points, run.summaries, run.window)
    except OSError as problem:
        return fail(f"cannot write the summaries: {problem.strerror or problem}: {run.summaries.path}")
    except ModelError as problem:  # writing a summary for compact:T
        print(f"error: {clean(problem)}", file=sys.stderr)
        return EXIT_USAGE if isinstance(problem, ModelConfigError) else EXIT_NO_ANSWER
    if args.probe:
        _probe(args, run, specs, counter)
    unwritten = _replay_outputs(args, run, counter)
    return _replay_exit(run, unwritten)


def _facts_and_points(args, run: Replaying) -> tuple[list, list]:
    """The planted facts and the probe points, from --facts or the trace's header, narrowed by --probe-facts and
    --probe-points; a point outside the session is one warning, a bad selection a UsageError."""
    from experiments.facts import load_facts, probe_points

    try:
        facts, declared = load_facts(run.header, args.facts)
        outside = []
        points = probe_points(declared, run.events, outside)
    except ValueError as problem:
        raise UsageError(str(problem)) from None
    except OSError as problem:
        raise UsageError(f"{problem.strerror}: {problem.filename}") from None
    for problem in outside:  # a trace cut short, or one whose run ended before the point: the rest still replays
        print(f"warning: {args.replay}: {problem}; that probe point is left out", file=sys.stderr)
    return _chosen_facts(args.probe_facts, facts), _chosen_points(args.probe_points, points, args.replay)


def _chosen_facts(listed: str | None, facts: list) -> list:
    """The facts --probe-facts names (all without it); a name that is no fact is a UsageError."""
    if not listed:
        return facts
    known = [fact.id for fact in facts]
    unknown = [name for name in _listed(listed) if name not in known]
    if unknown:
        raise UsageError(f"--probe-facts: no fact named {', '.join(unknown)}; the facts are {', '.join(known)}")
    return [fact for fact in facts if fact.id in _listed(listed)]


def _chosen_points(listed: str | None, points: list, path: str) -> list:
    """The probe points --probe-points numbers (all without it); none at all is a UsageError."""
    if not listed:
        return points
    try:
        wanted = set(map(int, _listed(listed)))
    except ValueError:
        raise UsageError(f"--probe-points takes numbers separated by commas, got {listed!r}") from None
    points = [point for point in points if point.number in wanted]
    if not points:
        raise UsageError(f"--probe-points: none of {listed} is a probe point of {path}")
    return points


def _replay_model(args, run: Replaying) -> None:
    """The model that probes or writes the summaries compact:T asks for (none when the replay needs none), the
    summaries' cache beside the trace, and the context window reports are checked against."""
    from experiments.replay import Summaries, context_window

    if args.model or args.probe:
        load_env_files()
        try:
            run.model = _load_model(args.model)
        except (ModelConfigError, ValueError) as problem:
            raise UsageError(str(problem)) from None
        if args.jobs and args.jobs > 1 and run.model.backend == "local":
            raise UsageError("--jobs runs calls at once against network models; an embedded model answers one at a time")
    stem = args.replay[:-6] if args.replay.endswith(".jsonl") else args.replay
    run.summaries = Summaries(run.model, stem + ".summaries.json")
    run.window_model = run.model.name if run.model else parse_spec(OFFLINE_MODEL)[1]
    run.window = context_window(run.window_model)
    run.priced = _replay_price(args.prices_of)


def _replay_price(asked: str | None) -> tuple | None:
    """(a model, its list price) for a replay's input cost with and without prompt caching: --prices-of's, which
    must be listed, or by default PRICED_REPLAY's (None if a price file replaced the table without it)."""
    name = asked or PRICED_REPLAY
    try:
        price = price_of(name)
    except ModelConfigError as problem:
        raise UsageError(str(problem)) from None
    if price is None and asked:
        raise UsageError(f"--prices-of: no listed price for {name} in models/prices.json (or TINYREACT_PRICES): "
                         f"listed are {', '.join(prices())}")
    return (name, price) if price else None


def _probe(args, run: Replaying, specs: list[str], counter) -> None:
    """Ask the probes; the answers so far are kept when Ctrl-C or a failing model stops it (run.stopped says which)."""
    from experiments.probe import probe
    from views.display import spinner  # rich: only when showing a run (see main)

    run.answers = []
    try:
        with spinner("probing…") as update:
            probe(run.events, specs, run.model, run.facts, run.points, phrasings=args.phrasings, repeat=args.repeat or 1,
                  jobs=args.jobs or 1, summaries=run.summaries, counter=counter, progress=update, answers=run.answers)
    except (KeyboardInterrupt, ModelError) as stopped:  # the tables say how far it got
        run.stopped = stopped


def _replay_outputs(args, run: Replaying, counter) -> list[str]:
    """The tables (or the JSON), and the files asked for; returns the files that could not be written."""
    from experiments.facts import cut_on_record
    from experiments.replay import probe_calls
    from views.display import LiveDisplay, replay_tables  # rich: only when showing a run (see main)
    from views.pages import replay_page
    from views.reports import answers_csv, replay_csv, replay_json, svg_plot

    title = readable(args.replay)
    outputs = [(args.plot, lambda: svg_plot(run.reports, f"Context size per call: {title}", counter.name, run.points,
                                            probe_calls(run.points, run.events), run.answers, run.priced)),
               (args.csv, lambda: replay_csv(run.reports)), (args.answers, lambda: answers_csv(run.answers or []))]
    unwritten = [path for path, text in outputs if path and not write_output(path, text)]  # the tables still follow
    model_name = run.model.name if run.model else None
    if args.json:
        print_json({**replay_json(run.reports, counter.name, run.facts, run.points, run.answers, model_name, run.window,
                                  run.priced), "interrupted": isinstance(run.stopped, KeyboardInterrupt)})
    else:
        replay_tables(LiveDisplay().console, run.reports, run.facts, run.points, run.answers, model_name, args.replay,
                      counter.name, (run.window, run.window_model) if run.window else None, cut_on_record(run.events),
                      run.priced)
    page = lambda: replay_page(run.header, run.events, run.reports, counter, run.facts, run.points,  # noqa: E731
                               run.answers, run.summaries, model_name, title=f"Replay of {title}", priced=run.priced)
    if args.html and not write_output(args.html, page):
        unwritten.append(args.html)
    return unwritten


def _replay_exit(run: Replaying, unwritten: list[str]) -> int:
    if isinstance(run.stopped, KeyboardInterrupt):
        print("interrupted: the probe tables hold the answers asked so far", file=sys.stderr)
        return EXIT_INTERRUPTED
    if run.stopped:
        print(f"error: probing stopped, the tables hold the answers asked before: {clean(run.stopped)}", file=sys.stderr)
        return EXIT_USAGE if isinstance(run.stopped, ModelConfigError) else EXIT_NO_ANSWER
    if unwritten:
        return EXIT_USAGE
    return EXIT_ANSWERED if all(report.violations == 0 for report in run.reports) else EXIT_NO_ANSWER


def _record(args, policy: Policy, specs: list[str]) -> int:
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


# One handler a mode, each given the arguments, the --policy and the list of policies (to compare or replay).
HANDLERS: dict[str, Callable[[argparse.Namespace, Policy, list[str]], int]] = {
    "run": _ask, "chat": _ask, "compare": _compare, "replay": _replay, "probe": _replay, "record": _record,
    "page": _page_of_trace, "models": _models, "verify_cache": _verify_cache, "show_prompt": _show_prompt,
}


def _load_model(name: str | None) -> Model:
    """load_model with its notice on stderr and a spinner there while a local model loads."""
    from views.display import spinner  # rich: only when showing a run (see main)

    with spinner("loading…", start=False) as update:
        return load_model(name, progress=lambda text: update(text + "…"), notice=lambda text: print(text, file=sys.stderr))


def _specs(text: str) -> list[str]:
    specs = _listed(text)
    if not specs:
        raise ValueError("no policies given: list them separated by commas, as in full,window:2,user-only:4")
    names = [make_policy(spec).name for spec in specs]  # raises a clear ValueError for a bad one
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"policy {', '.join(twice)} is listed twice: use --repeat to run a policy more than once")
    return specs


def _listed(text: str) -> list[str]:
    """The items of a comma-separated option, stripped, the empty ones left out."""
    return [item.strip() for item in text.split(",") if item.strip()]


def load_env_files() -> list[str]:
    """Read ./.env and the .env beside agent.py, never a folder above them; the real environment wins.
    Returns the files read."""
    from dotenv import load_dotenv  # only when a model is about to be loaded: --help stays fast

    read = []
    for path in dict.fromkeys([Path.cwd() / ".env", Path(__file__).resolve().parent.parent / ".env"]):
        if path.is_file():
            try:
                load_dotenv(path, override=False)
            except UnicodeDecodeError:
                raise UsageError(f"{path} is not UTF-8 text: save it as UTF-8 (KEY=value lines)") from None
            except ValueError as problem:  # a NUL byte, or a name with "=" in it: no environment variable holds one
                raise UsageError(f"{path} holds a line the environment cannot take ({problem}): each line is "
                                 "KEY=value, with no NUL byte, and no = in the KEY") from None
            except OSError as problem:
                raise UsageError(f"cannot read {path}: {problem.strerror or problem}") from None
            read.append(str(path))
    return read


def print_json(data: dict) -> None:
    """One line of JSON on stdout, with no secret in it (redaction.py)."""
    print(redacted(json.dumps(data, ensure_ascii=False)))


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
