"""`--via batch|flex` with --probe: the provider's own engine for many calls, the price shown before anything is
sent (and a yes asked for, or --yes given), and a batch's ledger and progress. The probe itself is
experiments/probe.py's; the batch, experiments/batch.py's."""
import hashlib
import os
import shlex
import sys

from models import BACKENDS, backend_record
from models.prices import dollars, input_costs, price_of
from replies import STOP_SEQUENCES
from views.terminal import clean
from cli.output import UsageError


def check_via(args, model) -> None:
    """--via with a model whose service has that engine; one line naming those that have it otherwise."""
    if not args.via:
        return
    if args.via not in backend_record(model.backend).engines:
        having = [f"{name}:" for name, record in BACKENDS.items() if args.via in record.engines]
        raise UsageError(f"--via {args.via}: {model.backend}:{model.name} has no {args.via} engine; "
                         f"{' and '.join(having)} {'has' if len(having) == 1 else 'have'} one")
    if args.via == "flex":
        model.service_tier = "flex"  # https://platform.openai.com/docs/guides/flex-processing


def open_run(args, path: str, model, asked: list):
    """The calls of `asked` (each a list of messages) as one run through the engine --via names, a BatchRun or a
    FlexRun (experiments/batch.py), its ledger read back (or begun) at --ledger or beside `path`, named
    PATH.batch-RUN.jsonl or PATH.flex-RUN.jsonl, PATH without its extension."""
    from experiments.batch import BatchRun, FlexRun, service_for
    from experiments.ledger import LedgerError

    stem = os.path.splitext(path)[0]
    requests = [(messages, STOP_SEQUENCES) for messages in asked]
    where = lambda digest: args.ledger or f"{stem}.{args.via}-{digest[:12]}.jsonl"  # noqa: E731
    try:
        if args.via == "flex":
            return FlexRun(model, requests, where)
        return BatchRun(service_for(model), requests, where)
    except (LedgerError, ValueError) as problem:
        raise UsageError(str(problem)) from None
    except OSError as problem:
        raise UsageError(f"cannot use the ledger: {problem.strerror or problem}: {problem.filename} (--ledger FILE "
                         "names another)") from None


def price_before_sending(args, model, asked: list, counter, run=None) -> None:
    """The calls of `asked` (each a list of messages) still to send, their input tokens (counted here) and price at
    standard rates, at the engine's and with caching, on stderr; then UsageError unless sending may go on: above
    --max-cost, with no terminal to ask and no --yes, or with no yes typed."""
    places = run.unsent() if run is not None else range(len(asked))
    calls = [_priced_call(asked[n], counter) for n in places]
    tokens = sum(call[2] for call in calls)
    lines = [f"--via {args.via}: {len(calls):,} calls to send to {model.backend}:{model.name}, {tokens:,} input "
             f"tokens (counted here; the answers' tokens come on top)"]
    if run is not None:
        lines.append(f"  ledger {run.ledger.path}: {_before(run, len(asked))}"
                     + (f" ({run.ledger.warning})" if run.ledger.warning else ""))
    said, cost = _price(args.via, model.name, calls)
    print("\n".join([*lines, said]), file=sys.stderr)
    try:
        _may_send(args, cost, bool(calls))
    except UsageError:
        if run is not None:
            run.close()  # nothing sent: another run may take the ledger
        raise


def _before(run, calls: int) -> str:
    """What the ledger holds of the run's calls: sent and answered (a batch), or answered (flex)."""
    from experiments.batch import FlexRun

    ledger = run.ledger
    answered = sum(id in ledger.answers or id in ledger.replies for id in run.ids)
    if isinstance(run, FlexRun):  # each call is sent when it is asked
        return f"{answered:,} of {calls:,} calls answered before"
    sent = sum(ledger.ever_sent(id) for id in run.ids)
    return f"{sent:,} of {calls:,} calls sent before, {answered:,} answered"


def _price(via: str, name: str, calls: list[tuple[str, int, int]]) -> tuple[str, float | None]:
    """The line that prices the calls' input, and what --max-cost holds: the most it may cost at the engine's rates
    (caching may miss); None without a listed price."""
    price = price_of(name)
    share = getattr(price, via, None) if price else None
    if price is None or share is None:
        return f"  no listed {via} price for {name} in models/prices.json (or TINYREACT_PRICES)", None
    standard, cached = input_costs(price, calls)
    return (f"  {dollars(standard)} at standard rates, {dollars(standard * share)} at {via} rates ({share:g} of "
            f"standard), {dollars(cached * share)} at {via} rates with caching at best (prices read {price.read})",
            max(standard, cached) * share)


def _priced_call(messages, counter) -> tuple[str, int, int]:
    """(a key of the context before the question, its tokens, all the call's tokens)."""
    counts = [counter.count(message.text) for message in messages]
    key = hashlib.sha256("\x00".join(message.text for message in messages[:-1]).encode()).hexdigest()
    return key, sum(counts[:-1]), sum(counts)


def _may_send(args, cost: float | None, any_to_send: bool) -> None:
    if not any_to_send:
        return
    if args.max_cost is not None and cost is None:
        raise UsageError(f"--max-cost {args.max_cost:g}: the price cannot be checked without a listed price; not sent")
    if args.max_cost is not None and cost > args.max_cost:
        raise UsageError(f"--max-cost {args.max_cost:g}: sending could cost up to {dollars(cost)} (without caching); "
                         "not sent")
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise UsageError("not sent: there is no terminal to ask before paying; add --yes to send")
    try:
        typed = input("send? [y/N] ")
    except EOFError:
        typed = ""
    if typed.strip().lower() not in ("y", "yes"):
        raise UsageError("not sent")


def resume_line(args, program: str = "agent.py") -> str:
    """What to type to pick up a run stopped midway, a batch left running or flex calls not all asked: the same
    command."""
    said = "the replies that came are kept in the ledger; run the same command to ask only the rest" \
        if args.via == "flex" else "the batch keeps running at the service; run the same command to pick it up"
    return f"{said}: python {program} " + shlex.join(args.argv)


def say(text: str) -> None:
    print(f"note: {clean(text)}", file=sys.stderr)
