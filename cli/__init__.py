"""The command line: `python agent.py "question"`, a chat, a comparison of policies, or a replay.

This is the top layer. It reads the arguments and the `.env` files, loads the model, wires the loop
(agent.py) to the terminal view (views/display.py), and turns every outcome into output and an exit code:
0 answered, 1 no answer, 2 usage or configuration error, 74 stdout not writable, 130 interrupted.

Its modules, each importing only from those after it here:
- this one: `main`, and the table of handlers, one a mode;
- modes.py, the table of modes: which option chooses each mode, and which options go together;
- the modes, each a handler `(args, policy, specs) -> int`: ask.py (a question, a chat), compare.py, replay.py
  (with --probe), record.py, page.py (a saved trace: its page, its spans), models.py (--models, --verify-cache,
  --show-prompt);
- otel.py: the exporter --otel sends a run's spans through, made once for the run;
- arguments.py reads the options; loading.py reads what a mode needs: the .env files, the model, a saved trace;
- output.py: the exit codes, and what every mode prints or writes.
A mode's own modules (experiments/, the pages, rich for the terminal view) are imported inside its handler, so that
--help and a plain question do not pay for them.

A program that embeds the command line may bring its own model: `main(argv, model=m)` runs `m` wherever the command
line would load the model --model names (a question, a chat, a comparison, a replay's probes; --show-prompt shows
its prompt), and refuses --model beside it. Everything else (.env, the options, the output) is as from the shell.
The tests give it a ScriptedModel (models/scripted.py) this way.
"""
import argparse
import os
import sys
from typing import Callable

from models import Model
from policies import Policy, make_policy
from cli.arguments import DEFAULT_POLICIES, parse_args, policy_specs
from cli.ask import ask
from cli.compare import compare
from cli.fork import fork
from cli.models import list_tools, show_models, show_prompt, verify_cache
from cli.modes import as_comparison, conflict, mode_of
from cli.output import EXIT_INTERRUPTED, EXIT_OUTPUT, OutputFailed, PipeGuard, UsageError, fail, readable
from cli.page import saved_trace
from cli.record import record
from cli.replay import replay_trace

# One handler a mode, each given the arguments, the --policy and the list of policies (to compare or replay).
HANDLERS: dict[str, Callable[[argparse.Namespace, Policy, list[str]], int]] = {
    "run": ask, "chat": ask, "compare": compare, "replay": replay_trace, "probe": replay_trace, "record": record,
    "saved": saved_trace, "models": show_models, "verify_cache": verify_cache, "show_prompt": show_prompt,
    "tools": list_tools, "fork": fork,
}


def script() -> None:
    """`python agent.py ...`: the command line, then the process ends with its exit code. A model call abandoned at
    TINYREACT_CALL_DEADLINE may still be running in its thread, and Python's shutdown would race it for stdout and
    stderr, which can abort the process (SIGABRT, no message): then it ends at once, its output flushed."""
    from models.services import retry

    code = main()
    if retry.abandoned_running():
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):  # closed, or None when the shell closed it
                pass
        os._exit(code)
    sys.exit(code)


def main(argv: list[str] | None = None, model: Model | None = None) -> int:
    """Run the command line (with `model`, that model in place of the one --model names: see above); Ctrl-C anywhere
    is one line and exit 130, and a closed stdout stops output, not the run."""
    sys.stdout = PipeGuard(sys.stdout)
    try:
        return _main(argv, model)
    except UsageError as problem:
        return fail(str(problem))
    except KeyboardInterrupt:  # before a run began, or between runs: nothing to keep
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OutputFailed as problem:  # the trace file, written event by event, is kept as far as the run went
        print(f"error: {problem}; the run stopped there (a --trace file keeps what it did)", file=sys.stderr)
        return EXIT_OUTPUT
    finally:
        sys.stdout = sys.stdout.stream if isinstance(sys.stdout, PipeGuard) else sys.stdout


def _main(argv: list[str] | None, model: Model | None) -> int:
    args = parse_args(argv)
    args.given_model = model  # read where a model is loaded: cli/loading.py's chosen_model
    if args.question is not None:
        args.question = readable(args.question)
    if args.expect is not None:
        args.expect = readable(args.expect)
    problem = as_comparison(args) or conflict(args)  # --protocol text,native: a comparison of a question's runs
    if problem:
        return fail(problem)
    mode = mode_of(args)
    try:  # the policies as given: one for a run, a chat, a recording or the prompt; a list to compare or replay
        policy = make_policy(args.policy or "full")
        listed = args.compare if mode == "compare" else args.policies or DEFAULT_POLICIES
        specs = policy_specs(listed) if mode in ("compare", "replay", "probe", "fork") else []
    except ValueError as problem:
        return fail(str(problem))
    return HANDLERS[mode](args, policy, specs)
