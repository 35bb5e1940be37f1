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


def open_batch(args, path: str, model, asked: list):
    """The calls of `asked` (each a list of messages) as one batch run, its ledger read back (or begun) at --ledger
    or beside `path`, named PATH.batch-RUN.jsonl, PATH without its extension."""
    from experiments.batch import BatchRun, service_for
    from experiments.ledger import LedgerError

    stem = os.path.splitext(path)[0]
    try:
        return BatchRun(service_for(model), [(messages, STOP_SEQUENCES) for messages in asked],
                        lambda digest: args.ledger or f"{stem}.batch-{digest[:12]}.jsonl")
    except (LedgerError, ValueError) as problem:
        raise UsageError(str(problem)) from None
    except OSError as problem:
        raise UsageError(f"cannot use the ledger: {problem.strerror or problem}: {problem.filename}") from None


def price_before_sending(args, model, asked: list, counter, batch=None) -> None:
    """The calls of `asked` (each a list of messages) still to send, their input tokens (counted here) and price at
    standard rates, at the engine's and with caching, on stderr; then UsageError unless sending may go on: above
    --max-cost, with no terminal to ask and no --yes, or with no yes typed."""
    places = batch.unsent() if batch is not None else range(len(asked))
    calls = [_priced_call(asked[n], counter) for n in places]
    tokens = sum(call[2] for call in calls)
    lines = [f"--via {args.via}: {len(calls):,} calls to send to {model.backend}:{model.name}, {tokens:,} input "
             f"tokens (counted here; the answers' tokens come on top)"]
    if batch is not None:
        sent = sum(batch.ledger.tries(id) > 0 for id in batch.ids)
        answered = sum(id in batch.ledger.answers for id in batch.ids)
        lines.append(f"  ledger {batch.ledger.path}: {sent:,} of {len(asked):,} calls sent before, {answered:,} "
                     "answered" + (f" ({batch.ledger.warning})" if batch.ledger.warning else ""))
    said, cost = _price(args.via, model.name, calls)
    print("\n".join([*lines, said]), file=sys.stderr)
    try:
        _may_send(args, cost, bool(calls))
    except UsageError:
        if batch is not None:
            batch.ledger.close()  # nothing sent: another run may take the ledger
        raise


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
    """What to type to pick up a batch left running: the same command."""
    return (f"the batch keeps running at the service; run the same command to pick it up: python {program} "
            + shlex.join(args.argv))


def say(text: str) -> None:
    print(f"note: {clean(text)}", file=sys.stderr)
