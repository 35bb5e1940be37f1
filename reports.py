"""Report formats for a replay: an SVG chart, CSV and JSON. Plain text out, no terminal and no model.

The terminal tables are display.py's; the experiments that produce the reports are compare.py's.
"""
from dataclasses import asdict

from compare import PolicyReplay

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
    lines = ["policy,call,context_tokens"]
    for report in reports:
        lines += [f"{report.policy},{number},{size}" for number, size in enumerate(report.sizes, 1)]
    return "\n".join(lines) + "\n"


def replay_json(header: dict, reports: list[PolicyReplay], counter: str, scores: dict | None = None,
                model_name: str | None = None) -> dict:
    return {
        "counter": counter, "calls": max((len(r.sizes) for r in reports), default=0),
        "facts": header.get("facts", []), "probe_points": header.get("probe_points"),
        "policies": [{**asdict(r), "total": r.total, "peak": r.peak} for r in reports],
        "probe": {"model": model_name, "scores": scores} if scores is not None else None,
    }
