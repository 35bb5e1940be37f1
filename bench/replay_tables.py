"""The static replay tables of docs/experiments.md, made from the replay itself, so that the page cannot drift.

    python bench/replay_tables.py            # print the tables as Markdown
    python bench/replay_tables.py --check    # exit 1 if docs/experiments.md or policy-science-support.md holds others

Replays conversations/long.jsonl and conversations/support.jsonl with their facts files under every policy the
page shows (`python agent.py --replay FILE --facts FACTS --policies ... --json` gives the same numbers) and writes
two Markdown tables for each: input tokens over all calls, the share of full history's, the peak context, invariant
violations, and each planted fact's state at each probe point (✓ kept under every phrasing, ◐ under some, ✂ cut
by the observation cap, ✗ gone, – not stated yet; a policy that cannot be measured says so in its row); then the
input cost without and with prompt caching at gemini-3.8-flash's list price; then each policy's cost with caching
against full history's under five providers' caching rules (RULES), with the frontier of cost with caching against
facts kept under each; last, the two conversations side by side (docs/policy-science-support.md shows it, and
support.jsonl's table of facts again).
"""
import argparse
import os
import sys

from repository import ROOT  # importing it puts ROOT on the import path
POLICIES = ["full", "window:2", "user-only:4", "elide:2", "pinned", "compact:8000", "facts", "retrieve:3",
            "budget:3000", "budget:2000", "forget", "window:2+facts", "window:0+facts", "user-only:4+facts",
            "elide:2+pinned", "retrieve:3+facts"]
CONVERSATIONS = ["long", "support"]
MARKS = {"kept": "✓", "partly": "◐", "cut": "✂", "gone": "✗", "unstated": "–"}


PRICED = "gemini-3.8-flash"  # as `--replay` prices by default
# One model's rule from each provider, and the rules that differ most: Gemini's implicit cache (a 4,096-token minimum,
# no write billed), OpenAI's GPT-5.6 (1,024, writes at 1.25x), Anthropic's 5-minute and 1-hour caches (1,024, writes
# at 1.25x and 2x) and Haiku 4.5 (4,096, writes at 1.25x); models/prices.json gives each with its source.
RULES = ["gemini-3.8-flash", "gpt-5.6-sol", "claude-sonnet-5", "claude-sonnet-5-1h-cache", "claude-haiku-4-5"]


def caching(reports) -> str:
    """Each policy's input cost at PRICED's list price, without and with a prefix cache (as --replay prints it)."""
    from models.prices import price_of
    from views.reports import CACHING_COLUMNS, caching_cells

    price = price_of(PRICED)
    full = next(report for report in reports if report.policy == "full")
    lines = ["| " + " | ".join(CACHING_COLUMNS) + " | with the cache, vs full |",
             "| --- |" + " ---: |" * len(CACHING_COLUMNS)]
    for report in reports:
        if not report.measured:
            continue
        versus_full = report.input_cost(price, True) / full.input_cost(price, True)
        lines.append("| " + " | ".join([report.policy, *caching_cells(report, price), f"{versus_full:.0%}"]) + " |")
    return "\n".join(lines) + "\n"


def by_rule(reports) -> str:
    """Each policy's input cost with caching as a share of full history's with caching, under each of RULES; under the
    first row, full history's own cost without and with caching under each."""
    from models.prices import dollars, price_of

    prices = [price_of(name) for name in RULES]
    full = next(report for report in reports if report.policy == "full")
    lines = ["| policy | " + " | ".join(RULES) + " |", "| --- |" + " ---: |" * len(RULES),
             "| full, no cache → with it | " + " | ".join(f"{dollars(full.input_cost(price, False))} → "
                                                       f"{dollars(full.input_cost(price, True))}" for price in prices)
             + " |"]
    for report in reports:
        if report.measured and report.policy != "full":
            lines.append(f"| {report.policy} | " + " | ".join(
                f"{report.input_cost(price, True) / full.input_cost(price, True):.0%}" for price in prices) + " |")
    lines.append("| **frontier**: cost with caching against facts kept | " + " | ".join(
        frontier_of(reports, price, full) for price in prices) + " |")
    return "\n".join(lines) + "\n"


