"""`agent.py QUESTION --compare LIST`: the question run once per policy (or --repeat times), one table or one JSON
object, a trace file a run and one page."""
import os
import re
import sys
from dataclasses import asdict

from agent import DEFAULT_TTL
from models import Model, ModelConfigError
from policies import Policy, make_policy
from tokens import local_counter
from tools import DEFAULT_TOOLS
from cli.loading import model_for_a_run
from cli.otel import exporting
from cli.output import EXIT_ANSWERED, EXIT_INTERRUPTED, EXIT_NO_ANSWER, UsageError, fail, print_json, write_output


def compare(args, policy: Policy, specs: list[str]) -> int:
    """`agent.py QUESTION --compare LIST`: one table, or one JSON object with --json; --trace writes one file a run."""
    refused = _refused(args, specs)
    if refused:
        return fail(refused)
    with exporting(args) as export:  # --otel: each run's spans, sent as it ends
        model = model_for_a_run(args)
        counter, runs, traces, sent = local_counter(), [], [], {}  # sent: what every run's calls sent, by digest
        interrupted = _run_comparison(args, specs, model, counter, runs, traces, export, sent)
        _comparison_report(args, model, counter, runs, traces, interrupted, sent)
    if interrupted:
        planned = len(specs) * len(args.protocol or ["text"]) * (args.repeat or 1)
        print(f"interrupted after {len(runs)} of {planned} runs", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_ANSWERED if all(run.answer is not None for run in runs) else EXIT_NO_ANSWER


def _refused(args, specs: list[str]) -> str | None:
    """What stops a comparison before any call is paid for, in one line; None when nothing does."""
    if args.html and os.path.realpath(args.html) in _comparison_traces(args, specs):
        return f"--html names one of the trace files --compare writes: {args.html}"
    if not (args.question or "").strip():
        return "--compare needs a question: python agent.py \"your question\" --compare full,window:2"
    folder = os.path.dirname(os.path.abspath(args.trace)) if args.trace else None
    if folder and not os.path.isdir(folder):  # as a single run refuses it: its calls would be paid, none recorded
        return f"cannot write the trace files: no folder {folder} (--trace {args.trace})"
    return None


def _comparison_report(args, model: Model, counter, runs: list, traces: list, interrupted: bool,
                       sent: dict | None = None) -> None:
    """The comparison's table, or its JSON; and its page with --html."""
    # The experiments, report formats and pages load only in the modes that use them, so that --help and a
    # plain question do not pay the ~50 ms of importing them.
    from experiments.live import summarise_runs
    from views.display import LiveDisplay, live_table  # rich: only when showing a run (see cli/__init__.py)
    from views.pages import compare_page

    rows = summarise_runs(runs)
    if args.json:
        print_json({"question": args.question.strip(), "model": model.name, "expect": args.expect,
                    "counter": counter.name, "interrupted": interrupted, "rows": rows,
                    "runs": [asdict(run) for run in runs]})
    elif runs:
        live_table(LiveDisplay().console, rows, model.name, args.expect, counter.name)
    if args.html and traces:
        write_output(args.html, lambda: compare_page(traces, counter, expect=args.expect, sent=sent))


def _run_comparison(args, specs: list[str], model: Model, counter, runs: list, traces: list, export=None,
                    sent: dict | None = None) -> bool:
    """Every run of a comparison, appended to `runs` as it ends (and its spans sent through `export`, --otel); True
    when Ctrl-C stopped it (the runs that ended are still reported, the one cut short sent too). A rejected key, or a
    trace file that cannot be written, is a UsageError."""
    from experiments.live import compare_live
    from views.display import spinner  # rich: only when showing a run (see cli/__init__.py)

    repeat = args.repeat or 1
    trace_path = lambda spec, attempt: compare_trace_path(args.trace, spec, attempt, repeat)  # noqa: E731
    spanned = 0  # of the runs' traces, sent as spans
    try:
        with spinner("starting…") as update:
            for run in compare_live(args.question.strip(), specs, model, DEFAULT_TOOLS, ttl=args.ttl or DEFAULT_TTL,
                                    finish=args.finish, expect=args.expect, repeat=repeat, counter=counter,
                                    trace_path=trace_path, progress=lambda text: update(f"running {text}"),
                                    traces=traces, protocols=args.protocol or ["text"], sent=sent):
                runs.append(run)
                spanned = _send(export, traces, spanned, sent)
    except ModelConfigError as problem:
        raise UsageError(str(problem)) from None
    except OSError as problem:
        raise UsageError(f"cannot write the trace file: {problem.strerror}: {problem.filename}") from None
    except KeyboardInterrupt:
        return True
    finally:
        _send(export, traces, spanned, sent)
    return False


def _send(export, traces: list, spanned: int, sent: dict | None = None) -> int:
    """The spans of the runs' traces not sent yet (past the first `spanned`), through `export` (--otel, or None),
    with what their calls sent; returns how many are sent."""
    if export is not None:
        for header, events in traces[spanned:]:
            export.trace(header, events, sent=sent)
    return len(traces)


def _comparison_traces(args, specs: list[str]) -> set[str]:
    """The trace files a comparison writes with --trace, one a run."""
    if not args.trace:
        return set()
    from experiments.live import arm_name

    protocols = args.protocol or ["text"]
    runs = [(arm_name(make_policy(spec).name, protocol, protocols), attempt) for spec in specs
            for protocol in protocols for attempt in range(args.repeat or 1)]
    return {os.path.realpath(compare_trace_path(args.trace, name, attempt, args.repeat or 1)) for name, attempt in runs}


def compare_trace_path(path: str | None, spec: str, attempt: int, repeat: int) -> str | None:
    """`t.jsonl` becomes `t.window-2.jsonl` for the window:2 run (and `t.window-2.run2.jsonl` for its second)."""
    if not path:
        return None
    stem, suffix = (path[:-6], ".jsonl") if path.endswith(".jsonl") else (path, ".jsonl")
    slug = re.sub(r"[^A-Za-z0-9.+-]+", "-", spec).strip("-")
    return f"{stem}.{slug}{f'.run{attempt + 1}' if repeat > 1 else ''}{suffix}"
