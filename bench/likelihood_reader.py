"""Does the likelihood reader measure what a context gives the model? Four checks on the shipped conversations.

    python bench/likelihood_reader.py --set tuning            # short and renovation: where the reader was looked at
    python bench/likelihood_reader.py --set test              # long and support: reported once
    python bench/likelihood_reader.py --conversations short --no-reuse   # the same, the network's cache emptied
                                                                          # before every score: what reuse saves
    python bench/likelihood_reader.py --from RESULT.json [...]            # the checks again, from saved runs

Each conversation is replayed under the default policies and its planted facts scored with `--probe --reader
likelihood` and the embedded model (the 0.5B by default). From the lifts it reports:
1. separation: the probe points where full history's 95% interval lies wholly above window:2's;
2. a negative control: the mean lift where a policy has lost the fact ("gone"), against full history's mean lift
   on the same facts and points, where it keeps them (the aim: under a quarter);
3. agreement with presence: the AUC of lift between cells where the fact is kept and cells where it is gone, over
   every policy, fact and point (0.5 is chance, 1 a perfect split);
4. the distractor: where the fact is kept and the fact names distractors, the share of cells where the gold's lift
   is above the distractors' mean lift.
It also says the time, the calls and the tokens worked through, against the tokens of every prompt scored whole
(what the network would run with no reuse). Saved runs go to bench/results/likelihood-NAME[-MODEL].json.
A benchmark, not a test: long and support take tens of minutes with the 0.5B on 2 cores.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import redirect_stdout
from io import StringIO

from repository import ROOT  # importing it puts ROOT on the import path
SETS = {"tuning": ["short", "renovation"], "test": ["long", "support"]}
RESULTS = os.path.join(ROOT, "bench", "results")


def measured(name: str, model_spec: str, reuse: bool, phrasings: int | None) -> dict:
    """The replay's --json with the likelihood reader, and how the scoring went: seconds, scores, tokens."""
    import cli
    from models import load_model

    model = load_model(model_spec)
    counts = {"scores": 0, "prefilled": 0, "whole": 0}
    score = model.log_likelihood

    def counted(messages, answer):
        if not reuse:
            model.network.cached = []  # every prompt worked through from its first token
        value = score(messages, answer)
        counts["scores"] += 1
        counts["prefilled"] += model.network.timings["prefill_tokens"]
        counts["whole"] += model.network.timings["prefill_tokens"] + model.network.timings["reused_tokens"]
        return value
    model.log_likelihood = counted
    conversations = os.path.join(ROOT, "conversations")
    with tempfile.TemporaryDirectory() as folder:  # the summaries compact writes stay out of conversations/
        trace = os.path.join(folder, f"{name}.jsonl")
        with open(os.path.join(conversations, f"{name}.jsonl"), "rb") as source, open(trace, "wb") as copy:
            copy.write(source.read())
        argv = ["--replay", trace, "--facts", os.path.join(conversations, f"{name}.facts.json"), "--probe",
                "--reader", "likelihood", "--json"] + (["--phrasings", str(phrasings)] if phrasings else [])
        out, started = StringIO(), time.perf_counter()
        with redirect_stdout(out):
            code = cli.main(argv, model=model)
        seconds = time.perf_counter() - started
    if code not in (0, 1):
        raise SystemExit(f"the replay of {name} failed (exit {code})")
    data = json.loads(out.getvalue())
    data["bench"] = {"conversation": name, "model": model_spec, "reuse": reuse, "seconds": round(seconds, 1), **counts}
    return data


