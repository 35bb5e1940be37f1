"""The table of modes: which option chooses each mode, which options each one takes, and every refusal read from
it, in one line. docs/command-line.md shows the table; tests/test_cli_table.py checks that it is this one."""
import argparse
import os
from dataclasses import dataclass

from models import ModelConfigError, parse_spec
from policies import make_policy
from cli.arguments import DEFAULT_POLICIES, comma_separated


# The command line as one table: the modes, each chosen by its own option, and the options each one takes. Every
# refusal is read from it: an option given without a mode that takes it, a mode given an option it does not take,
# and a mode that does one thing and exits given anything else.
@dataclass(frozen=True)
class Mode:
    option: str | None  # the option that chooses it; None for a question, the default
    takes: str  # the options it works with, by their argparse names
    needs: str | None = None  # the option it only works with, or those it works with one of: --from needs --html or
    # --otel; --probe, a part of --replay, needs --replay and takes what --replay takes too
    exits: str = ""  # what a mode that does one thing and exits does, as its refusal says


# When several modes are given, the first of them here speaks.
MODES = {
    "saved": Mode("source", "html otel no_stream", needs="html otel fork"),
    "record": Mode("record", "trace policy no_stream otel"),
    "compare": Mode("compare", "question model ttl trace json finish html no_stream expect repeat protocol otel"),
    "replay": Mode("replay", "model json html no_stream policies probe plot csv facts probe_facts probe_points "
                             "prices_of cache_ttl pace observation_cut summarizer"),
    "probe": Mode("probe", "repeat phrasings jobs answers reader via ledger max_cost yes", needs="replay"),
    "fork": Mode("fork", "model policy policies ttl trace json quiet html no_stream protocol set_observation "
                         "set_reply instructions", needs="source"),
    "chat": Mode("chat", "model policy ttl trace quiet finish show_context html no_stream protocol mcp confirm yes "
                         "otel resume"),
    "run": Mode(None, "question model policy ttl trace json quiet finish show_context html no_stream protocol mcp "
                      "confirm yes otel resume"),
    "models": Mode("models", "", exits="lists the models and exits"),
    "verify_cache": Mode("verify_cache", "", exits="checks the model cache and exits"),
    "show_prompt": Mode("show_prompt", "policy model protocol mcp", exits="prints the prompt and exits"),
    "tools": Mode("tools", "policy mcp confirm yes", exits="lists the tools and exits"),
}
# Options that a mode takes, but not together.
EXCLUSIVE = [("json", "quiet"), ("confirm", "yes")]
# Every option, in the order refusals name them (an option without its mode is said before a mode's other options).
OPTIONS = ["expect", "repeat", "policies", "probe", "plot", "csv", "facts", "probe_facts", "probe_points",
           "prices_of", "cache_ttl", "pace", "observation_cut", "summarizer", "reader", "phrasings", "jobs", "answers",
           "via", "ledger", "max_cost", "source", "fork", "set_observation", "set_reply", "instructions", "resume",
           "question", "chat", "compare", "replay", "record", "html", "otel", "model", "policy", "ttl", "trace", "json",
           "quiet", "finish", "show_context", "no_stream", "models", "verify_cache", "show_prompt", "protocol", "mcp",
           "confirm", "yes", "tools"]
# The options that name a file: the ones read, then the ones written.
FILES = ["replay", "record", "source", "resume", "instructions", "facts", "trace", "html", "plot", "csv", "answers",
         "ledger"]
WRITTEN = {"trace", "html", "plot", "csv", "answers", "ledger"}


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
BESIDE |= {mode.option: mode.needs.split() for mode in MODES.values() if mode.needs}


def _takes(mode: Mode) -> set[str]:
    """The options a mode works with: its own, the one it needs, and all a mode it is a part of takes."""
    whole = _takes(MODES[CHOOSERS[mode.needs]]) if mode.needs in CHOOSERS else set()
    return set(mode.takes.split()) | {mode.option} - {None} | set((mode.needs or "").split()) | whole


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
    return (_model_unused(args) or _summarizer_unused(args) or _model_given_twice(args) or _jobs_for_one(args)
            or _trace_folder(args) or _named_twice(args) or _via(args))


def as_comparison(args) -> str | None:
    """`--protocol text,native` on a question is a comparison of its runs, as --compare's: said so in args (the
    --policy becomes the one policy compared). A refusal in one line where several protocols cannot go: a chat,
    the prompt, or a single run's view."""
    if len(args.protocol or []) < 2:
        return None
    if mode_of(args) == "run" and not (args.show_context or args.quiet):
        args.compare, args.policy = args.policy or "full", None
        return None
    for option in ("chat", "show_prompt", "show_context", "quiet"):
        if getattr(args, option):
            return (f"--protocol {','.join(args.protocol)} compares runs of a question: it does not go with "
                    f"{_flag(option)}")
    return None


def _model_unused(args) -> str | None:
    """--model with --replay, where no probe and no summary asks for one."""
    if args.replay and args.model and not args.probe and not _asks_for_summaries(args.policies or DEFAULT_POLICIES):
        return "--model with --replay is for --probe, or for writing the summaries compact:T asks for"
    return None


def _summarizer_unused(args) -> str | None:
    """--summarizer with --replay, where no policy asks for a summary."""
    if args.replay and args.summarizer and not _asks_for_summaries(args.policies or DEFAULT_POLICIES):
        return "--summarizer writes the summaries a summarising policy asks for, and none of these policies asks"
    return None


def _model_given_twice(args) -> str | None:
    """--model beside the model main() was given (cli/__init__.py): one of the two would go unused."""
    if args.model and args.given_model is not None:
        return "--model does not go with the model main() was given"
    return None


def _jobs_for_one(args) -> str | None:
    if args.jobs and args.jobs > 1 and args.model and _is_local(args.model):
        return "--jobs runs calls at once against network models; an embedded model answers one at a time"
    return None


def _is_local(spec: str) -> bool:
    try:
        return parse_spec(spec)[0] == "local"
    except ModelConfigError:
        return False  # a bad spec is said when the model is loaded


def _via(args) -> str | None:
    """What goes with --via: --ledger and --max-cost only with --via, no --jobs beside a batch (the
    service runs its calls), and the answer reader only."""
    if args.ledger and not args.via:
        return "--ledger only works with --via"
    if args.max_cost is not None and not args.via:
        return "--max-cost only works with --via"
    if args.via == "batch" and args.jobs:
        return "--via batch does not go with --jobs: the service runs the batch's calls"
    if args.via and args.reader == "likelihood":
        return "--via does not go with --reader likelihood: the likelihood reader runs on an embedded model"
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
    """Whether any of these policies shows model-written summaries (compact:T, the vendors' compaction), which a
    replay writes with --summarizer.
    A policy that cannot be read is said when the policies are read, after the options are checked."""
    try:
        return any(make_policy(spec).needs_summaries for spec in comma_separated(policies))
    except ValueError:
        return True
