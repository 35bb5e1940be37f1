"""The replay page: a recorded session replayed under several policies: context sizes, costs, what each policy
keeps of the planted facts, the probe answers, and every call's context under every policy.
"""
import re
from typing import Sequence

from experiments.provenance import said
from experiments.facts import Fact, ProbePoint, call_points, load_facts, probe_points
from experiments.probe import VERDICTS, ProbeAnswer, tally
from experiments.replay import PolicyReplay, Summaries, probe_calls, summarised
from models import Message
from policies import BASELINE, BUCKET_NAMES, make_policy
from tokens import TokenCounter, local_counter
from views.pages.calls import change_line, change_list
from views.reading import changes
from views.pages.parts import PREVIEW, Store, bar, esc, folded, folded_context, legend, page, plural, preview, table
from views.reports import (CACHING_COLUMNS, caching_cells, context_chart, frontier, frontier_sentence, lift_cell,
                           tradeoff_chart, tradeoff_panels)

# What replay says about a fact at a probe point (experiments.facts.fact_state) -> (CSS class, mark, words). A state
# added there needs one line here; one missing is shown as "?" with its name.
FACT_STATES = {
    "kept": ("kept", "✓", "kept: its exact text is in the context"),
    "partly": ("partly", "◐", "partly: in the context for some probe questions, not for others"),
    "cut": ("cut", "✂", "cut: the observation stating it was shown cut by the observation cap, without it: lost to "
                        "the cap (a setting of the replay, --observation-cut), not to the policy"),
    "gone": ("gone", "✗", "gone: its exact text is not in the context"),
    "unstated": ("unstated", "–", "not stated yet at this point"),
}


def replay_page(header: dict, events: Sequence[dict], reports: list[PolicyReplay],
                counter: TokenCounter | None = None, facts: list[Fact] | None = None,
                points: list[ProbePoint] | None = None, answers: list[ProbeAnswer] | None = None,
                summaries: Summaries | None = None,

                model: str | None = None, title: str | None = None, priced: list | None = None,
                setup: dict | None = None, likelihood: dict | None = None) -> str:
    """A replay of a recorded session under several policies: context size per call (an inline SVG, probe points
    marked), the totals and buckets, with `priced` (models' names and list prices) the input cost without and with
    prompt caching, the state of each planted fact at each probe point, every probe answer with
    its verdict when probes ran, and every call's context under every measured policy, folded. `facts` and
    `points` default to the trace header's, as replay's do; `summaries` is the replay's, so that compact:T's
    contexts are rebuilt with the summaries it measured (from its cache: no model is called). `likelihood`: the
    likelihood reader's lifts by condition (experiments/likelihood.lifts), shown by probe point and beside each
    fact's state."""
    counter = counter or local_counter()
    store = Store(counter)
    if facts is None:
        facts, declared = load_facts(header)
        points = probe_points(declared, events) if points is None else points
    points = points if points is not None else probe_points({}, events)
    calls = call_points(events)
    at_call = probe_calls(points, events)
    title = title or f"Replay: {header.get('title') or 'a recorded session'}"
    measured = [report for report in reports if report.measured]
    asked = sum(event["type"] == "question" for event in events)
    body = [f"<h1>{esc(title)}</h1>",
            f'<p class="meta">{len(calls)} model calls · {asked} questions · every policy shown the same recorded '
            f'replies · token counts: {esc(counter.name)}; nothing here was billed · no call takes any time: '
            'the replies were recorded, not asked'
            + (f" · probes asked of {esc(model)}" if model else "") + "</p>"
            + (f'<p class="meta setup">{esc(said(setup))}</p>' if setup else ""),
            "<h2>Context size per call</h2>\n" + context_chart(measured, counter.name, points, at_call),
            totals_table(measured)]
    panels = tradeoff_panels(measured, answers, priced)
    if panels:
        body.append("<h2>Cost against what is kept</h2>\n" + tradeoff_chart(panels))
        body += [f'<p class="frontier">{esc(frontier_sentence(frontier(points_), x_words, y_words, show_x))}</p>'
                 for x_words, y_words, points_, show_x in panels]
    body += [caching_table(measured, name, price) for name, price in priced or []]
    body += [f'<p class="warning">{esc(report.policy)}: {esc(report.note)}</p>'
             for report in reports if not report.measured]
    body += [f'<p class="meta">{esc(report.policy)}: {esc(report.note)}</p>' for report in measured if report.note]
    shown = {report.policy: rendered_calls(events, report, counter, summaries) for report in measured}
    if facts and points and measured:
        if likelihood is not None:
            body.append(lift_table(points, likelihood, model))
        body.append(fact_table(facts, points, measured, left_at(facts, shown, at_call), likelihood))
        body.append(missing_table(store, facts, points, measured, shown, at_call, counter))
    if answers is not None:
        body.append(answer_tables(store, facts, answers, model))
    body.append("<h2>Every call under each policy</h2>" + legend(counter.name))
    scale = max((report.peak for report in measured), default=0)
    for report in measured:
        body.append(policy_calls(store, set(at_call.values()), report, scale, counter, shown[report.policy]))
    return page(title, body, store)


