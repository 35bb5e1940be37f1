"""The page of a saved trace: `--html` with `--from`, one self-contained HTML page (views/pages/) made from a
trace file, with no model and no run."""
from policies import Policy
from tokens import local_counter
from cli.loading import open_trace
from cli.output import EXIT_ANSWERED, EXIT_USAGE, readable, write_output


def page_of_trace(args, policy: Policy, specs: list[str]) -> int:
    """`agent.py --html FILE --from TRACE.jsonl`: the page of a saved run, chat or comparison run."""
    from views.pages import run_page  # a mode's own modules load only in that mode (see cli/__init__.py)

    recorded = open_trace(args.source)
    named = recorded.header.get("title")  # the trace's own title, and the file it was read from
    source = readable(args.source)
    title = f"{named} — {source}" if isinstance(named, str) and named else f"TinyReAct: {source}"
    page = lambda: run_page(recorded.header, recorded.events, local_counter(), title=title)  # noqa: E731
    return EXIT_ANSWERED if write_output(args.html, page) else EXIT_USAGE
