"""Forking a trace at a model call: the calls before it copied from the trace, their replies and their tools'
results as recorded (no model and no tool is called for them), and the loop going on live from it
(agent.TinyReAct.resume), under a policy, model, protocol or TTL of one's own, every later question of a saved chat
asked again in turn. Model calls are numbered by their context events, as the pages number them.

Unedited, and with a model that answers as before (a scripted model, or an embedded one, which decodes greedily),
a fork's events are its parent's, times aside, because everything the loop reads is in the trace. The command line
is `agent.py --from TRACE --fork N` (cli/fork.py).

    agent, result = fork(events, 2, model, tools, policy=make_policy("window:0"))
"""
from typing import Sequence

from agent import DEFAULT_TTL, TinyReAct
from experiments.live import LiveRun, ToolTape
from experiments.replay import replay
from policies import Policy, make_policy
from protocols import PROTOCOLS
from results import summarise, unreadable_replies
from settings import quoted
from tools import shipped_by_name
from traces import Trace


def fork(events: Sequence[dict], n: int, model, tools: list | None = None, policy: Policy | None = None,
         ttl: int | None = None, trace: Trace | None = None, **options):
    """The trace `events` forked at model call `n`: (the agent, the last question's Result). `tools`: by default
    the parent's, by name (ValueError naming any this TinyReAct lacks); `policy`, `ttl`: by default the parent's;
    `options` go to TinyReAct (protocol, counter...)."""
    plan = fork_plan(events, n)
    policy = policy or make_policy(plan["policy"])
    trace = trace if trace is not None else Trace()
    trace.copy(plan["copied"])
    agent = TinyReAct(model, tools if tools is not None else parent_tools(plan, policy), ttl=ttl or plan["ttl"],
                      policy=policy, trace=trace, **options)
    return agent, run(agent, plan)


def run(agent, plan: dict):
    """The fork's question from its call on, then each later question and reset; the last question's Result."""
    result = agent.resume(finish=plan["finish"])
    for kind, text, finish in plan["later"]:
        if kind == "reset":
            agent.reset()
        else:
            result = agent.query(text, finish)
    return result


def fork_plan(events: Sequence[dict], n: int) -> dict:
    """What a fork at call `n` copies and what it asks again: the events before the call (`copied`, less a
    last-answer request, which is made again), the policy, protocol and tools in force there, the TTL the parent
    shows, whether the question asked for a last answer (--finish), and the later questions (each with its own) and
    resets in order. ValueError for an `n` the trace does not have."""
    at, cut = _cut(events, n)
    instructions = next(event for event in reversed(events[:cut]) if event["type"] == "instructions")
    asked = max(index for index, event in enumerate(events[:cut]) if event["type"] == "question")
    finish = iter(_finishes(events, asked))
    now = next(finish)
    later = [(event["type"], event.get("text"), next(finish) if event["type"] == "question" else False)
             for event in events[cut:] if event["type"] in ("question", "reset")]
    return {"copied": list(events[:cut]), "policy": events[at].get("policy", "full"),
            "protocol": instructions.get("protocol", "text"), "tools": _tool_names(instructions),
            "ttl": _ttl(events), "finish": now, "later": later}


def in_force(plan: dict, n: int, policy: str | None, protocol: str | None) -> tuple[Policy, str]:
    """The policy and protocol a fork at call `n` asks again under: those given, else the ones the trace names
    there; ValueError, one line, for one the trace names that this TinyReAct does not have (a trace from a newer
    one, or edited) and nothing replaces."""
    made = make_policy(policy) if policy is not None else _made(plan["policy"])
    for kind, name, missing in (("policy", plan["policy"], made is None),
                                ("protocol", plan["protocol"], protocol is None and plan["protocol"] not in PROTOCOLS)):
        if missing:
            raise ValueError(f"--fork {n}: call {n} ran under the {kind} {quoted(name)}, which this TinyReAct does "
                             f"not have: name one with --{kind}")
    return made, protocol or plan["protocol"]


def _made(spec: str) -> Policy | None:
    """The policy `spec` names, or None when this TinyReAct has no such policy."""
    try:
        return make_policy(spec)
    except ValueError:
        return None


def _cut(events: list[dict], n: int) -> tuple[int, int]:
    """The index of call `n`'s context event, and where the copy ends: before it, and before the last-answer
    request it may answer (made again, live). ValueError for a call the trace does not have."""
    calls = [index for index, event in enumerate(events) if event["type"] == "context"]
    if not 1 <= n <= len(calls):
        raise ValueError(f"--fork {n}: the trace has {len(calls)} model calls, numbered 1 to {len(calls)}"
                         if calls else "--fork: the trace has no model call to fork at")
    cut = calls[n - 1]
    while events[cut - 1]["type"] == "finish":
        cut -= 1
    if not any(event["type"] == "question" for event in events[:cut]):
        raise ValueError(f"--fork {n}: no question comes before that call")
    return calls[n - 1], cut


