"""How stable:T's threshold was chosen: the shipped conversations replayed under stable:T for several T, each policy's
input cost with prompt caching against full history's under four caching rules, and the planted facts it loses.

    python bench/stable_sweep.py                 # the table, as Markdown
    python bench/stable_sweep.py --check         # exit 1 if docs/experiments.md holds another

Last, the default beside full history, elide:2 and window:0+facts on renovation.jsonl, a conversation recorded after
the choice and never tuned on.

The rules: Gemini 3.8 Flash's (4,096-token minimum, no write billed), the same at 1,024 tokens (the rule these
tables priced by before Google's caching page gave 4,096), GPT-5.6 Sol's (1,024, writes at 1.25x) and Claude Haiku
4.5's (4,096, writes at 1.25x). "floor" is the cost of sending the instructions alone at every call, uncached: no
policy that keeps the instructions costs less, whatever it drops, unless the instructions are cached.
"""
import argparse
import os
import sys

from repository import ROOT  # importing it puts ROOT on the import path
THRESHOLDS = [3000, 4000, 5000, 6000, 8000, 10000]
# What a rebuild keeps beside the key-facts block: the last two steps only (0), or the latest steps that fit in half of
# T (0.5), so that the rebuilt context starts closer to a provider's minimum: policies/stable.py's KEEP_SHARE.
SHARES = [0.0, 0.5]
CONVERSATIONS = ["long", "support"]  # the tuning set: T and the share were chosen on these
HELD_OUT = "renovation"  # recorded only for the check, after the choice: reported, never tuned on
COMPARED = ["full", "stable", "elide:2", "window:0+facts"]


def rules() -> list[tuple[str, object]]:
    from models.prices import Price, price_of

    gemini = price_of("gemini-3.8-flash")
    return [("gemini-3.8-flash", gemini),
            ("the same at 1,024", Price(gemini.input, gemini.cached_input, gemini.output, "", "",
                                        min_cache_tokens=1024)),
            ("gpt-5.6-sol", price_of("gpt-5.6-sol")), ("claude-haiku-4-5", price_of("claude-haiku-4-5"))]


def held_out() -> str:
    """The default stable beside full history and two other policies on the conversation it was not chosen on."""
    from experiments.facts import load_facts, probe_points
    from experiments.replay import replay
    from traces import read_trace_file

    header, events = read_trace_file(os.path.join(ROOT, "conversations", f"{HELD_OUT}.jsonl"))
    facts, declared = load_facts(header, os.path.join(ROOT, "conversations", f"{HELD_OUT}.facts.json"))
    reports = replay(header, events, COMPARED, facts=facts, points=probe_points(declared, events))
    return rows(reports, COMPARED)


def rows(reports, labels) -> str:
    """The sweep's table: tokens and facts lost against full history (the first report), and the cost with caching
    under each rule, then the floor."""
    full, priced = reports[0], rules()
    lines = ["| policy | input tokens, vs full | facts lost (fact × probe point) | "
             + " | ".join(f"with caching vs full, {rule}" for rule, _ in priced) + " |",
             "| --- | ---: | ---: |" + " ---: |" * len(priced)]
    for label, report in zip(labels, reports):
        lost = sum(state in ("gone", "partly") for states in report.facts.values() for state in states.values())
        lines.append(f"| {label} | {report.total / full.total:.0%} | {lost} | " + " | ".join(
            f"{report.input_cost(price, True) / full.input_cost(price, True):.0%}" for _, price in priced) + " |")
    instructions = full.buckets["instructions"] + full.buckets["tools"]  # every call's instructions, summed
    lines.append("| floor: the instructions alone, uncached | | | " + " | ".join(
        f"{instructions * price.input / 1e6 / full.input_cost(price, True):.0%}" for _, price in priced) + " |")
    return "\n".join(lines) + "\n"


def sweep(name: str) -> str:
    import policies.stable
    from experiments.facts import load_facts, probe_points
    from experiments.replay import replay
    from traces import read_trace_file

    header, events = read_trace_file(os.path.join(ROOT, "conversations", f"{name}.jsonl"))
    facts, declared = load_facts(header, os.path.join(ROOT, "conversations", f"{name}.facts.json"))
    points = probe_points(declared, events)
    chosen, reports = policies.stable.KEEP_SHARE, replay(header, events, ["full"], facts=facts, points=points)
    labels = ["full"]
    try:
        for share in SHARES:
            policies.stable.KEEP_SHARE = share
            reports += replay(header, events, [f"stable:{t}" for t in THRESHOLDS], facts=facts, points=points)
            labels += [f"stable:{t}, {'the last 2 steps' if not share else f'{share:.0%} of T'} kept"
                       + (" (the default)" if share == chosen and t == policies.stable.DEFAULT_TOKENS else "")
                       for t in THRESHOLDS]
    finally:
        policies.stable.KEEP_SHARE = chosen
    return rows(reports, labels)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with docs/experiments.md instead of printing")
    args = parser.parse_args()
    tables = [sweep(name) for name in CONVERSATIONS] + [held_out()]
    names = CONVERSATIONS + [HELD_OUT]
    if not args.check:
        print("\n".join(f"`{name}.jsonl`:\n\n{table}" for name, table in zip(names, tables)))
        return 0
    with open(os.path.join(ROOT, "docs", "experiments.md"), encoding="utf-8") as file:
        page = file.read()
    stale = [name for name, table in zip(names, tables) if table not in page]
    for name in stale:
        print(f"docs/experiments.md does not hold the stable:T sweep of {name}.jsonl as the replay gives it now")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
