"""Report formats for a replay: an SVG chart, CSV and JSON. Plain text out, no terminal and no model.

The terminal tables are display.py's; the experiments that produce the reports are in experiments/.
"""
import csv
import io
from dataclasses import asdict

from experiments.facts import Fact, ProbePoint
from experiments.probe import ProbeAnswer, tally
from experiments.replay import PolicyReplay
from policies import BUCKET_NAMES
from views.terminal import clean

LINE_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
DASHES = ["", "8 4", "2 3", "10 3 2 3", "4 4", "1 2"]


def svg_plot(reports: list[PolicyReplay], title: str, counter: str, points: list[ProbePoint] = (),
             at_call: dict | None = None) -> str:
    """The chart of `context_chart` as a standalone SVG file (`--plot`), with its title, for the measured policies."""
    return context_chart([r for r in reports if r.measured and r.sizes], counter, points, at_call, title) + "\n"


def context_chart(reports: list[PolicyReplay], counter_name: str, points: list[ProbePoint] = (),
                  at_call: dict | None = None, title: str | None = None) -> str:
    """Context size per call, one line per policy, as SVG; the probe points, when given, marked on every line (at_call:
    a point's label -> the call it comes before; a point after the last call has no call to mark). Lines that coincide stay visible: each is drawn thinner than the one before it
    and with its own dash pattern, so a line on top of another shows as a stripe within it. With a title, a standalone
    file (its own size, font and background); without, a chart for a page, which gives those."""
    width, height, left, right, bottom = 900, 380, 70, 170, 45
    top = 45 if title else 20
    calls = max((len(report.sizes) for report in reports), default=1)
    peak = max((report.peak for report in reports), default=1) or 1

    def x(number):  # a call number, from 1
        return left + (width - left - right) * ((number - 1) / max(calls - 1, 1))

    def y(value):
        return height - bottom - (height - bottom - top) * value / peak

    if title:
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
               'font-family="sans-serif" font-size="12">', '<rect width="100%" height="100%" fill="white"/>',
               f'<text x="{left}" y="20" font-size="15">{_xml(title)}</text>']
    else:
        out = [f'<svg class="plot" viewBox="0 0 {width} {height}" role="img" aria-label="context size per call">']
    out += [f'<line x1="{left}" y1="{y(0)}" x2="{x(calls)}" y2="{y(0)}" stroke="#333"/>',
            f'<line x1="{left}" y1="{y(0)}" x2="{left}" y2="{y(peak)}" stroke="#333"/>',
            f'<text x="{(left + x(calls)) / 2}" y="{height - 8}" text-anchor="middle">model call</text>',
            f'<text x="14" y="{(y(0) + y(peak)) / 2}" transform="rotate(-90 14 {(y(0) + y(peak)) / 2})" '
            f'text-anchor="middle">context tokens ({_xml(counter_name)})</text>']
    for fraction in (0, 0.25, 0.5, 0.75, 1):
        value = round(peak * fraction)
        out.append(f'<line x1="{left}" y1="{y(value):.1f}" x2="{x(calls)}" y2="{y(value):.1f}" stroke="#e4e4e4"/>'
                   f'<text x="{left - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{value:,}</text>')
    for number in sorted({1, calls, *range(1, calls + 1, max(calls // 8, 1))}):
        out.append(f'<text x="{x(number):.1f}" y="{y(0) + 16}" text-anchor="middle">{number}</text>')
    at_call = {label: number for label, number in (at_call or {}).items() if number <= calls}  # none after the end
    marked = [at_call[point.label] for point in points if point.label in at_call]
    for point in points:
        number = at_call.get(point.label)
        if number:
            out.append(f'<line class="probe" x1="{x(number):.1f}" y1="{y(0)}" x2="{x(number):.1f}" y2="{y(peak)}" '
                       f'stroke="#888" stroke-dasharray="3 3"><title>probe point: {_xml(point.label)}</title></line>'
                       f'<text x="{x(number):.1f}" y="{top - 6}" text-anchor="middle" font-size="10">probe {number}</text>')
    widths = [2 + 1.5 * (len(reports) - n - 1) for n in range(len(reports))]
    for n, report in enumerate(reports):
        colour, dash = LINE_COLOURS[n % len(LINE_COLOURS)], DASHES[n % len(DASHES)]
        line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(report.sizes, 1))
        out.append(f'<polyline class="policy" fill="none" stroke="{colour}" stroke-width="{widths[n]}" '
                   f'stroke-dasharray="{dash}" stroke-linejoin="round" points="{line}">'
                   f'<title>{_xml(report.policy)}: peak {report.peak:,}, total {report.total:,}</title></polyline>')
        for number in marked:
            if number <= len(report.sizes):
                out.append(f'<circle cx="{x(number):.1f}" cy="{y(report.sizes[number - 1]):.1f}" r="3.5" fill="{colour}">'
                           f'<title>{_xml(report.policy)} at call {number}: {report.sizes[number - 1]:,} tokens</title></circle>')
        legend_y = top + 20 * n + 10
        out.append(f'<line x1="{width - right + 12}" y1="{legend_y}" x2="{width - right + 40}" y2="{legend_y}" '
                   f'stroke="{colour}" stroke-width="3" stroke-dasharray="{dash}"/>'
                   f'<text x="{width - right + 46}" y="{legend_y + 4}">{_xml(report.policy)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _xml(text: str) -> str:
    """Text as XML character data: control characters (which XML 1.0 refuses, and a terminal would obey) dropped."""
    return clean(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


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
                answers: list[ProbeAnswer] | None = None, model_name: str | None = None, window: int | None = None,
                priced: tuple | None = None) -> dict:
    """The whole replay as one JSON-ready dict. Per policy: PolicyReplay's fields (`calls` holds each call's buckets,
    `repeated` each call's tokens repeating the call before), total, peak, what a prefix cache could serve, and with
    `priced` (a model's name and list price) the input cost without and with it. With a probe: every answer, and the
    tallies by probe point and by fact with Wilson intervals."""
    def costs(report: PolicyReplay) -> dict:
        if not priced:
            return {}
        name, price = priced
        return {"input_cost": {"priced_as": name, "no_cache": round(report.input_cost(price, False), 8),
                               "with_cache": round(report.input_cost(price, True), 8)}}

    return {
        "counter": counter, "calls": max((len(r.sizes) for r in reports), default=0), "context_window": window,
        "facts": [asdict(fact) for fact in facts], "probe_points": [asdict(point) for point in points],
        "policies": [{**asdict(r), "total": r.total, "peak": r.peak, "cacheable": r.cacheable, **costs(r)}
                     for r in reports],
        "probe": {"model": model_name, "answers": [asdict(a) for a in answers],
                  "by_point": tally(answers, "point"), "by_fact": tally(answers, "fact")} if answers is not None else None,
    }
