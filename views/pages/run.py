"""The run page: a run, or a whole chat, call by call: what the model was shown at each call (a bar stacked by
bucket, the full context folded), what changed since the call before, and what the model did with it.
"""
import json
import re
from typing import Mapping, Sequence

from results import call_seconds, outcome, priced, summarise
from models import Message, backend_record
from models.prices import dollars
from tokens import TokenCounter, local_counter
from views.pages.calls import REBUILT, call_event, change_line, change_list
from views.reading import Call, Contexts, changes, counter_name, questions, seconds, timeline
from views.pages.parts import Store, bar, bucket_counts, esc, folded, folded_context, legend, page, plural, table


def run_page(header: dict, events: Sequence[dict], counter: TokenCounter | None = None,
             title: str | None = None, sent: Mapping[str, list[Message]] | None = None) -> str:
    """A run, or a whole chat: each question with its answer and counts at the top, then every call in order, with
    what the model was shown (a stacked bar, the full text folded), what changed since the call before, the reply,
    the tool run and its observation, retries and errors. `header` is the trace file's first line ({} for none);
    `sent`, the live run's Trace.sent: what each call sent, shown as it was (a saved trace's calls are rebuilt, and
    said so where that is not what was sent)."""
    counter = counter or local_counter()
    store = Store(counter, str(header.get("backend", "")))
    asked = [event["text"] for event in events if event["type"] == "question"]
    kind = "Chat" if len(asked) > 1 else "Run"
    title = title or header.get("title") or (f"{kind}: {asked[0]}" + (f" and {len(asked) - 1} more" if len(asked) > 1
                                                                     else "") if asked else kind)
    items = timeline(events)
    calls = [item for item in items if isinstance(item, Call)]
    scale = max((sum(call.context["tokens"].values()) for call in calls if call.context), default=0)
    body = [f"<h1>{esc(title)}</h1>", trace_facts(header, events), outcome_table(events, header),
            legend(counter_name(events, counter))]
    contexts, before, policy = Contexts(events, sent), None, None
    for item in items:
        if isinstance(item, Call):
            messages = contexts.at(item)
            if item.context and policy and item.context["policy"] != policy:
                body.append(f'<p class="between policy-change">The policy changes from {esc(policy)} to '
                            f'{esc(item.context["policy"])}</p>')
            if item.index in contexts.differs:
                body.append(f'<p class="between rebuilt">Call {item.number}: the context below is {REBUILT}.</p>')
            body.append(call_section(store, item, messages, before, scale, counter))
            before = messages if messages is not None else before
            policy = item.context["policy"] if item.context else policy
        else:
            body.append(between_calls(store, item))
    return page(title, body, store)


def trace_facts(header: dict, events: Sequence[dict]) -> str:
    facts = [("model", header.get("model")), ("policy", header.get("policy")),
             ("policies used", ", ".join(dict.fromkeys(e["policy"] for e in events if e["type"] == "context")) or None),
             ("recorded", header.get("created")), ("note", header.get("recorded"))]
    return '<p class="meta">' + " · ".join(f"{name}: {esc(value)}" for name, value in facts if value) + "</p>"


def outcome_table(events: Sequence[dict], header: dict | None = None) -> str:
    """Each question with its answer, stop reason, steps, calls, tokens (the cached part said), cost at list price
    where the model has one, and time; a total row for a chat."""
    header = header or {}
    model, backend = str(header.get("model", "")), str(header.get("backend", ""))

    def tokens_and_cost(part: Sequence[dict]) -> list[str]:
        usage = summarise(part)["usage"]
        cached = f" ({usage.cached_input_tokens:,} cached)" if usage.cached_input_tokens else ""
        cost = priced(part, model, backend) if model else None
        return [f'{usage.input_tokens:,}{cached} / {usage.output_tokens:,}',
                dollars(cost.dollars) if cost else "–"]

    rows = []
    for number, (start, end) in enumerate(questions(events), 1):
        part = events[start:end]
        answer, reason = outcome(part)
        counts = summarise(part)
        rows.append([str(number), esc(events[start]["text"]),
                     f'<b>{esc(answer)}</b>' if answer is not None else '<i>no answer</i>',
                     f'<span class="stop {reason}">{esc(reason)}</span>', str(counts["steps"]),
                     str(counts["model_calls"])
                     + (f' ({counts["summary_calls"]} summary)' if counts["summary_calls"] else ""),
                     *tokens_and_cost(part), f"{seconds(part):.1f} s"])
    if len(rows) > 1:  # the time spent answering: a chat's time between questions is the user's, not the agent's
        counts = summarise(events)
        answering = sum(seconds(events[start:end]) for start, end in questions(events))
        rows.append(["", "<b>all questions</b>", "", "", str(counts["steps"]), str(counts["model_calls"]),
                     *tokens_and_cost(events), f"{answering:.1f} s answering"])
    free = backend_record(backend).free
    words = "tokens in / out (counted, nothing billed)" if free else "tokens billed in / out"
    return table(["#", "question", "answer", "stop", "steps", "calls", words, "cost at list price",
                  "time"], rows, "outcome", 4)