def _finishes(events: list[dict], first: int) -> list[bool]:
    """For the question at `first` and each after it: whether it asked for a last answer at its TTL (--finish)."""
    found = []
    for event in events[first:]:
        if event["type"] == "question":
            found.append(False)
        elif event["type"] == "finish" and found:
            found[-1] = True
    return found


def _ttl(events: list[dict]) -> int:
    """The parent's TTL where a question shows it (it stopped at it: its steps), else a run's default."""
    steps, shown, finishing = 0, [], False
    for event in events:
        if event["type"] == "question":
            steps, finishing = 0, False
        elif event["type"] == "finish":
            finishing = True  # its reply is numbered past the TTL
        elif event["type"] == "reply" and not finishing:
            steps = max(steps, event["step"])
        elif event["type"] == "stop" and event.get("reason") == "ttl":
            shown.append(steps)
    return max(shown) if shown else DEFAULT_TTL


def _tool_names(instructions: dict) -> list[str]:
    """The tools the instructions list, in order: each tool's documentation begins unindented with its name."""
    return [line.split("(", 1)[0] for line in (instructions.get("tools") or "").splitlines()
            if line and not line[0].isspace() and "(" in line]


def parent_tools(plan: dict, policy: Policy | None) -> list:
    """The parent's tools by name, those of its policy (pinned's notes) and of `policy` aside: ValueError naming any
    this TinyReAct does not have. A parent's policy this TinyReAct lacks adds none it knows of."""
    policies = [made for made in (_made(plan["policy"]), policy) if made is not None]
    own = {tool.__name__ for made in policies for tool in made.tools(Trace())}
    known = shipped_by_name()
    wanted = [name for name in plan["tools"] if name not in own]
    missing = [name for name in wanted if name not in known]
    if missing:
        raise ValueError(f"the trace's tools {', '.join(missing)} are not among this TinyReAct's "
                         f"({', '.join(known)}): its calls could not be run again")
    return [known[name] for name in wanted]


def branches(events: Sequence[dict], n: int, variants: Sequence[tuple[str, object]], tools: list, price=None,
             trace_path=lambda label: None, counter=None, traces: list | None = None, **options):
    """The trace forked at call `n` once for each (policy spec, model) of `variants`, with the same tool results
    (the first branch to make a call runs the tool; the others are given its result): a LiveRun each, named by what
    differs between the branches (the policy, the model, or both), its numbers counted from call `n` on (the copied
    calls are the same in every branch), its cost with caching at `price`'s rule (by default none). Each branch's
    (header, events) is appended to `traces`."""
    tape, plan = ToolTape(), fork_plan(events, n)
    taped = [tape.wrap(tool) for tool in tools]
    made = [(make_policy(spec), model) for spec, model in variants]
    for policy, model in made:
        label = _label(made, policy, model)
        meta = {"policy": policy.name, "model": model.name, "backend": model.backend,
                "temperature": model.temperature, "fork": n}
        before, trace = tape.live_calls, Trace(trace_path(label), meta=meta)
        try:
            agent, result = fork(events, n, model, taped, policy=policy, trace=trace, counter=counter, **options)
        finally:
            trace.close()
        live = list(trace.events)[len(plan["copied"]):]
        counts = summarise(live)
        cost = None
        if price is not None:
            report = replay({}, list(trace.events), [policy.name], counter, facts=[], points=[])[0]
            cost = report.input_cost(price, True, from_call=n) if report.measured else None
        if traces is not None:
            traces.append((meta, list(trace.events)))
        yield LiveRun(label, result.answer, result.stop_reason.value, counts["steps"], counts["model_calls"],
                      counts["usage"].input_tokens, counts["usage"].output_tokens, counts["context"].peak,
                      round(result.seconds, 2), tape.live_calls - before, None,
                      counts["usage"].cached_input_tokens, cost, agent.protocol.name, unreadable_replies(live))


def _label(made: list, policy, model) -> str:
    """A branch's name: its policy when the branches differ in policy, its model when in model, else both."""
    policies, models = len({p.name for p, _ in made}) > 1, len({m.name for _, m in made}) > 1
    if policies != models:
        return policy.name if policies else model.name
    return f"{policy.name} · {model.name}"


def first_difference(traces: Sequence[tuple[dict, Sequence[dict]]]) -> int | None:
    """The first model call at which the branches' contexts differ (by the digest of what each call sent), or None
    when they never do."""
    sent = [[event.get("sent") for event in events if event["type"] == "context"] for _, events in traces]
    for number in range(max(map(len, sent), default=0)):
        if len({calls[number] if number < len(calls) else None for calls in sent}) > 1:
            return number + 1
    return None
