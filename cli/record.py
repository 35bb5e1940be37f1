"""`agent.py --record SCRIPT.json`: a scripted conversation played through the real loop into a trace, for
--replay to measure; with --otel, its spans sent once it is recorded."""
from policies import Policy
from cli.loading import open_trace
from cli.otel import exporting
from cli.output import EXIT_ANSWERED, fail


def record(args, policy: Policy, specs: list[str]) -> int:
    """`agent.py --record SCRIPT.json [--trace FILE] [--policy NAME] [--otel]`: a scripted conversation through the
    loop."""
    from experiments.recording import record_script  # see cli/__init__.py

    path = args.trace or (args.record[:-5] if args.record.endswith(".json") else args.record) + ".jsonl"
    with exporting(args) as export:
        try:
            calls = record_script(args.record, path, policy)
        except ValueError as problem:
            return fail(str(problem))
        except OSError as problem:
            return fail(f"{problem.strerror}: {problem.filename}" if problem.filename else str(problem))
        if export is not None:
            recorded = open_trace(path)  # its header names no model: the script's replies were the scripted model's
            export.trace({"model": "scripted", "backend": "scripted", **recorded.header}, recorded.events)
    print(f"{path}: {calls} model calls, recorded under {policy.name}")
    return EXIT_ANSWERED
