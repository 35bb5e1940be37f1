"""`agent.py --record SCRIPT.json`: a scripted conversation played through the real loop into a trace, for
--replay to measure; with --otel, its spans sent as it is recorded."""
from policies import Policy
from cli.otel import exporting
from cli.output import EXIT_ANSWERED, fail


def record(args, policy: Policy, specs: list[str]) -> int:
    """`agent.py --record SCRIPT.json [--trace FILE] [--policy NAME] [--otel]`: a scripted conversation through the
    loop."""
    from experiments.recording import record_script  # see cli/__init__.py

    path = args.trace or (args.record[:-5] if args.record.endswith(".json") else args.record) + ".jsonl"
    with exporting(args) as export:
        # each question's spans sent as it is recorded; the script's replies are the scripted model's
        follow = export.follow({"model": "scripted", "backend": "scripted"}) if export is not None else None
        try:
            calls = record_script(args.record, path, policy, on_event=follow)
        except ValueError as problem:
            return fail(str(problem))
        except OSError as problem:
            return fail(f"{problem.strerror}: {problem.filename}" if problem.filename else str(problem))
    print(f"{path}: {calls} model calls, recorded under {policy.name}")
    return EXIT_ANSWERED
