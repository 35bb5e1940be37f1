"""`agent.py --from TRACE --fork N`: what if the model had been shown something else at call N? The calls before
model call N (numbered by their context events, as the pages number them) come from the saved trace, their replies
and their tools' results copied into a new trace as recorded: no model and no tool is called for them. From call N
on the run is live, under the policy, model, protocol or TTL given (by default the parent's), and every later
question of a saved chat is asked again in turn. The new trace's header names its parent (the SHA-256 of its file)
and N; the parent is only read.

Unedited, and with a model that answers as before (a scripted model, or an embedded one, which decodes greedily),
the fork's events are the parent's, times aside: the loop goes on from the copied events as it went on then
(agent.TinyReAct.resume), because everything it reads is in the trace."""
from experiments.fork import branches, first_difference, fork_plan, in_force, parent_tools, run
from experiments.provenance import digest
from files import read_input
from settings import quoted
from models import BACKENDS, COUNTED_LOCALLY, ModelReply
from models.prices import price_of
from policies import Policy
from protocols import make_protocol
from tokens import local_counter
from traces import TraceFile
from cli.arguments import PRICED_REPLAY, call_number, comma_separated
from cli.ask import _agent_shown, _header, _interrupted, _write_run_page, outcome  # a run's view
from cli.compare import compare_trace_path
from cli.loading import model_for_a_run, open_trace
from cli.otel import exporting
from cli.output import EXIT_ANSWERED, EXIT_INTERRUPTED, EXIT_NO_ANSWER, UsageError, print_json, write_output

MAX_INSTRUCTIONS_BYTES = 1_000_000  # an --instructions file: a prompt, not a book


def fork(args, policy: Policy, specs: list[str]) -> int:
    """Fork the trace --from names at call --fork: copied before it, live from it, shown as a run is."""
    parent = open_trace(args.source)
    plan = _planned(parent, args.fork)
    plan["parent"] = digest(args.source)
    plan["copied"] += _edits(args, plan)
    models = comma_separated(args.model or "")
    if args.policies or len(models) > 1:
        return _branches(args, parent, plan, specs, models)
    policy, protocol = _in_force(args, plan, args.policy)  # --policy's (made again), else the parent's
    args.protocol = [protocol]
    args.ttl = args.ttl or plan["ttl"]
    with exporting(args) as export:  # --otel: the live questions' spans
        model = _model(args, parent)
        if args.set_reply is not None:
            model = Answered(model, args.set_reply)
        meta = {**_header(model), "parent": plan["parent"], "fork": args.fork}
        agent, display = _agent_shown(args, model, policy, _tools(plan, policy), export, plan["copied"], meta)
        try:
            result = run(agent, plan)
        except KeyboardInterrupt:
            _interrupted(agent, display, args)
            return EXIT_INTERRUPTED
        finally:
            display.close()
            agent.trace.close()
            if args.html:
                _write_run_page(args.html, model, agent.trace, agent.counter)
    return outcome(agent, display, args, result, {"fork": {"parent": plan["parent"], "call": args.fork,
                                                            "copied_events": len(plan["copied"]),
                                                            "policy": agent.policy.name}})


def _edits(args, plan: dict) -> list[dict]:
    """The copied events edited as --set-observation asks (in place), and an edit event for each edit asked for:
    the observation, the reply of call N (--set-reply), the instructions (--instructions, made by the protocol)."""
    edits = [_observation_edited(args.set_observation, plan, args.fork)] if args.set_observation else []
    if args.set_reply is not None:
        edits.append({"type": "edit", "what": "reply", "call": args.fork, "text": args.set_reply})
    if args.instructions:
        try:  # within bounds: a FIFO would block, /dev/zero never end
            data = read_input(args.instructions, MAX_INSTRUCTIONS_BYTES, "instructions").decode()
            args.instructions_text = data.replace("\r\n", "\n").replace("\r", "\n")  # as text mode reads them
        except OSError as problem:
            raise UsageError(f"--instructions {args.instructions}: {problem.strerror or problem}") from None
        except UnicodeDecodeError:
            raise UsageError(f"--instructions {args.instructions}: not text in UTF-8") from None
        except ValueError as problem:  # not a regular file, or too large
            raise UsageError(f"--instructions {problem}") from None
        edits.append({"type": "edit", "what": "instructions", "call": args.fork, "text": args.instructions_text})
    return edits


def _observation_edited(given: list[str], plan: dict, fork_at: int) -> dict:
    """--set-observation K TEXT: the first tool result of call K (before the fork) made TEXT in the copied events;
    the edit event saying so."""
    number, text = given
    call, copied = call_number(number), plan["copied"]
    if call is None:
        raise UsageError(f"--set-observation takes a call's number, then the text, got {quoted(number)}")
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
        if self.text is None:
            return self.model.generate(messages, stop, **options)
        text, self.text = self.text, None
        return ModelReply(text, usage_source=COUNTED_LOCALLY)