def call_section(store: Store, call: Call, messages: list[Message] | None, before: list[Message] | None,
                 scale: int, counter: TokenCounter) -> str:
    reply = call.first("reply")
    # A step is an action and its observation, as the terminal counts them; a reply with the answer is not one.
    step = (f" · step {reply['step']}" if call.first("action") else " · the answer" if call.first("answer")
            else f" · reply {reply['step']}") if reply else ""
    out = [f'<section class="call" id="call-{call.number}">']
    if call.context:
        tokens = call.context["tokens"]
        out.append(f'<h3>Call {call.number}{step} · policy {esc(call.context["policy"])} · '
                   f'{sum(tokens.values()):,} tokens shown</h3>')
        out.append(bar(tokens, scale))
        out.append(f'<p class="counts">{bucket_counts(tokens)}</p>')
    else:
        out.append(f"<h3>Call {call.number}{step}</h3>")
    if messages is not None:
        shown = sum(len(message.parts) for message in messages)
        out.append(folded_context(store.context(messages), "What the model was shown: "
                                  f"{plural(len(messages), 'message')}, {plural(shown, 'part')}"))
        found = changes(before, messages, counter.count)
        label = "Changed since the call before" if before is not None else "What the first call added"
        out.append(f'<div class="diff"><h4>{label}: {change_line(found)}</h4>{change_list(store, found)}</div>')
    elif call.context:
        out.append('<p class="warning">only its counts are shown: its context cannot be rebuilt from these events '
                   '(a policy this version does not have, or events that begin after the instructions)</p>')
    took = {id(event): call_seconds(call.context, event) for event in call.events if event["type"] == "usage"}
    out += [call_event(store, event, took.get(id(event))) for event in call.shown()]
    out.append("</section>")
    return "\n".join(part for part in out if part)


def between_calls(store: Store, event: dict) -> str:
    kind = event["type"]
    if kind == "question":
        return f'<h2 class="question">Question: {esc(event["text"])}</h2>'
    if kind == "reset":
        return ('<h2 class="reset">A new conversation: the trace keeps the old one, the policies look only past '
                'here</h2>')
    if kind == "instructions":
        tools = len(re.findall(r"^\w+\(", event.get("tools", ""), re.M))  # one line per tool starts `name(`
        label = f"Instructions: {len(event['text']):,} characters{f', {tools} tools' if tools else ''}"
        shown = folded(store, event["text"], label)
        if event.get("schemas"):  # the native protocol: the tools go beside the instructions, as schemas
            schemas = json.dumps(event["schemas"], indent=1, ensure_ascii=False)
            shown += folded(store, schemas, f"Tools, sent beside the messages as {len(event['schemas'])} tool schemas "
                                            "(native protocol)")
        return f'<div class="between">{shown}</div>'
    if kind == "finish":
        return ('<p class="between finish">The TTL is reached: the program asks for a last answer: '
                f'<q>{esc(event["text"])}</q></p>')
    if kind == "summary":
        label = (f"Summary written by the model for policy {esc(event.get('policy', ''))}, shown from now on in "
                 "place of the steps it covers")

        return '<div class="between summary">' + folded(store, event["text"], label, "summary") + "</div>"
    if kind == "usage":
        return (f'<p class="between usage">a summary call: billed {event["input_tokens"]:,} tokens in, '
                f'{event["output_tokens"]:,} out</p>')
    return call_event(store, event)
