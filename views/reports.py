"""Report formats for a replay: an SVG chart, CSV and JSON. Plain text out, no terminal and no model.

The terminal tables are display.py's; the experiments that produce the reports are in experiments/.
"""
import csv
import io
import json
from dataclasses import asdict

from experiments.facts import Fact, ProbePoint
from experiments.probe import ProbeAnswer, tally
from experiments.replay import PolicyReplay
from models.prices import dollars
from policies import BUCKET_NAMES
from views.terminal import visible

LINE_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
DASHES = ["", "8 4", "2 3", "10 3 2 3", "4 4", "1 2"]


def svg_plot(reports: list[PolicyReplay], title: str, counter: str, points: list[ProbePoint] = (),
             at_call: dict | None = None, answers: list[ProbeAnswer] | None = None, priced: list | None = None) -> str:
    """`--plot`: the context-size chart (`context_chart`) as a standalone SVG file with its title, and below it, when
    facts were planted, the trade-off chart of the page (cost against what is kept, the frontier named)."""
    chart = context_chart([r for r in reports if r.measured and r.sizes], counter, points, at_call, title)
    panels = tradeoff_panels(reports, answers, priced)
    if not panels:
        return chart + "\n"
    below = tradeoff_chart(panels, "Cost against what is kept, one point a policy; the Pareto frontier in green")
    width = max(_width(chart), _width(below))
    heights = [_height(chart), _height(below)]
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{sum(heights)}" '
            f'viewBox="0 0 {width} {sum(heights)}">\n<rect width="100%" height="100%" fill="white"/>\n'
            + chart.replace("<svg ", '<svg x="0" y="0" ', 1) + "\n"
            + below.replace("<svg ", f'<svg x="0" y="{heights[0]}" ', 1) + "\n</svg>\n")


def _width(svg: str) -> int:
    return int(svg.split('width="', 1)[1].split('"', 1)[0])


def _height(svg: str) -> int:
    return int(svg.split('height="', 1)[1].split('"', 1)[0])


MANY = 6  # more lines than this in one chart cannot be told apart: each policy gets a small chart of its own


def context_multiples(reports: list[PolicyReplay], counter_name: str, points: list[ProbePoint] = (),
                      at_call: dict | None = None, title: str | None = None) -> str:
    """Context size per call as small multiples: one small chart a policy, on one scale, each with full history's
    line in grey behind it (when it was replayed) and the probe points marked."""
    columns, cell, plot_height, top = 4, 225, 120, 45 if title else 10
    rows = -(-len(reports) // columns)
    width, height = columns * cell + 20, top + rows * (plot_height + 50) + 30
    calls = max((len(report.sizes) for report in reports), default=1)
    peak = max((report.peak for report in reports), default=1) or 1
    full = next((report for report in reports if report.policy == "full"), None)
    at_call = {label: number for label, number in (at_call or {}).items() if number <= calls}
    if title:
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" '
               'font-family="sans-serif" font-size="11">', '<rect width="100%" height="100%" fill="white"/>',
               f'<text x="20" y="20" font-size="15">{_xml(title)}</text>']
    else:
        out = [f'<svg class="plot multiples" viewBox="0 0 {width} {height}" role="img" '
               'aria-label="context size per call">']
    out.append(f'<text x="20" y="{height - 8}">each: a policy · its input tokens in all; model call 1 to {calls} '
               f'left to right, context tokens 0 to {peak:,} ({_xml(counter_name)}); grey: full history; '
               'dashed: probe points</text>')
    for number, report in enumerate(reports):
        left, base = 20 + (number % columns) * cell, top + (number // columns) * (plot_height + 50) + 20 + plot_height

        def x(call, left=left):
            return left + (cell - 30) * ((call - 1) / max(calls - 1, 1))

        def y(value, base=base):
            return base - plot_height * value / peak

        out.append(f'<text x="{left}" y="{base - plot_height - 6}">{_xml(report.policy)} · {report.total:,}</text>')
        out.append(f'<rect x="{left}" y="{base - plot_height}" width="{cell - 30}" height="{plot_height}" fill="none" '
                   f'stroke="#ccc"/>')
        for label, call in at_call.items():
            out.append(f'<line x1="{x(call):.1f}" y1="{base}" x2="{x(call):.1f}" y2="{base - plot_height}" '
                       f'stroke="#999" stroke-dasharray="3 3"><title>probe point: {_xml(label)}</title></line>')
        if full is not None and full is not report:
            line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(full.sizes, 1))
            out.append(f'<polyline fill="none" stroke="#ccc" stroke-width="2" points="{line}"/>')
        line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(report.sizes, 1))
        out.append(f'<polyline class="policy" fill="none" stroke="{LINE_COLOURS[0]}" stroke-width="2" points="{line}">'
                   f'<title>{_xml(report.policy)}: peak {report.peak:,}, total {report.total:,}</title></polyline>')
    out.append("</svg>")
    return "\n".join(out)