def frontier_of(reports, price, full) -> str:
    """The policies no other beats on both cost with caching (at `price`'s rule) and the share of facts kept, from the
    cheapest, each as policy (cost against full history's, share kept)."""
    from views.reports import frontier, kept_share

    points = [(r.policy, r.input_cost(price, True), share) for r in reports
              if r.measured and (share := kept_share(r)) is not None]
    return "; ".join(f"{policy} ({cost / full.input_cost(price, True):.0%}, {share:.0%})"
                     for policy, cost, share in frontier(points))


def cannot_show(report) -> str:
    """What a row of the replay does not measure of its policy: a pinned or forget the recorded model never used, and
    compact:T's summaries (a model writes them; none asked for means it equals full history)."""
    if report.caveat:
        return report.caveat.split(";")[0]
    if report.policy.startswith("compact:"):
        return (f"{report.summary_calls} summaries, {report.note.split(': ', 1)[-1]}" if report.summary_calls else
                "no summary asked for (the context never passed T): equal to full history; a summary needs a model")
    return ""


def replayed(name: str) -> tuple[list, list, list]:
    """conversations/NAME.jsonl replayed under POLICIES with its facts: (facts, probe points, reports)."""
    from experiments.facts import load_facts, probe_points
    from experiments.replay import Summaries, replay
    from traces import read_trace_file

    path = os.path.join(ROOT, "conversations", f"{name}.jsonl")
    header, events = read_trace_file(path)
    facts, declared = load_facts(header, os.path.join(ROOT, "conversations", f"{name}.facts.json"))
    points = probe_points(declared, events)
    summaries = Summaries(None, path[:-6] + ".summaries.json")
    return facts, points, replay(header, events, POLICIES, facts=facts, points=points, summaries=summaries)


def side_by_side(replays: dict) -> str:
    """Each policy's input tokens as a share of full history's, and whether it keeps every planted fact at every
    probe point after the fact is said, on each conversation (docs/policy-science-support.md)."""
    columns = ("share of full", "every fact kept")
    head = ["policy"] + [f"{name}.jsonl: {column}" for name in replays for column in columns]
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: | :---: |" * len(replays)]
    for index, policy in enumerate(POLICIES):
        cells = [policy]
        for _, _, reports in replays.values():
            report, full = reports[index], next(r.total for r in reports if r.policy == "full")
            every = all(state in ("kept", "unstated") for states in report.facts.values() for state in states.values())
            cells += ([f"{report.total / full:.0%}", "yes" if every else "no"] if report.measured
                      else ["not measured", ""])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def table(name: str, replayed: tuple) -> str:
    facts, points, reports = replayed
    full = next(report.total for report in reports if report.policy == "full")
    head = ["policy", "input tokens, all calls", "share of full", "peak", "violations"]
    head += [f"{fact.id} ({fact.text})" for fact in facts] + ["what this replay cannot show"]
    lines = ["| " + " | ".join(head) + " |",
             "| --- | ---: | ---: | ---: | ---: |" + " :---: |" * len(facts) + " --- |"]
    for report in reports:
        if not report.measured:
            lines.append(f"| {report.policy} | not measured (see below) |" + " |" * (len(head) - 2))
            continue
        marks = [" ".join(MARKS[report.facts[fact.id][point.label]] for point in points) for fact in facts]
        lines.append(f"| {report.policy} | {report.total:,} | {report.total / full:.0%} | {report.peak:,} | "
                     f"{report.violations} | " + " | ".join(marks) + f" | {cannot_show(report)} |")
    return "\n".join(lines) + "\n\n" + caching(reports) + "\n" + by_rule(reports)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with docs/experiments.md instead of printing")
    args = parser.parse_args()
    replays = {name: replayed(name) for name in CONVERSATIONS}
    tables = [table(name, replays[name]) for name in CONVERSATIONS]
    both = side_by_side(replays)
    if not args.check:
        print("\n".join(tables) + "\n" + both)
        return 0
    # Where each table is shown: every table on docs/experiments.md; the support conversation's table of facts and
    # the two side by side again on the page that discusses that conversation.
    pages = {"experiments.md": tables, "policy-science-support.md": [tables[1].split("\n\n")[0], both]}
    stale = []
    for page_name, texts in pages.items():
        with open(os.path.join(ROOT, "docs", page_name), encoding="utf-8") as file:
            page = file.read()
        stale += [f"docs/{page_name}" for text in texts
                  if not all(chunk.strip() + "\n" in page for chunk in text.split("\n\n"))]
    for name in dict.fromkeys(stale):
        print(f"{name} does not hold the replay tables as the replay gives them now (python bench/replay_tables.py)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
