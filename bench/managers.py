"""The context managers people run, replayed side by side on the shipped conversations: the nine vendors' policies
(Anthropic's tool-result clearing and compaction, OpenAI's compaction, Claude Code, Codex, LangChain, Google ADK,
Strands, OpenClaw) beside full, window, elide, stable and cold.

    python bench/managers.py                      # print both tables as Markdown (docs/experiments.md shows them)
    python bench/managers.py --check              # exit 1 if docs/experiments.md holds other numbers
    python bench/managers.py --summarizer SPEC    # write the summaries the cache lacks with SPEC (default: local 0.5B)
    python bench/managers.py --html FILE.html     # and one page of them all, each table with its chart

First at each vendor's documented defaults, then with its trigger scaled to long and support: a trigger
in tokens at half of full history's peak context, a window of messages at half of full history's last, OpenClaw's
window at the peak, Claude Code's idle time at five minutes. Each conversation is paced as a person asking a
question every ten minutes (`--pace 600,5`), so the time-based managers see the gaps they act on, and priced at
claude-sonnet-5's list price and caching rule, whose cache keeps a prefix five minutes after its last use. Per
policy: the calls at which it sends another context than full history's (by size), the share of planted facts kept
at the probe points, input tokens against full history's, and the input cost with caching. The summaries the
summarising managers ask for are written by --summarizer and cached in conversations/NAME.summaries.json, so a
second run calls no model.
"""
import argparse
import os
import sys

from repository import ROOT  # importing it puts ROOT on the import path

CONVERSATIONS = ["short", "renovation", "long", "support"]
# short's peak, 1,386 tokens, would have a summary every call or two
SCALED = ["renovation", "long", "support"]
OURS = ["full", "window:4", "elide:2", "stable", "cold"]
VENDORS = ["anthropic-clear", "anthropic-compact", "openai-compact", "claude-code", "codex", "langchain-summary",
           "adk-compact", "strands-window", "openclaw-ttl"]
PRICED = "claude-sonnet-5"  # Anthropic's 5-minute cache: most of these managers are Anthropic's or run on Claude
PACE = "600,5"
OFFLINE_MODEL = "local:qwen2.5-coder-0.5b"  # a question every ten minutes, a call every five seconds within one


def scaled(peak: int, messages: int) -> list[str]:
    """The vendors' policies with their triggers scaled to a conversation whose full history peaks at `peak` tokens
    and ends with `messages` messages (ADK's trigger counts questions and is left at its default)."""
    from policies.claude_code import BUFFER, SUMMARY_ROOM
    from policies.openai_compact import ITEM_TOKENS

    half = peak // 2
    return [f"anthropic-clear:trigger={half}", f"anthropic-compact:trigger={half}",
            f"openai-compact:compact_threshold={half}/item_tokens={min(ITEM_TOKENS, half // 2)}",
            f"claude-code:window={half + SUMMARY_ROOM + BUFFER}/idle_minutes=5",
            f"codex:model_auto_compact_token_limit={half}", f"langchain-summary:trigger_tokens={half}",
            "adk-compact", f"strands-window:window_size={max(messages // 2, 1)}",
            f"openclaw-ttl:context_window={peak}/min_prunable_tool_chars=0"]


def replayed(name: str, specs, summaries_model=None) -> list:
    """conversations/NAME.jsonl replayed under `specs` (a list, or a function of full history's peak and its last
    context's messages) with its facts, paced and with summaries from the cache or `summaries_model`."""
    from experiments.facts import load_facts, probe_points
    from experiments.replay import Summaries, parse_pace, replay
    from policies import make_policy
    from traces import read_trace_file

    path = os.path.join(ROOT, "conversations", f"{name}.jsonl")
    header, events = read_trace_file(path)
    facts, declared = load_facts(header, os.path.join(ROOT, "conversations", f"{name}.facts.json"))
    points, pace = probe_points(declared, events), parse_pace(PACE)
    if callable(specs):
        full = replay(header, events, ["full"], facts=[], points=[], pace=pace)[0]
        specs = specs(full.peak, len(make_policy("full").render(events)))
    summaries = Summaries(summaries_model, path[:-6] + ".summaries.json")
    return replay(header, events, ["full", *specs], facts=facts, points=points, summaries=summaries, pace=pace)


COLUMNS = ["policy", "acts at", "facts kept", "input tokens, vs full", "cost with caching", "vs full"]


def heading(name: str, reports: list, scaled: bool = False) -> tuple[str, str]:
    """The conversation's file, and what its table measures."""
    full = reports[0]
    triggers = ", the vendors' triggers scaled to it" if scaled else ""
    return f"{name}.jsonl", f"({len(full.sizes)} calls, full history's peak {full.peak:,} tokens{triggers})"