def context_chart(reports: list[PolicyReplay], counter_name: str, points: list[ProbePoint] = (),
                  at_call: dict | None = None, title: str | None = None) -> str:
    """Context size per call, one line per policy, as SVG; the probe points, when given, marked on every line (at_call:
    a point's label -> the call it comes before; a point after the last call has no call to mark). Lines that coincide
    stay visible: each is drawn thinner than the one before it and with its own dash pattern, so a line on top of
    another shows as a stripe within it. With a title, a standalone file (its own size, font and background); without,
    a chart for a page, which gives those. More than MANY policies are drawn as small multiples instead
    (context_multiples)."""
    if len(reports) > MANY:
        return context_multiples(reports, counter_name, points, at_call, title)
    width, height, left, right, bottom = 900, 380, 70, 170, 45
    top = 45 if title else 20
    calls = max((len(report.sizes) for report in reports), default=1)
    peak = max((report.peak for report in reports), default=1) or 1

    def x(number):  # a call number, from 1
        return left + (width - left - right) * ((number - 1) / max(calls - 1, 1))

    def y(value):
        return height - bottom - (height - bottom - top) * value / peak

    if title:
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" '
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
                       f'<text x="{x(number):.1f}" y="{top - 6}" text-anchor="middle" font-size="10">'
                       f'probe {number}</text>')
    widths = [2 + 1.5 * (len(reports) - n - 1) for n in range(len(reports))]
    for n, report in enumerate(reports):
        colour, dash = LINE_COLOURS[n % len(LINE_COLOURS)], DASHES[n % len(DASHES)]
        line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(report.sizes, 1))
        out.append(f'<polyline class="policy" fill="none" stroke="{colour}" stroke-width="{widths[n]}" '
                   f'stroke-dasharray="{dash}" stroke-linejoin="round" points="{line}">'
                   f'<title>{_xml(report.policy)}: peak {report.peak:,}, total {report.total:,}</title></polyline>')
        for number in marked:
            if number <= len(report.sizes):
                out.append(f'<circle cx="{x(number):.1f}" cy="{y(report.sizes[number - 1]):.1f}" r="3.5" '
                           f'fill="{colour}"><title>{_xml(report.policy)} at call {number}: '
                           f'{report.sizes[number - 1]:,} tokens</title></circle>')
        legend_y = top + 20 * n + 10
        out.append(f'<line x1="{width - right + 12}" y1="{legend_y}" x2="{width - right + 40}" y2="{legend_y}" '
                   f'stroke="{colour}" stroke-width="3" stroke-dasharray="{dash}"/>'
                   f'<text x="{width - right + 46}" y="{legend_y + 4}">{_xml(report.policy)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def kept_share(report: PolicyReplay) -> float | None:
    """The share of (fact, probe point) cells where the fact, once stated, is in the context: kept counts 1, partly
    (under some phrasings) ½, gone 0. A cell cut by the observation cap is left out: the cap is a setting of the
    replay, and what it loses is counted apart (the facts tables' ✂), not against the policy. None when no fact was
    stated at any probe point."""
    return _share_in_context(report, noise=False)


def noise_kept(report: PolicyReplay) -> float | None:
    """The share of cells where a fact tracked but not to be kept (a distractor, a superseded value) is still in the
    context, once stated: counted apart from recall; cells the observation cut decided are left out, as in
    kept_share. None when there is no such fact."""
    return _share_in_context(report, noise=True)


def _share_in_context(report: PolicyReplay, noise: bool) -> float | None:
    """Over the facts to keep (or, with `noise`, those not to be kept), the share of cells where the fact, once
    stated, is in the context: kept 1, partly ½, gone 0; a cell the observation cut decided is left out."""
    marks = [state for fact, states in report.facts.items() if (fact in report.not_to_keep) == noise
             for state in states.values() if state not in ("unstated", "cut")]
    return sum({"kept": 1.0, "partly": 0.5}.get(state, 0.0) for state in marks) / len(marks) if marks else None


def probe_share(answers: list[ProbeAnswer], policy: str) -> float | None:
    asked = [answer for answer in answers if answer.condition == policy]
    return sum(answer.verdict == "correct" for answer in asked) / len(asked) if asked else None


def frontier(points: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """The points no other beats on both counts (less x, more y): the Pareto frontier, from the cheapest."""
    best, out = -1.0, []
    for point in sorted(points, key=lambda p: (p[1], -p[2])):
        if point[2] > best:
            out.append(point)
            best = point[2]
    return out


def frontier_sentence(on: list[tuple[str, float, float]], x_words: str, y_words: str, show_x) -> str:
    """The frontier in words: which policies are on it, each with its cost and what it keeps."""
    if not on:
        return ""
    named = "; ".join(f"{label} ({show_x(x)}, {y:.0%})" for label, x, y in on)
    return (f"On the frontier, from the cheapest ({x_words}, {y_words}): {named}. Every other policy keeps less for "
            "as much, or as much for more.")


def tradeoff_chart(panels: list[tuple[str, str, list[tuple[str, float, float]], object]],
                   title: str | None = None) -> str:
    """Small scatter plots side by side, one point a policy: each panel (its x words, y words, points as (policy, x,
    y from 0 to 1), a format for x), the Pareto frontier drawn through the points no other beats on both counts."""
    size, gap, top = 300, 40, 45 if title else 20
    width, height = len(panels) * (size + gap) + gap, size + top + 55
    if title:
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" '
               'font-family="sans-serif" font-size="11">', '<rect width="100%" height="100%" fill="white"/>',
               f'<text x="{gap}" y="20" font-size="15">{_xml(title)}</text>']
    else:
        out = [f'<svg class="tradeoff" viewBox="0 0 {width} {height}" style="--natural: {width}px" role="img" '
               'aria-label="cost against what is kept">']
    for number, (x_words, y_words, points, show_x) in enumerate(panels):
        left = gap + number * (size + gap) + 20
        most = max((x for _, x, _ in points), default=1) or 1
        least = min((x for _, x, _ in points), default=0) * 0.9  # the axis starts near the cheapest, to spread them
        span = (most - least) or 1

        def x(value, left=left, least=least, span=span):  # room is left on the right for the labels
            return left + (size - 90) * (value - least) / span

        def y(value):
            return top + size - 20 - (size - 40) * value

        out += [f'<line x1="{left}" y1="{y(0)}" x2="{x(most)}" y2="{y(0)}" stroke="#333"/>',
                f'<line x1="{left}" y1="{y(0)}" x2="{left}" y2="{y(1)}" stroke="#333"/>',
                f'<text x="{(left + x(most)) / 2}" y="{y(0) + 32}" text-anchor="middle">{_xml(x_words)}</text>',
                f'<text x="{left - 28}" y="{(y(0) + y(1)) / 2}" '
                f'transform="rotate(-90 {left - 28} {(y(0) + y(1)) / 2})" '
                f'text-anchor="middle">{_xml(y_words)}</text>',
                f'<text x="{left - 4}" y="{y(1) + 4}" text-anchor="end">100%</text>',
                f'<text x="{left - 4}" y="{y(0) + 4}" text-anchor="end">0%</text>',
                f'<text x="{left}" y="{y(0) + 16}">{_xml(show_x(least))}</text>',
                f'<text x="{x(most)}" y="{y(0) + 16}" text-anchor="end">{_xml(show_x(most))}</text>']
        on = frontier(points)
        if len(on) > 1:
            steps = " ".join(f"{x(px):.1f},{y(py):.1f}" for _, px, py in on)
            out.append(f'<polyline class="frontier" fill="none" stroke="#2ca02c" stroke-width="2" points="{steps}">'
                       f'<title>the Pareto frontier</title></polyline>')
        names, placed = {label for label, _, _ in on}, []
        for label, px, py in sorted(points, key=lambda p: (-p[2], p[1])):
            colour = "#2ca02c" if label in names else "#888"
            tx, ty = x(px) + 6, y(py) - 5
            while any(abs(ty - oy) < 11 and tx < ox + ow and ox < tx + 6 * len(label) for ox, oy, ow in placed):
                ty += 11  # a label that would cover another goes below it
            placed.append((tx, ty, 6 * len(label)))
            out.append(f'<circle class="policy" cx="{x(px):.1f}" cy="{y(py):.1f}" r="4" fill="{colour}">'
                       f'<title>{_xml(label)}: {_xml(show_x(px))}, {py:.0%}</title></circle>'
                       f'<text x="{tx:.1f}" y="{ty:.1f}" font-size="10">{_xml(label)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def tradeoff_panels(reports: list[PolicyReplay], answers: list[ProbeAnswer] | None = None,
                    priced: list | None = None) -> list[tuple[str, str, list, object]]:
    """The panels of the trade-off chart: input tokens against facts kept; for each (model, price) of `priced`, the
    cost with prompt caching by that price's rule against facts kept; with probe answers, input tokens against probe
    answers correct."""
    measured = [report for report in reports if report.measured and report.sizes]
    kept = [(r.policy, r.total, share) for r in measured if (share := kept_share(r)) is not None]
    panels = [("input tokens, all calls", "facts kept", kept, lambda value: f"{value:,.0f}")] if kept else []
    for name, price in (priced or []) if kept else []:
        costed = [(r.policy, r.input_cost(price, True), kept_share(r)) for r in measured if kept_share(r) is not None]
        panels.append((f"input cost with prompt caching, {name}", "facts kept", costed, lambda value: f"${value:.3g}"))
    if answers:
        scored = [(r.policy, r.total, share) for r in measured if (share := probe_share(answers, r.policy)) is not None]
        if scored:
            panels.append(("input tokens, all calls", "probe answers correct", scored, lambda value: f"{value:,.0f}"))
    return panels


def _xml(text: str) -> str:
    """Text as XML character data: control characters (which XML 1.0 refuses, and a terminal would obey) shown
    where they stand."""
    return visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


CACHING_COLUMNS = ["policy", "input read from the cache", "calls it had expired for", "no cache", "with the cache",
                   "saved"]


def caching_cells(report: PolicyReplay, price) -> list[str]:
    """A policy's row of the caching table (CACHING_COLUMNS after the policy), as the terminal, the page and the docs
    show it: the share of its input the cache serves (what repeats the call before, while the cache still holds it),
    the calls whose repeated start had expired by then, its input cost at `price` without and with a prefix cache,
    and what the cache saves."""
    plain, cached = report.input_cost(price, False), report.input_cost(price, True)
    return [f"{report.cacheable(price) / report.total:.0%}" if report.total else "", f"{report.expired(price):,}",
            dollars(plain), dollars(cached), f"{1 - cached / plain:.0%}" if plain else ""]


def replay_csv(reports: list[PolicyReplay], setup: dict | None = None) -> str:
    """One row per policy and call: the context's size and its buckets, as tokens and as shares of the context; with
    `setup`, first one `# key: value` line for each of its entries (pandas: `read_csv(path, comment="#")`)."""
    out = io.StringIO()
    for key, value in (setup or {}).items():
        out.write(f"# {key}: {json.dumps(value, ensure_ascii=False)}\n")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["policy", "call", "context_tokens", *BUCKET_NAMES, *(f"{b}_share" for b in BUCKET_NAMES)])
    for report in reports:
        for number, (size, counts) in enumerate(zip(report.sizes, report.calls), 1):
            writer.writerow([spreadsheet_safe(report.policy), number, size, *(counts.get(b, 0) for b in BUCKET_NAMES),
                             *(f"{counts.get(b, 0) / size:.4f}" if size else "0" for b in BUCKET_NAMES)])
    return out.getvalue()