def totals_table(reports: list[PolicyReplay]) -> str:
    baseline = next((report.total for report in reports if report.policy == BASELINE), None)
    extra = [("summary calls", "summary_calls"), ("calls over the window", "over_window")]
    extra = [(name, attribute) for name, attribute in extra if any(getattr(report, attribute) for report in reports)]
    caveats = any(report.caveat for report in reports)  # a column only when a row has something to say
    rows = []
    for report in reports:
        change = f"{(report.total / baseline - 1) * 100:+.0f}%" if baseline and report.policy != BASELINE else ""
        rows.append([esc(report.policy), f"{report.total:,}", change, f"{report.peak:,}", str(report.violations),
                     *(f"{getattr(report, attribute):,}" for _, attribute in extra),
                     *(f"{report.buckets.get(name, 0):,}" for name in BUCKET_NAMES)]
                    + ([esc(report.caveat)] if caveats else []))
    columns = ["policy", "input tokens, all calls", "vs full", "peak context", "invariant violations",
               *(name for name, _ in extra), *BUCKET_NAMES] + (["what this replay cannot show"] if caveats else [])
    return "<h2>What each policy would have sent</h2>" + table(columns, rows, "totals")


def caching_table(reports: list[PolicyReplay], name: str, price) -> str:
    """Each policy's input cost at a model's list price without and with an implicit prefix cache, which serves what
    repeats the call before from the start: windows and summaries break that prefix, full history keeps it."""
    rows = [[esc(report.policy), *caching_cells(report, price)] for report in reports]
    return (f"<h2>What it would cost at {esc(name)}'s list price, without and with prompt caching</h2>"
            + table(CACHING_COLUMNS, rows, "caching")
            + f'<p class="meta">A cache serves the part of a call\'s input that repeats the call before from its '
              f'start (counted part by part, a lower bound), while it still holds it, by {esc(name)}\'s rule: '
              f'{esc(price.rule())}. Input only '
              f'({esc(price.source)}, read {esc(price.read)}).</p>')


def lift_table(points: list[ProbePoint], likelihood: dict, model: str | None) -> str:
    """The likelihood reader's lift of the gold answers at each probe point, per policy and the facts-only control,
    with the 95% bootstrap interval."""
    rows = []
    for condition, lifts in likelihood.items():
        by_point = lifts["likelihood_by_point"]
        rows.append([esc(condition), *(lift_cell(by_point[p.label], 2) if p.label in by_point else "–"
                                       for p in points)])
    return (f"<h2>Does the context lift the right answer?{' · model ' + esc(model) if model else ''}</h2>"
            + table(["context", *(point.label for point in points)], rows, "lifts")
            + '<p class="legend">log p(gold answer | context, question) less log p(gold answer | question alone), in '
              'nats, the mean over the facts asked and their phrasings, with its 95% bootstrap interval; nothing '
              'was generated. Each fact\'s lift is beside its state below.</p>')