def rows(reports: list) -> list[list[str]]:
    """A row of COLUMNS for each policy after full history (the first report), which it is measured against."""
    from models.prices import dollars, price_of
    from views.reports import kept_share

    price = price_of(PRICED)
    full = reports[0]
    full_cost = full.input_cost(price, True)
    made = []
    for report in reports[1:]:
        if not report.measured:
            note = report.note if report.note.startswith("not measured") else f"not measured: {report.note}"
            made.append([report.policy, note, "", "", "", ""])
            continue
        acted = [number for number, (size, whole) in enumerate(zip(report.sizes, full.sizes), 1) if size != whole]
        share = kept_share(report)
        cost = report.input_cost(price, True)
        made.append([report.policy, _calls(acted, len(full.sizes)), "–" if share is None else f"{share:.0%}",
                     f"{report.total / full.total:.0%}", dollars(cost), f"{cost / full_cost:.0%}"])
    return made


def table(name: str, reports: list, scaled: bool = False) -> str:
    file, measures = heading(name, reports, scaled)
    lines = [f"**{file}** {measures}", "", "| " + " | ".join(COLUMNS) + " |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows(reports)]
    return "\n".join(lines) + "\n"


def _calls(acted: list[int], calls: int) -> str:
    """The calls at which a policy sent another context than full history's: never, or how many and from which."""
    if not acted:
        return "never"
    return f"{len(acted)} of {calls} calls, from call {acted[0]}"


def measured(summaries_model=None) -> list[tuple[str, list, bool]]:
    """Each conversation's replays at the vendors' defaults, then each with their triggers scaled to it: (name, the
    reports, full history's first, scaled or not)."""
    defaults = [(name, replayed(name, OURS + VENDORS, summaries_model), False) for name in CONVERSATIONS]
    return defaults + [(name, replayed(name, scaled, summaries_model), True) for name in SCALED]


def tables(replays: list[tuple[str, list, bool]]) -> list[str]:
    """The two tables: at the vendors' defaults, then with their triggers scaled to each conversation."""
    return ["\n".join(table(name, reports, fitted) for name, reports, fitted in replays if fitted == scaled)
            for scaled in (False, True)]


def html_page(replays: list[tuple[str, list, bool]]) -> str:
    """One page for all of them: for each conversation and trigger setting, input tokens and the cost with caching
    against the facts kept, one point a policy, with the frontier, then the table."""
    from models.prices import price_of
    from tokens import local_counter
    from views.pages.parts import Store, esc, page, table as html_table
    from views.reports import tradeoff_chart, tradeoff_panels

    body = ["<h1>The context managers people run, side by side</h1>",
            f'<p class="meta">each conversation paced a question every ten minutes (--pace {PACE}), priced at '
            f"{PRICED}'s list price and caching rule; summaries from conversations/NAME.summaries.json; made by "
            "python bench/managers.py --html FILE</p>"]
    for name, reports, scaled in replays:
        charted = [reports[0], *(report for report in reports[1:] if report.policy != reports[0].policy)]
        panels = tradeoff_panels(charted, priced=[(PRICED, price_of(PRICED))])
        body += [f"<h2>{esc(' '.join(heading(name, reports, scaled)))}</h2>", tradeoff_chart(panels) if panels else "",
                 html_table(COLUMNS, [[esc(cell) for cell in row] for row in rows(reports)], text_columns=2)]
    return page("The context managers people run", body, Store(local_counter()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with docs/experiments.md instead of printing")
    parser.add_argument("--html", metavar="FILE.html", help="also write one page of them all: each table with its "
                        "charts of input tokens and of cost with caching against facts kept")
    parser.add_argument("--summarizer", metavar="SPEC",
                        help="the model that writes the summaries the cache lacks (default: local:qwen2.5-coder-0.5b; "
                             "with --check, none: the cache alone)")
    args = parser.parse_args()
    model = None
    if not args.check:
        from cli.loading import ModelWhenAsked
        from cli.output import UsageError
        try:
            model = ModelWhenAsked(args.summarizer or OFFLINE_MODEL)  # loaded only if a summary is missing
        except UsageError as problem:  # a spec that names no model
            print(f"error: {problem}", file=sys.stderr)
            return 2
    replays = measured(model)
    made = tables(replays)
    if args.html:
        from files import write_whole

        try:
            write_whole(args.html, html_page(replays).encode("utf-8"))
        except OSError as problem:
            print(f"error: cannot write --html {args.html}: {problem.strerror or problem}", file=sys.stderr)
            return 1
    if not args.check:
        print("\n".join(made))
        return 0
    with open(os.path.join(ROOT, "docs", "experiments.md"), encoding="utf-8") as file:
        page = file.read()
    if all(chunk.strip() + "\n" in page for text in made for chunk in text.split("\n\n")):
        return 0
    print("docs/experiments.md does not hold the managers' tables as the replay gives them now "
          "(python bench/managers.py)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
