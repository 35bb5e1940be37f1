"""What does the embedded model answer from each policy's context? A probe table that runs in minutes offline.

    python bench/offline_probe.py [--model local:qwen2.5-coder-0.5b] [--phrasings 2]

It records conversations/short.script.json through the real loop (11 model calls, contexts of at most about
1,400 tokens, so that a numpy model reads each in seconds), then asks the planted facts of
conversations/short.facts.json (a user's code beside a look-alike, a tool-reported temperature, a corrected
train time) at two probe points, against four policies and the two controls, and prints the tables
`--replay --probe` prints, with every answer and its verdict. The reader is a 0.5B model: its answers measure
the contexts and the model together, and a small model's wrong answer from a full context is its own limit.
A benchmark, not a test: it takes a few minutes on 2 cores.
"""
import argparse
import os
import sys
import tempfile

from repository import ROOT  # importing it puts ROOT on the import path
POLICIES = "full,window:2,user-only:4,window:0+facts"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="local:qwen2.5-coder-0.5b")
    parser.add_argument("--phrasings", default="2")
    parser.add_argument("--answers", metavar="FILE.csv", help="also keep every answer and its verdict here")
    args = parser.parse_args()
    import cli

    conversations = os.path.join(ROOT, "conversations")
    with tempfile.TemporaryDirectory() as folder:
        trace = os.path.join(folder, "short.jsonl")
        code = cli.main(["--record", os.path.join(conversations, "short.script.json"), "--trace", trace])
        if code:
            return code
        return cli.main(["--replay", trace, "--facts", os.path.join(conversations, "short.facts.json"),
                         "--policies", POLICIES, "--probe", "--model", args.model, "--phrasings", args.phrasings,
                         "--answers", args.answers or os.path.join(folder, "answers.csv")])


if __name__ == "__main__":
    sys.exit(main())