def fact_table(facts: list[Fact], points: list[ProbePoint], reports: list[PolicyReplay],
               left: dict | None = None, likelihood: dict | None = None) -> str:
    """For each planted fact, a table of its state (see FACT_STATES) in each policy's context at each probe point;
    a fact no longer in the context links to the call where it left (`left`, from left_at); with `likelihood`, the
    gold answer's lift there beside it."""
    left = left or {}
    labels = "".join(f"<th>{esc(point.label)}</th>" for point in points)
    out, shown = ["<h2>Is each planted fact still in the context?</h2>"], {}
    for fact in facts:
        rows = []
        for report in reports:
            states = report.facts.get(fact.id, {})
            cells = []
            for point in points:
                css, mark, words = FACT_STATES.get(states.get(point.label),
                                                   ("unknown", "?", str(states.get(point.label))))
                shown[css] = f'<span class="fact {css}">{mark}</span> {esc(words)}'
                gone_at = left.get((fact.id, report.policy, point.label))
                where = (f' <a class="left" href="#{call_anchor(report.policy, gone_at)}">left at call {gone_at}</a>'
                         if gone_at and css in ("gone", "cut", "partly") else "")
                lifted = (likelihood or {}).get(report.policy, {}).get("likelihood", {}).get(fact.id, {})
                lift = (f' <span class="lift">lift {lifted[point.label]["lift"]:+.1f}</span>'
                        if point.label in lifted else "")
                cells.append(f'<td class="fact {css}" title="{esc(words)}">{mark} {esc(css)}{where}{lift}</td>')
            rows.append(f'<tr><th>{esc(report.policy)}</th>{"".join(cells)}</tr>')
        out.append(f'<h3 title="{esc(fact.kind)}">{esc(fact.id)}: <q>{esc(fact.text)}</q>'
                   + ('' if fact.keep else ' <span class="note">tracked, not to be kept: where it is still in the '
                      'context is counted apart, never as recall</span>') + '</h3>'
                   f'<table class="facts" data-fact="{esc(fact.id)}"><thead><tr><th>policy</th>{labels}</tr></thead>'
                   f'<tbody>{"".join(rows)}</tbody></table>')
    out.append(f'<p class="legend">{" · ".join(shown.values())}</p>')
    return "\n".join(out)


def answer_tables(store: Store, facts: list[Fact], answers: list[ProbeAnswer], model: str | None) -> str:
    """The probe answers: correct out of asked per condition and fact, with the 95% interval and the verdicts of the
    rest; then every answer, folded by condition, with its verdict. Each phrasing is listed once, by number."""
    scored = tally(answers, "fact")
    asked_about = [fact for fact in facts if any(fact.id in row for row in scored.values())]
    rows = []
    for condition, row in scored.items():
        cells = [esc(condition)]
        for fact in asked_about:
            cell = row.get(fact.id)
            if cell is None:
                cells.append("–")
                continue
            wrong = ", ".join(f"{cell[verdict]} {verdict}" for verdict in VERDICTS[1:] if cell[verdict])
            cells.append(f'<span class="score" style="--share:{cell["k"] / cell["n"] if cell["n"] else 0:.2f}">'
                         f'{cell["k"]}/{cell["n"]}</span> <small>({cell["low"]:.2f}–{cell["high"]:.2f})'
                         f'{"<br>" + esc(wrong) if wrong else ""}</small>')
        rows.append(cells)
    columns = ["condition", *(f"{fact.id} (gold: {fact.gold})" for fact in asked_about)]
    out = [f"<h2>Probe answers{' · model ' + esc(model) if model else ''}</h2>",
           table(columns, rows, "scores"),
           '<p class="legend">correct/asked, the 95% Wilson interval, and what the other answers were: '
           f'{esc(", ".join(VERDICTS[1:]))}. Closed book: no history; facts only: just the facts stated so far.</p>']
    phrasings = "".join(f"<li>{esc(fact.id)} {number}: {esc(question)}</li>"
                        for fact in asked_about for number, question in enumerate(fact.phrasings, 1))
    out.append(f'<details class="phrasings"><summary>The probe questions</summary><ul>{phrasings}</ul></details>')
    for condition in scored:
        lines = []
        for answer in (a for a in answers if a.condition == condition):
            text = (f"<q>{esc(answer.answer)}</q>" if len(answer.answer) <= PREVIEW
                    else folded(store, answer.answer, f"<q>{preview(answer.answer)}</q>"))
            lines.append([esc(answer.point), f"{esc(answer.fact)} {answer.phrasing}", str(answer.repeat), text,
                          f'<span class="verdict {esc(answer.verdict.replace(" ", "-"))}">'
                          f'{esc(answer.verdict)}</span>'])
        out.append(f'<details class="answers"><summary>Every answer under {esc(condition)} ({len(lines)})</summary>'
                   + table(["probe point", "question", "repeat", "answer", "verdict"], lines, "answers", 5)
                   + "</details>")
    return "\n".join(out)


def rendered_calls(events: Sequence[dict], report: PolicyReplay, counter: TokenCounter,
                   summaries: Summaries | None) -> list[list[Message]]:
    """What the policy of `report` showed at each call of the replay. A policy that asks for summaries is shown the
    session with the summaries the replay measured it with."""
    policy = make_policy(report.policy)
    session = list(events)
    if policy.needs_summaries:
        session = summarised(policy, events, counter.count, summaries).events or []
    return [policy.render(session[:index]) for index in call_points(session)][:len(report.calls)]


def call_anchor(policy: str, number: int) -> str:
    return "call-" + re.sub(r"[^A-Za-z0-9]+", "-", policy) + f"-{number}"


