"""`agent.py --from TRACE --fork N`: what if the model had been shown something else at call N? The calls before
model call N (numbered by their context events, as the pages number them) come from the saved trace, their replies
and their tools' results copied into a new trace as recorded: no model and no tool is called for them. From call N
on the run is live, under the policy, model, protocol or TTL given (by default the parent's), and every later
question of a saved chat is asked again in turn. The new trace's header names its parent (the SHA-256 of its file)
and N; the parent is only read.

Unedited, and with a model that answers as before (a scripted model, or an embedded one, which decodes greedily),
the fork's events are the parent's, times aside: the loop goes on from the copied events as it went on then
(agent.TinyReAct.resume), because everything it reads is in the trace."""
import hashlib

from policies import Policy, make_policy
from tools import shipped_by_name
from traces import TraceFile
from cli.loading import open_trace
from views.terminal import clean
from cli.output import EXIT_INTERRUPTED, UsageError, print_json

DEFAULT_TTL = 8  # a run's (cli/ask.py); a parent that stopped at its TTL shows its own


def fork(args, policy: Policy, specs: list[str]) -> int:
    """Fork the trace --from names at call --fork: copied before it, live from it, shown as a run is."""
    from cli.ask import _agent_shown, _header, _interrupted, _write_run_page  # a run's view
    from cli.otel import exporting

    parent = open_trace(args.source)
    plan = fork_plan(parent, args.fork)
    plan["parent"] = _digest(args.source)
    plan["copied"] += _edits(args, plan)
    policy = make_policy(plan["policy"]) if args.policy is None else policy
    args.protocol = args.protocol or [plan["protocol"]]
    args.ttl = args.ttl or plan["ttl"]
    with exporting(args) as export:  # --otel: the live questions' spans
        model = _model(args, parent)
        if args.set_reply is not None:
            model = Answered(model, args.set_reply)
        meta = {**_header(model), "parent": plan["parent"], "fork": args.fork}
        agent, display = _agent_shown(args, model, policy, _tools(plan, policy), export, plan["copied"], meta)
        try:
            result = _run(agent, plan)
        except KeyboardInterrupt:
            _interrupted(agent, display, args)
            return EXIT_INTERRUPTED
        finally:
            display.close()
            agent.trace.close()
            if args.html:
                _write_run_page(args.html, model, agent.trace, agent.counter)
    return _outcome(args, agent, display, result, plan)


def _edits(args, plan: dict) -> list[dict]:
    """The copied events edited as --set-observation asks (in place), and an edit event for each edit asked for:
    the observation, the reply of call N (--set-reply), the instructions (--instructions, made by the protocol)."""
    edits = [_observation_edited(args.set_observation, plan, args.fork)] if args.set_observation else []
    if args.set_reply is not None:
        edits.append({"type": "edit", "what": "reply", "call": args.fork, "text": args.set_reply})
    if args.instructions:
        try:
            with open(args.instructions, encoding="utf-8") as file:
                args.instructions_text = file.read()
        except (OSError, UnicodeDecodeError) as problem:
            raise UsageError(f"--instructions {args.instructions}: {getattr(problem, 'strerror', None) or problem}")
        edits.append({"type": "edit", "what": "instructions", "call": args.fork, "text": args.instructions_text})
    return edits


def _observation_edited(given: list[str], plan: dict, fork_at: int) -> dict:
    """--set-observation K TEXT: the first tool result of call K (before the fork) made TEXT in the copied events;
    the edit event saying so."""
    number, text = given
    if not number.strip().isdigit():
        raise UsageError(f"--set-observation takes a call's number, then the text, got {number!r}")
    call, copied = int(number), plan["copied"]
    contexts = [index for index, event in enumerate(copied) if event["type"] == "context"]
    if not 1 <= call <= len(contexts):
        raise UsageError(f"--set-observation {call}: only calls 1 to {len(contexts)} come before the fork at "
                         f"call {fork_at}; a later call's result is the live run's")
    end = contexts[call] if call < len(contexts) else len(copied)
    found = next((index for index in range(contexts[call - 1], end) if copied[index]["type"] == "observation"), None)
    if found is None:
        raise UsageError(f"--set-observation {call}: call {call} ran no tool, so it has no result to edit")
    copied[found] = {**copied[found], "text": text}
    return {"type": "edit", "what": "observation", "call": call, "text": text}


