"""Report formats for a replay: an SVG chart, CSV and JSON. Plain text out, no terminal and no model.

The terminal tables are display.py's; the experiments that produce the reports are compare.py's.
"""
import csv
import io
from dataclasses import asdict

from compare import Fact, PolicyReplay, ProbeAnswer, ProbePoint, tally
from policies import BUCKET_NAMES

def svg_plot(reports: list[PolicyReplay], title: str, counter: str) -> str:
    """A line chart of context size per call, one line per policy, as a standalone SVG file."""
    width, height, left, bottom, top_pad, right = 900, 480, 70, 50, 40, 190
    measured = [r for r in reports if r.measured and r.sizes]
    calls = max((len(r.sizes) for r in measured), default=1)
    top = max((r.peak for r in measured), default=1) or 1
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]

    def x(i):
        return left + (width - left - right) * (i / max(calls - 1, 1))

    def y(v):
        return height - bottom - (height - bottom - top_pad) * v / top

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="24" font-size="15">{_xml(title)}</text>',
           f'<line x1="{left}" y1="{y(0)}" x2="{x(calls - 1)}" y2="{y(0)}" stroke="black"/>',
           f'<line x1="{left}" y1="{y(0)}" x2="{left}" y2="{y(top)}" stroke="black"/>',
           f'<text x="{(left + x(calls - 1)) / 2}" y="{height - 12}" text-anchor="middle">model call</text>',
           f'<text x="16" y="{(y(0) + y(top)) / 2}" transform="rotate(-90 16 {(y(0) + y(top)) / 2})" '
           f'text-anchor="middle">context tokens ({_xml(counter)})</text>']
    for fraction in (0, 0.25, 0.5, 0.75, 1):
        value = round(top * fraction)
        out.append(f'<text x="{left - 6}" y="{y(value) + 4}" text-anchor="end">{value:,}</text>')
        out.append(f'<line x1="{left}" y1="{y(value)}" x2="{x(calls - 1)}" y2="{y(value)}" stroke="#ddd"/>')
    for i in sorted({0, calls - 1, *range(0, calls, max(calls // 8, 1))}):
        out.append(f'<text x="{x(i)}" y="{y(0) + 16}" text-anchor="middle">{i + 1}</text>')
    for n, report in enumerate(measured):
        colour = colours[n % len(colours)]
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(report.sizes))
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>')
        out.append(f'<text x="{width - right + 12}" y="{top_pad + 18 * n + 10}" fill="{colour}">{_xml(report.policy)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def replay_csv(reports: list[PolicyReplay]) -> str:
    """One row per policy and call: the context's size and its buckets, as tokens and as shares of the context."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["policy", "call", "context_tokens", *BUCKET_NAMES, *(f"{b}_share" for b in BUCKET_NAMES)])
    for report in reports:
        for number, (size, counts) in enumerate(zip(report.sizes, report.calls), 1):
            writer.writerow([report.policy, number, size, *(counts.get(b, 0) for b in BUCKET_NAMES),
                             *(f"{counts.get(b, 0) / size:.4f}" if size else "0" for b in BUCKET_NAMES)])
    return out.getvalue()


def answers_csv(answers: list[ProbeAnswer]) -> str:
    """Every probe answer, one row each, with its verdict."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    names = list(ProbeAnswer.__dataclass_fields__)
    writer.writerow(names)
    for answer in answers:
        writer.writerow([getattr(answer, name) for name in names])
    return out.getvalue()


def replay_json(reports: list[PolicyReplay], counter: str, facts: list[Fact], points: list[ProbePoint],
                answers: list[ProbeAnswer] | None = None, model_name: str | None = None, window: int | None = None) -> dict:
    """The whole replay as one JSON-ready dict. Per policy: PolicyReplay's fields (`calls` holds each call's buckets),
    total and peak. With a probe: every answer, and the tallies by probe point and by fact with Wilson intervals."""
    return {
        "counter": counter, "calls": max((len(r.sizes) for r in reports), default=0), "context_window": window,
        "facts": [asdict(fact) for fact in facts], "probe_points": [asdict(point) for point in points],
        "policies": [{**asdict(r), "total": r.total, "peak": r.peak} for r in reports],
        "probe": {"model": model_name, "answers": [asdict(a) for a in answers],
                  "by_point": tally(answers, "point"), "by_fact": tally(answers, "fact")} if answers is not None else None,
    }