def checks(data: dict) -> dict:
    """The four checks on one conversation's --json."""
    policies = {policy["policy"]: policy for policy in data["policies"] if policy.get("likelihood")}
    full, window = policies.get("full"), policies.get("window:2")
    points = list(full["likelihood_by_point"]) if full else []
    separated = sum(full["likelihood_by_point"][p]["low"] > window["likelihood_by_point"][p]["high"]
                    for p in points if window and p in window["likelihood_by_point"])
    kept, gone, full_kept, gold_above = [], [], [], []
    for policy in policies.values():
        for fact, by_point in policy["likelihood"].items():
            for point, cell in by_point.items():
                state = policy["facts"][fact][point]
                if state == "kept":
                    kept.append(cell["lift"])
                    if cell["distractor_lift"] is not None:
                        gold_above.append(cell["lift"] > cell["distractor_lift"])
                elif state == "gone":
                    gone.append(cell["lift"])
                    if full and full["facts"][fact][point] == "kept":
                        full_kept.append(full["likelihood"][fact][point]["lift"])
    pairs = [(k > g) + 0.5 * (k == g) for k in kept for g in gone]
    mean = lambda values: sum(values) / len(values) if values else None  # noqa: E731
    return {"points": len(points), "separated": separated,
            "gone_cells": len(gone), "gone_mean_lift": mean(gone), "full_kept_mean_lift_same_cells": mean(full_kept),
            "kept_cells": len(kept), "auc": mean(pairs),
            "distractor_cells": len(gold_above), "gold_above_distractor": mean(gold_above)}


def report(name: str, data: dict) -> None:
    result, bench = checks(data), data.get("bench", {})
    ratio = (result["gone_mean_lift"] / result["full_kept_mean_lift_same_cells"]
             if result["gone_mean_lift"] is not None and result["full_kept_mean_lift_same_cells"] else None)
    print(f"{name}: separation {result['separated']}/{result['points']} points · "
          f"gone: mean lift {_f(result['gone_mean_lift'])} over {result['gone_cells']} cells, full's there "
          f"{_f(result['full_kept_mean_lift_same_cells'])} (ratio {_f(ratio)}) · "
          f"AUC kept vs gone {_f(result['auc'])} ({result['kept_cells']} kept, {result['gone_cells']} gone) · "
          f"gold above distractor {_f(result['gold_above_distractor'])} of {result['distractor_cells']} kept cells")
    if bench:
        print(f"  {bench['model']}, reuse {'on' if bench['reuse'] else 'off'}: {bench['seconds']} s, "
              f"{bench['scores']} scores, {bench['prefilled']:,} tokens worked through of {bench['whole']:,} "
              "in the prompts scored")
    for policy in data["policies"]:
        if policy.get("likelihood_by_point"):
            cells = " · ".join(f"{c['lift']:+.2f} [{c['low']:+.2f}, {c['high']:+.2f}]"
                               for c in policy["likelihood_by_point"].values())
            print(f"  {policy['policy']:<14} {cells}")


def _f(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=list(SETS))
    parser.add_argument("--conversations", help="names in conversations/, e.g. short,long")
    parser.add_argument("--model", default="local:qwen2.5-coder-0.5b")
    parser.add_argument("--phrasings", type=int)
    parser.add_argument("--no-reuse", action="store_true", help="empty the network's cache before every score")
    parser.add_argument("--from", dest="saved", nargs="+", metavar="RESULT.json", help="report saved runs")
    args = parser.parse_args()
    if args.saved:
        for path in args.saved:
            with open(path, encoding="utf-8") as file:
                report(os.path.basename(path), json.load(file))
        return 0
    names = args.conversations.split(",") if args.conversations else SETS[args.set or "tuning"]
    for name in names:
        data = measured(name, args.model, not args.no_reuse, args.phrasings)
        tag = "" if args.model == "local:qwen2.5-coder-0.5b" else "-" + args.model.split(":")[-1]
        tag += "" if not args.no_reuse else "-no-reuse"
        tag += f"-p{args.phrasings}" if args.phrasings else ""
        path = os.path.join(RESULTS, f"likelihood-{name}{tag}.json")
        with open(path, "w", encoding="utf-8") as file:
            json.dump(data, file, indent=1, ensure_ascii=False)
        report(name, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
