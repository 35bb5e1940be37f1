"""A saved trace, with no model and no run: `--from TRACE` with `--html`, its page (one self-contained HTML page,
views/pages/), and with `--otel`, its spans, sent at the times it recorded (cli/otel.py)."""
from policies import Policy
from tokens import local_counter
from cli.loading import open_trace
from cli.otel import exporting
from cli.output import EXIT_ANSWERED, EXIT_USAGE, readable, write_output


def saved_trace(args, policy: Policy, specs: list[str]) -> int:
    """`agent.py --from TRACE.jsonl --html FILE` and/or `--otel`: a saved run, chat or comparison run, as a page and
    as spans."""
    with exporting(args, patient=True) as export:  # sending is all it does: it waits longer for the endpoint
        recorded = open_trace(args.source)
        written = _page(args, recorded) if args.html else True
        if export is not None:
            from views.telemetry import started  # a mode's own modules load only in that mode (see cli/__init__.py)

            export.trace(recorded.header, recorded.events, started(recorded.header), repeatable=True)
    return EXIT_ANSWERED if written else EXIT_USAGE


def _page(args, recorded) -> bool:
    from views.pages import run_page  # a mode's own modules load only in that mode (see cli/__init__.py)

    named = recorded.header.get("title")  # the trace's own title, and the file it was read from
    source = readable(args.source)
    title = f"{named} — {source}" if isinstance(named, str) and named else f"TinyReAct: {source}"
    page = lambda: run_page(recorded.header, recorded.events, local_counter(), title=title)  # noqa: E731
    return write_output(args.html, page)