def _model(args, parent: TraceFile):
    """--model, else the parent's model where its header names one that can be loaded."""
    header = parent.header
    if not args.model and args.given_model is None:
        if not isinstance(header.get("backend"), str) or header["backend"] not in BACKENDS:
            raise UsageError(f"{args.source} was made by {header.get('model') or 'an unnamed model'} "
                             f"({header.get('backend') or 'no backend'}), which cannot be loaded: give --model")
        args.model = f"{header['backend']}:{header['model']}"
    return model_for_a_run(args)


def _planned(parent: TraceFile, n: int) -> dict:
    try:
        return fork_plan(parent.events, n)
    except ValueError as problem:
        raise UsageError(str(problem)) from None


def _in_force(args, plan: dict, policy: str | None) -> tuple[Policy, str]:
    """experiments.fork.in_force for the command line: a policy or protocol the trace names that this TinyReAct
    lacks, with none given in its place, is a UsageError."""
    try:
        return in_force(plan, args.fork, policy, (args.protocol or [None])[0])
    except ValueError as problem:
        raise UsageError(str(problem)) from None


def _tools(plan: dict, policy: Policy | None) -> list:
    try:
        return parent_tools(plan, policy)
    except ValueError as problem:
        raise UsageError(str(problem)) from None


def _branches(args, parent: TraceFile, plan: dict, specs: list[str], models: list[str]) -> int:
    """--fork N --policies A,B (or --model A,B): one fork a policy (or a model), the same tool results, one table
    (or --json) counted from call N on, with the cost with caching at the replay's price (PRICED_REPLAY); a trace file
    a branch beside --trace, and the branches side by side on one --html page."""
    from experiments.live import summarise_runs
    from views.pages import compare_page

    args.protocol = [_in_force(args, plan, args.policy or (specs[0] if args.policies else None))[1]]
    counter, traces, runs = local_counter(), [], []
    variants = _variants(args, parent, plan, specs, models)
    tools = _tools(plan, None)
    try:
        for run in branches(parent.events, args.fork, variants, tools, price_of(PRICED_REPLAY),
                            lambda label: compare_trace_path(args.trace, label, 0, 1), counter, traces,
                            protocol=make_protocol(args.protocol[0])):
            runs.append(run)
    except OSError as problem:
        raise UsageError(f"cannot write the trace file: {problem.strerror}: {problem.filename}") from None
    parted = first_difference(traces)
    said = _parted(args.fork, parted)
    names = ", ".join(dict.fromkeys(model.name for _, model in variants))
    _branches_shown(args, plan, names, counter, summarise_runs(runs), parted, said)
    if args.html:
        write_output(args.html, lambda: compare_page(traces, counter, title=f"Forks of {args.source} at call "
                                                                             f"{args.fork}", note=said))
    return EXIT_ANSWERED if all(run.answer is not None for run in runs) else EXIT_NO_ANSWER


def _variants(args, parent: TraceFile, plan: dict, specs: list[str], models: list[str]) -> list[tuple]:
    """The branches as (policy spec, model): one a policy of --policies with the model, or one a model of --model
    A,B under --policy (by default the parent's); each model loaded once."""
    refused = _refused(args, models)
    if refused:
        raise UsageError(refused)
    if len(models) <= 1:
        model = _model(args, parent)
        return [(spec, model) for spec in specs]
    loaded = []
    for spec in models:
        args.model = spec
        loaded.append(model_for_a_run(args))
    return [(args.policy or plan["policy"], model) for model in loaded]


def _refused(args, models: list[str]) -> str | None:
    """Why branches cannot be forked as asked, in one line; None when they can."""
    twice = sorted({spec for spec in models if models.count(spec) > 1})
    if any((args.set_observation, args.set_reply is not None, args.instructions)):
        return "branches are forked unedited: edits go with a single --fork"
    if len(models) > 1 and args.policies:
        return "branches differ in one thing: --policies A,B or --model A,B, not both"
    if len(models) > 1 and args.given_model is not None:
        return "--model A,B loads its models: it does not go with the model main() was given"
    return f"--model names {', '.join(twice)} twice: a branch a model" if twice else None


def _parted(n: int, parted: int | None) -> str:
    where = f"first differ at call {parted}" if parted else "never differ"
    return f"the calls before {n} are the parent's, the same in every branch; the branches' contexts {where}"


def _branches_shown(args, plan: dict, model: str, counter, rows: list[dict], parted: int | None, said: str) -> None:
    """The branches' table, or their JSON; `model`: the models' names."""
    from views.display import LiveDisplay, live_table

    if args.json:
        print_json({"parent": plan["parent"], "call": args.fork, "model": model, "counter": counter.name,
                    "priced_as": PRICED_REPLAY, "first_difference": parted, "rows": rows})
        return
    live_table(LiveDisplay().console, rows, model, None, counter.name)
    print(f"Counted from call {args.fork} on: {said}; cost: input with caching at {PRICED_REPLAY}'s list price "
          "and rule.")