def left_at(facts: list[Fact], shown: dict, at_call: dict) -> dict:
    """{(fact id, policy, probe point label): the call at which the fact left that policy's context, the last time
    before the point} for each point where it is not in the context but had been."""
    out = {}
    for fact in facts:
        for policy, calls in shown.items():
            present = [fact.text in "\n".join(part.text for message in messages for part in message.parts)
                       for messages in calls]
            for label, call in at_call.items():
                before = present[:call - 1] if call <= len(present) else present
                gone = [n + 1 for n in range(1, len(before)) if before[n - 1] and not before[n]]
                if gone:
                    out[(fact.id, policy, label)] = gone[-1]
    return out


def missing_table(store: Store, facts: list[Fact], points: list[ProbePoint], reports: list[PolicyReplay],
                  shown: dict, at_call: dict, counter: TokenCounter) -> str:
    """At each probe point, what each policy's context lacks that full history's holds: how many parts and tokens,
    and, in full, the parts that hold a planted fact, the fact marked."""
    full = shown.get(BASELINE)
    if full is None:
        return ""
    out = ["<h2>What each policy is missing that full history holds, at each probe point</h2>"]
    for point in points:
        call = at_call.get(point.label)
        if not call or call > len(full):
            continue
        held = [part for message in full[call - 1] for part in message.parts]
        rows = []
        for report in reports:
            if report.policy == BASELINE or call > len(shown[report.policy]):
                continue
            texts = {part.text for message in shown[report.policy][call - 1] for part in message.parts}
            lacking = [part for part in held if part.text not in texts]
            with_facts = [(part, [fact for fact in facts if fact.text in part.text]) for part in lacking]
            with_facts = [(part, named) for part, named in with_facts if named]
            listed = "".join(f'<li><span class="tag dropped">{esc(part.kind)}</span> '
                             f'{marked(part.text, [fact.text for fact in named])}</li>' for part, named in with_facts)
            tokens = sum(counter.count(part.text) for part in lacking)
            rows.append(f'<tr><th>{esc(report.policy)}</th><td class="n">{len(lacking):,} parts, {tokens:,} tokens</td>'
                        f'<td>{f"<ul class=missing>{listed}</ul>" if listed else "no part that holds a planted fact"}'
                        '</td></tr>')
        out.append(f"<h3>{esc(point.label)}</h3>" + f'<table class="missing"><thead><tr><th>policy</th><th>lacks</th>'
                   f'<th>of them, the parts that hold a planted fact</th></tr></thead><tbody>{"".join(rows)}'
                   '</tbody></table>')
    return "\n".join(out)


def marked(text: str, found: list[str]) -> str:
    """`text` escaped, each of `found` in it marked, the parts between cut to their ends when long."""
    pattern = "|".join(re.escape(item) for item in sorted(set(found), key=len, reverse=True))
    pieces, at = [], 0
    for match in re.finditer(pattern, text):
        between = text[at:match.start()]
        pieces.append(esc(between if len(between) <= 160 else between[:60] + " … " + between[-60:]))
        pieces.append(f"<mark>{esc(match.group(0))}</mark>")
        at = match.end()
    tail = text[at:]
    pieces.append(esc(tail if len(tail) <= 160 else tail[:60] + " …"))
    return "".join(pieces)


def policy_calls(store: Store, probing: set[int], report: PolicyReplay, scale: int, counter: TokenCounter,
                 rendered: list[list[Message]]) -> str:
    """Every call of the replay under one policy, folded: a bar of its buckets, what changed since the call before
    (each part added, dropped, elided or summarised, as the run page lists them), the context itself."""
    rows, before = [], None
    for number, (messages, tokens) in enumerate(zip(rendered, report.calls), 1):
        probe = ' class="probe-point"' if number in probing else ""
        found = changes(before, messages, counter.count)
        rows.append(f'<tr{probe} id="{call_anchor(report.policy, number)}">'
                    f'<th>call {number}{" · probe" if probe else ""}</th>'
                    f'<td class="bar-cell">{bar(tokens, scale, small=True)}</td>'
                    f'<td><details class="diff"><summary>{change_line(found)}</summary>{change_list(store, found)}'
                    '</details></td>'

                    f'<td>{folded_context(store.context(messages), "context")}</td></tr>')
        before = messages
    return (f'<details class="policy-calls"><summary>{esc(report.policy)}: {plural(len(report.sizes), "call")}, peak '
            f'{report.peak:,} tokens</summary><table class="calls">{"".join(rows)}</table></details>')
