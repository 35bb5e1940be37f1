"""Experiments: context policies compared on the same work, so that only the policy varies.

    live.py       one question, run once per policy with the same model and the same tool results
    replay.py     a recorded session, rendered under each policy at every call (teacher forcing): sizes,
                  cost, invariant violations, and whether each planted fact is still in the context
    probe.py      a model asked about each fact at each probe point, under each policy and two controls
    facts.py      planted facts, probe points, and matching an answer against an expected value
    recording.py  a scripted conversation played through the real loop into a trace

Everything returned is a plain dataclass or dict, for the views (views/) to show.
"""
import sys


def warn(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr)