class Answered:
    """A model whose first reply is given (--set-reply), counted here; the model itself answers the rest."""

    def __init__(self, model, text: str):
        self.model, self.text = model, text

    def __getattr__(self, name):
        return getattr(self.model, name)

    def generate(self, messages, stop, **options):
        from models import COUNTED_LOCALLY, ModelReply

        if self.text is None:
            return self.model.generate(messages, stop, **options)
        text, self.text = self.text, None
        return ModelReply(text, usage_source=COUNTED_LOCALLY)


def _run(agent, plan: dict):
    """The fork's question from its call on, then each later question and reset; the last question's Result."""
    result = agent.resume(finish=plan["finish"])
    for kind, text, finish in plan["later"]:
        if kind == "reset":
            agent.reset()
        else:
            result = agent.query(text, finish)
    return result


def _outcome(args, agent, display, result, plan: dict) -> int:
    """The last question's outcome, printed as a run's is, and the exit code."""
    from cli.ask import _exit_code

    if args.json:
        print_json({**result.to_dict(), "fork": {"parent": plan["parent"], "call": args.fork,
                                                  "copied_events": len(plan["copied"]), "policy": agent.policy.name},
                    "trace": list(agent.trace.events)})
    elif args.quiet:
        if result.answer is not None:
            print(clean(result.answer))
    else:
        display.summary(result)
    return _exit_code(result)


def fork_plan(parent: TraceFile, n: int) -> dict:
    """What a fork at call `n` copies and what it asks again: the events before the call (`copied`, less a
    last-answer request, which is made again), the policy, protocol and tools in force there, the TTL the parent
    shows, whether the question asked for a last answer (--finish), and the later questions (each with its own) and
    resets in order. UsageError for an `n` the trace does not have."""
    events = parent.events
    at, cut = _cut(events, n)
    instructions = next(event for event in reversed(events[:cut]) if event["type"] == "instructions")
    asked = max(index for index, event in enumerate(events[:cut]) if event["type"] == "question")
    finish = iter(_finishes(events, asked))
    now = next(finish)
    later = [(event["type"], event.get("text"), next(finish) if event["type"] == "question" else False)
             for event in events[cut:] if event["type"] in ("question", "reset")]
    return {"copied": events[:cut], "policy": events[at].get("policy", "full"),
            "protocol": instructions.get("protocol", "text"), "tools": _tool_names(instructions),
            "ttl": _ttl(events), "finish": now, "later": later}


def _cut(events: list[dict], n: int) -> tuple[int, int]:
    """The index of call `n`'s context event, and where the copy ends: before it, and before the last-answer
    request it may answer (made again, live). UsageError for a call the trace does not have."""
    calls = [index for index, event in enumerate(events) if event["type"] == "context"]
    if not 1 <= n <= len(calls):
        raise UsageError(f"--fork {n}: the trace has {len(calls)} model calls, numbered 1 to {len(calls)}"
                         if calls else "--fork: the trace has no model call to fork at")
    cut = calls[n - 1]
    while events[cut - 1]["type"] == "finish":
        cut -= 1
    if not any(event["type"] == "question" for event in events[:cut]):
        raise UsageError(f"--fork {n}: no question comes before that call")
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
    """The parent's TTL where a question shows it (it stopped at it: its steps), else the default."""
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


def _tools(plan: dict, policy: Policy) -> list:
    """The parent's tools by name, those of its policy (pinned's notes) aside: UsageError naming any this
    TinyReAct does not have."""
    from traces import Trace

    own = {tool.__name__ for spec in {plan["policy"], policy.name} for tool in make_policy(spec).tools(Trace())}
    known = shipped_by_name()
    wanted = [name for name in plan["tools"] if name not in own]
    missing = [name for name in wanted if name not in known]
    if missing:
        raise UsageError(f"the trace's tools {', '.join(missing)} are not among this TinyReAct's "
                         f"({', '.join(known)}): its calls could not be run again")
    return [known[name] for name in wanted]


def _model(args, parent: TraceFile):
    """--model, else the parent's model where its header names one that can be loaded."""
    from cli.loading import model_for_a_run
    from models import BACKENDS

    header = parent.header
    if not args.model and args.given_model is None:
        if header.get("backend") not in BACKENDS:
            raise UsageError(f"{args.source} was made by {header.get('model') or 'an unnamed model'} "
                             f"({header.get('backend') or 'no backend'}), which cannot be loaded: give --model")
        args.model = f"{header['backend']}:{header['model']}"
    return model_for_a_run(args)


def _digest(path: str) -> str:
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()
