"""How cold:T's threshold was chosen: the tuning conversations replayed under cold:T for several T, with two-hour
pauses before each question, each T's input cost with prompt caching against full history's under Anthropic's
5-minute cache, and the planted facts it loses; then the chosen T reported once on the conversations it was not
chosen on, under no pause, a person's pause (5 minutes and one second: every question's cache cold) and two hours.

    python bench/cold_sweep.py                 # the tables, as Markdown
    python bench/cold_sweep.py --tuning        # the tuning table alone (what the choice was made on)
    python bench/cold_sweep.py --check         # exit 1 if docs/experiments.md holds other tables

The rule: claude-sonnet-5's (a 1,024-token minimum, writes at 1.25x input, the cache kept 5 minutes after its last
use: models/prices.json). The choice: the T of least cost with caching that loses no fact full history keeps on
either tuning conversation.
"""
import argparse
import os
import sys

from repository import ROOT  # importing it puts ROOT on the import path
THRESHOLDS = [2000, 3000, 4000, 6000, 8000, 10000, 12000, 16000, 20000]
TUNING = ["renovation", "short"]  # T was chosen on these
HELD_OUT = ["long", "support"]  # reported once, after the choice
PRICED = "claude-sonnet-5"
TWO_HOURS = 7200
PACES = [("no pause", 0), ("5 minutes and 1 second", 301), ("two hours", TWO_HOURS)]  # before each question
COMPARED = ["full", "stable", "window:2+facts", "elide:2"]


def replayed(name: str, specs: list[str], pause: float):
    from experiments.facts import load_facts, probe_points
    from experiments.replay import Pace, replay
    from traces import read_trace_file

    header, events = read_trace_file(os.path.join(ROOT, "conversations", f"{name}.jsonl"))
    facts, declared = load_facts(header, os.path.join(ROOT, "conversations", f"{name}.facts.json"))
    return replay(header, events, specs, facts=facts, points=probe_points(declared, events), pace=Pace(pause))


def lost(report, full) -> int:
    """Fact × probe point cells kept by full history and not (wholly) by this policy."""
    return sum(state != "kept" and full.facts[fact][point] == "kept"
               for fact, states in report.facts.items() for point, state in states.items())


def row(label: str, report, full, price) -> str:
    return (f"| {label} | {report.total / full.total:.0%} | {lost(report, full)} | "
            f"{report.input_cost(price, True) / full.input_cost(price, True):.0%} | {report.expired(price)} |")


HEADER = ["| policy | input tokens, vs full | facts full keeps, lost (fact × probe point) | with caching vs full | "
          "calls after the cache expired |", "| --- | ---: | ---: | ---: | ---: |"]


def tuning() -> str:
    from models.prices import price_of

    price, out = price_of(PRICED), []
    for name in TUNING:
        reports = replayed(name, ["full"] + [f"cold:{t}" for t in THRESHOLDS], TWO_HOURS)
        out += [f"`{name}.jsonl`, two hours before each question:", "", *HEADER,
                *(row(report.policy, report, reports[0], price) for report in reports), ""]
    return "\n".join(out)


def held_out() -> str:
    from models.prices import price_of

    price, out = price_of(PRICED), []
    for name in HELD_OUT:
        for said, pause in PACES:
            reports = replayed(name, COMPARED + ["cold"], pause)
            out += [f"`{name}.jsonl`, {said} before each question:", "", *HEADER,
                    *(row(report.policy, report, reports[0], price) for report in reports), ""]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tuning", action="store_true", help="the tuning table alone")
    parser.add_argument("--check", action="store_true", help="compare with docs/experiments.md instead of printing")
    args = parser.parse_args()
    tables = tuning() if args.tuning else tuning() + "\n" + held_out()
    if not args.check:
        print(tables)
        return 0
    with open(os.path.join(ROOT, "docs", "experiments.md"), encoding="utf-8") as file:
        page = file.read()
    stale = [block for block in tables.split("\n\n") if block.strip() and block.strip() not in page]
    for block in stale:
        print(f"docs/experiments.md does not hold this table of cold:T as the replay gives it now: {block[:80]!r}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