def answers_csv(answers: list[ProbeAnswer]) -> str:
    """Every probe answer, one row each, with its verdict; a model's text made safe for a spreadsheet. Rows end in
    CRLF, as RFC 4180 has them, so that a carriage return inside an answer is quoted like a newline."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    kind = type(answers[0]) if answers else ProbeAnswer  # or the likelihood reader's scores, with their lift
    names = list(kind.__dataclass_fields__) + (["lift"] if hasattr(kind, "lift") else [])
    writer.writerow(names)
    for answer in answers:
        writer.writerow([spreadsheet_safe(getattr(answer, name)) for name in names])
    return out.getvalue()


# What makes a spreadsheet read a cell as a formula (OWASP, "CSV Injection"): such a text cell is written after a
# single quote, which the spreadsheet shows as text and does not run.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value):
    """A text cell that a spreadsheet would run as a formula (`=HYPERLINK(...)`), written as text instead."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def lift_cell(cell: dict, digits: int = 1) -> str:
    """A likelihood lift with its interval, as the tables and the page show it: `+2.3 [+1.1, +3.4]`."""
    return f"{cell['lift']:+.{digits}f} [{cell['low']:+.{digits}f}, {cell['high']:+.{digits}f}]"


def replay_json(reports: list[PolicyReplay], counter: str, facts: list[Fact], points: list[ProbePoint],
                answers: list[ProbeAnswer] | None = None, model_name: str | None = None, window: int | None = None,
                priced: list | None = None, setup: dict | None = None, scored: list | None = None,
                likelihood: dict | None = None) -> dict:
    """The whole replay as one JSON-ready dict. Per policy: PolicyReplay's fields (`calls` holds each call's buckets,
    `repeated` each call's tokens repeating the call before), total, peak, and with `priced` (a list of a model's name
    and list price) what a prefix cache could serve under the first one's caching rule and the input cost without and
    with it (`input_cost`), and the same under every one of them (`input_cost_under`, by model). `setup`: what
    makes the numbers again (experiments/provenance.py: version, date, digests, the observation cut, the caching rule,
    the probe's settings). With a probe: every answer, and the tallies by probe point and by fact with Wilson
    intervals; with the likelihood reader (`scored`, and their `likelihood` lifts by condition, see
    experiments/likelihood.py): each policy's `likelihood` and `likelihood_by_point`, and under `probe` every score
    and the facts-only control's lifts."""
    def costs(report: PolicyReplay) -> dict:
        if not priced or not report.measured:  # a policy not measured has no cost, not a cost of $0
            return {}
        under = {name: {"priced_as": name, "cacheable": report.cacheable(price),
                        "no_cache": round(report.input_cost(price, False), 8),
                        "with_cache": round(report.input_cost(price, True), 8)} for name, price in priced}
        first = dict(under[priced[0][0]])
        return {"cacheable": first.pop("cacheable"), "input_cost": first, "input_cost_under": under}

    return {
        "counter": counter, "calls": max((len(r.sizes) for r in reports), default=0), "context_window": window,
        "facts": [asdict(fact) for fact in facts], "probe_points": [asdict(point) for point in points],
        "setup": setup,
        "policies": [{**asdict(r), "total": r.total, "peak": r.peak, **costs(r), **(likelihood or {}).get(r.policy, {})}
                     for r in reports],
        "probe": ({"model": model_name, "reader": "answer", "answers": [asdict(a) for a in answers],
                   "by_point": tally(answers, "point"), "by_fact": tally(answers, "fact")}
                  if answers is not None else
                  {"model": model_name, "reader": "likelihood", "unit": "nats",
                   "scores": [{**asdict(item), "lift": round(item.lift, 4)} for item in scored],
                   "controls": {name: lifts for name, lifts in (likelihood or {}).items()
                                if name not in {r.policy for r in reports}}}
                  if scored is not None else None),
    }
