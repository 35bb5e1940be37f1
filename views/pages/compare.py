"""The comparison page: runs of one question under several policies, side by side, call by call."""
from typing import Mapping, Sequence

from results import call_seconds, outcome, priced, summarise
from experiments.facts import matches
from models import Message
from models.prices import dollars
from tokens import TokenCounter, local_counter
from views.pages.calls import REBUILT, call_event, change_line, change_list
from views.reading import Call, Change, Contexts, changes, counter_name, seconds, timeline
from views.pages.parts import Store, bar, esc, folded_context, legend, page, table


def compare_page(traces: Sequence[tuple[dict, Sequence[dict]]], counter: TokenCounter | None = None,
                 expect: str | None = None, title: str | None = None,
                 sent: Mapping[str, list[Message]] | None = None, note: str | None = None) -> str:
    """Runs of one question under several policies (one trace each, as `--compare --trace` writes them), side by
    side: a totals table, then one column per run with the calls aligned by number, each with its context as a
    small bar (the full text folded), the reply and the observation. With `expect`, each answer is marked right
    or wrong as --compare marks it. `sent`, what the runs' calls sent (their Traces' `sent`, joined): shown as it was,
    where a saved trace's calls are rebuilt. `note`: a line said under the title (a fork's branches: where they
    part)."""
    counter = counter or local_counter()
    store = Store(counter)
    runs = [run_of(header, events) for header, events in traces]
    several = len({header.get("model") for _, header, _, _ in runs}) > 1  # branches on several models
    names = [f"{name} · {header.get('model')}" if several else name for name, header, *_ in runs]
    labels = [name if names.count(name) == 1 else f"{name} (run {names[:i + 1].count(name)})"
              for i, name in enumerate(names)]
    asked = next((e["text"] for _, _, events, _ in runs for e in events if e["type"] == "question"), "")
    protocols = {header.get("protocol", "text") for _, header, _, _ in runs}
    title = title or f"{'Protocols' if len(protocols) > 1 else 'Policies'} compared: {asked}"
    models = ", ".join(dict.fromkeys(str(header.get("model")) for _, header, _, _ in runs if header.get("model")))
    first_events = next((events for _, _, events, _ in runs), [])
    body = [f"<h1>{esc(title)}</h1>",
            f'<p class="meta">{len(runs)} runs · model: {esc(models or "not recorded")}'
            + (f" · expected answer: {esc(expect)}" if expect else "") + "</p>"
            + (f'<p class="meta">{esc(note)}</p>' if note else ""),
            totals_table(runs, labels, expect), legend(counter_name(first_events, counter)),
            side_by_side(store, runs, labels, sent)]
    return page(title, body, store)


def run_of(header: dict, events: Sequence[dict]) -> tuple[str, dict, list[dict], list[Call]]:
    """A trace as (its name, header, events, calls): the policy its header names, else its first context event's,
    and the protocol its header names when it is not the text one."""
    policies = [e["policy"] for e in events if e["type"] == "context"]
    name = header.get("policy") or (policies[0] if policies else "?")
    name += f" · {header['protocol']}" if header.get("protocol", "text") != "text" else ""
    return name, header, list(events), [item for item in timeline(events) if isinstance(item, Call)]


def totals_table(runs: list, labels: list[str], expect: str | None) -> str:
    rows = [totals_row(label, header, events, expect) for label, (_, header, events, _) in zip(labels, runs)]
    columns = ["policy", "answer", *(["correct"] if expect else []), "stop", "steps", "calls", "tokens in",
               "tokens out", "cost at list price", "peak context", "seconds"]
    return table(columns, rows, "totals", 4 if expect else 3)


def totals_row(label: str, header: dict, events: list[dict], expect: str | None) -> list[str]:
    """One run's answer (with `expect`, marked right or wrong), stop reason, steps, calls, tokens, cost, peak
    context and time."""
    answer, reason = outcome(events)
    counts = summarise(events)
    row = [esc(label), f"<b>{esc(answer)}</b>" if answer is not None else "<i>no answer</i>"]
    if expect:
        right = matches(answer, expect)
        row.append(f'<span class="{"right" if right else "wrong"}">{"✓ right" if right else "✗ wrong"}</span>')
    cost = priced(events, str(header.get("model", "")), str(header.get("backend", ""))) if header.get("model") else None
    cached = counts["usage"].cached_input_tokens
    row += [f'<span class="stop {reason}">{esc(reason)}</span>', str(counts["steps"]), str(counts["model_calls"]),
            f'{counts["usage"].input_tokens:,}' + (f" ({cached:,} cached)" if cached else ""),
            f'{counts["usage"].output_tokens:,}', dollars(cost.dollars) if cost else "–",
            f'{counts["context"].peak:,}', f"{seconds(events):.1f}"]
    return row


def side_by_side(store: Store, runs: list, labels: list[str], sent: Mapping[str, list[Message]] | None = None) -> str:
    """One column per run, one row per call number: what each policy showed, what changed since its call before,
    and what the model did with it."""
    scale = max((sum(call.context["tokens"].values()) for *_, calls in runs for call in calls if call.context),
                default=0)
    rendered = []
    for name, header, events, calls in runs:
        contexts, before, column = Contexts(events, sent), None, []
        for call in calls:
            messages = contexts.at(call)
            found = changes(before, messages, store.counter.count) if messages is not None else None
            column.append((call, messages, found, call.index in contexts.differs))
            before = messages if messages is not None else before
        rendered.append(column)
    head = "".join(f"<th>{esc(label)}</th>" for label in labels)
    rows = []
    for number in range(max((len(calls) for calls in rendered), default=0)):
        cells = [call_cell(store, *calls[number], scale) if number < len(calls) else '<td class="ended"></td>'
                 for calls in rendered]
        rows.append(f'<tr><th class="call-number">call {number + 1}</th>{"".join(cells)}</tr>')
    return (f'<table class="side-by-side"><thead><tr><th></th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def call_cell(store: Store, call: Call, messages: list[Message] | None, found: list[Change] | None, rebuilt: bool,
              scale: int) -> str:
    """One run's call in its column: its context as a small bar and folded, what changed, what the model did and
    how long the call took."""
    cell = []
    if call.context:
        tokens = call.context["tokens"]
        cell.append(bar(tokens, scale, small=True))
    if rebuilt:
        cell.append(f'<p class="rebuilt">The context is {REBUILT}.</p>')
    if messages is not None:
        cell.append(folded_context(store.context(messages), "context"))
        cell.append(f'<details class="diff"><summary>{change_line(found)}</summary>{change_list(store, found)}'
                    '</details>')

    cell += [call_event(store, event) for event in call.shown() if event["type"] not in ("usage", "reply")]
    took = [call_seconds(call.context, event) for event in call.events if event["type"] == "usage"]
    if took and took[0] is not None:
        cell.append(f'<p class="usage">{took[0]:.2f} s</p>')
    return f'<td>{"".join(cell)}</td>'
