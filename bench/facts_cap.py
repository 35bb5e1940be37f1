"""How many facts the key-facts block keeps (policies/facts.py's MAX_FACTS), chosen by measurement in two steps.

    python bench/facts_cap.py PATH/locomo10.zip [--policies window:8+facts,stable]

The `facts` block's cap (policies/facts.py's MAX_FACTS) and stable's (policies/stable.py's, whose block is also
held to a share of T) are each the choice for their policy.
1. On the shipped conversations (long.jsonl and support.jsonl, the tuning set the +facts policies were measured on),
   the smallest cap of CAPS at which `window:0+facts` and `window:2+facts` lose no more planted facts than with no
   cap at all: a smaller block drops a fact the rule found. long.jsonl's rule finds 53 facts.
2. On LoCoMo's first five conversations, whose sessions state hundreds of facts (bench/locomo.py says how a
   conversation becomes a trace and what "evidence kept" means), for each cap: the share of questions whose evidence
   is all in the context, and the input tokens. A bigger block is worth its tokens while it keeps evidence at a
   lower price than full history does: while the evidence it adds per token, from one cap to the next, is at least
   full history's evidence kept per token. The largest cap that passes every step up from step 1's is the choice.
The choice and the current cap are then reported on LoCoMo's other five conversations (the test set), never tuned
on. The data is not shipped (see bench/locomo.py). A benchmark, not a test: 23 minutes on 2 busy cores.
"""
import argparse
import os
import sys
import tempfile

from repository import ROOT  # importing it puts ROOT on the import path
CAPS = [15, 30, 45, 60, 120, 240, 480, 960]
SHIPPED = ["long", "support"]
SHIPPED_POLICIES = ["window:0+facts", "window:2+facts"]
TUNING = 5  # the first five conversations, in the file's order; the rest are the test set


def with_cap(cap: int, conversations, specs: list[str], folder: str) -> dict:
    """{policy: (evidence kept share, input tokens)} with the block holding the latest `cap` facts."""
    import locomo
    import policies.facts
    import policies.stable

    policies.facts.MAX_FACTS = policies.stable.MAX_FACTS = cap  # the one setting measured; restored by the caller
    results, _ = locomo.measure(conversations, specs, locomo.rules(), folder)
    summary = locomo.as_json(conversations, results, {}, locomo.rules())
    return {name: (measured["evidence_kept"], measured["input_tokens"])
            for name, measured in summary["policies"].items()}


def shipped_floor() -> int:
    """Step 1: the smallest cap at which the +facts policies lose no more planted facts on the shipped
    conversations than with every fact the rule finds kept."""
    import policies.facts
    import policies.stable
    from experiments.facts import load_facts, probe_points
    from experiments.replay import replay
    from traces import read_trace_file

    def lost(cap: int) -> int:
        policies.facts.MAX_FACTS = policies.stable.MAX_FACTS = cap
        total = 0
        for name in SHIPPED:
            path = os.path.join(ROOT, "conversations", name)
            header, events = read_trace_file(path + ".jsonl")
            facts, declared = load_facts(header, path + ".facts.json")
            for report in replay(header, events, SHIPPED_POLICIES, facts=facts, points=probe_points(declared, events)):
                total += sum(state in ("gone", "partly") for states in report.facts.values()
                             for state in states.values())
        return total

    least, cells = lost(10 ** 6), {cap: lost(cap) for cap in CAPS}
    print(f"Shipped conversations ({', '.join(SHIPPED)}), {', '.join(SHIPPED_POLICIES)}: fact × probe point cells "
          f"lost with no cap {least}; " + "; ".join(f"cap {cap} {cells[cap]}" for cap in CAPS))
    return next(cap for cap in CAPS if cells[cap] == least)


def choose(rows: dict[int, tuple[float, int]], full: tuple[float, int], floor: int = 0) -> int:
    """The largest cap reached from `floor` while every step up adds evidence at no more tokens per share than full
    history's average."""
    rate = full[0] / full[1]  # full history's evidence kept per input token
    caps = [cap for cap in sorted(rows) if cap >= floor]
    chosen = caps[0]
    for smaller, larger in zip(caps, caps[1:]):
        gained, paid = rows[larger][0] - rows[smaller][0], rows[larger][1] - rows[smaller][1]
        if paid > 0 and gained / paid < rate:
            break
        chosen = larger
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", help="LoCoMo's data/locomo10.json, or a zip of it")
    parser.add_argument("--policies", default="window:8+facts,stable")
    args = parser.parse_args()
    import locomo
    import policies.facts
    import policies.stable

    try:
        conversations = locomo.read(args.data)
    except locomo.DataError as problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    tuning, test = conversations[:TUNING], conversations[TUNING:]
    specs = ["full", *args.policies.split(",")]
    restored = policies.facts.MAX_FACTS, policies.stable.MAX_FACTS
    current = set(restored)  # the block's cap and stable's own
    floor = shipped_floor()
    print(f"step 1 chooses {floor}\n")
    with tempfile.TemporaryDirectory() as folder:
        table = {cap: with_cap(cap, tuning, specs, folder) for cap in CAPS}
        print(f"Tuning set: LoCoMo's first {len(tuning)} conversations, "
              f"{sum(len(c.questions) for c in tuning):,} questions")
        print("| cap | " + " | ".join(f"{spec}: evidence kept, input tokens" for spec in specs[1:]) + " |")
        print("| ---: |" + " ---: |" * (len(specs) - 1))
        for cap, row in table.items():
            print(f"| {cap} | " + " | ".join(f"{row[name][0]:.1%}, {row[name][1]:,}" for name in list(row)[1:]) + " |")
        full = table[CAPS[0]]["full"]
        print(f"full history: {full[0]:.1%} at {full[1]:,} input tokens")
        chosen = {}
        for name in list(table[CAPS[0]])[1:]:
            chosen[name] = choose({cap: row[name] for cap, row in table.items()}, full, floor)
            print(f"{name}: step 2 chooses {chosen[name]}")
        print(f"\nTest set: LoCoMo's other {len(test)} conversations, {sum(len(c.questions) for c in test):,} "
              "questions, never tuned on")
        for cap in sorted({*current, *chosen.values()}):
            row = with_cap(cap, test, specs, folder)
            print(f"cap {cap}: " + "; ".join(f"{name} {kept:.1%} at {tokens:,} tokens" for name, (kept, tokens)
                                           in row.items()))
    policies.facts.MAX_FACTS, policies.stable.MAX_FACTS = restored
    return 0


if __name__ == "__main__":
    sys.exit(main())
