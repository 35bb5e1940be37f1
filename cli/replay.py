"""`agent.py --replay FILE`: a recorded session replayed under each policy, measured and checked, with its tables,
JSON, chart, CSV and page; with --probe, the planted facts asked of the model at each probe point."""
import sys
from dataclasses import dataclass, field

from models import OFFLINE_MODEL, Model, ModelConfigError, ModelError, parse_spec
from models.prices import price_of, prices
from policies import Policy
from policies.rendering import observations_cut_at
from tokens import local_counter
from views.terminal import clean
from cli.arguments import PRICED_REPLAY, comma_separated
from cli.loading import ModelWhenAsked, chosen_model, load_env_files, open_trace
from cli.sending import check_via, open_run, price_before_sending, resume_line, say
from cli.output import (EXIT_ANSWERED, EXIT_INTERRUPTED, EXIT_NO_ANSWER, EXIT_USAGE, UsageError, fail, print_json,
                        readable, write_output)


@dataclass
class Replaying:
    """What `--replay` has read and made so far, handed from one step to the next."""
    path: str
    header: dict
    events: list[dict]
    facts: list = field(default_factory=list)
    points: list = field(default_factory=list)
    model: Model | None = None
    summaries: object = None  # experiments.replay.Summaries: the summarising policies' summaries, cached beside it
    window: int | None = None  # the context window reports are checked against
    window_model: str = ""  # whose it is
    priced: list | None = None  # (a model's name, its list price) for each rule the input cost is given under
    reports: list = field(default_factory=list)
    answers: list | None = None  # with --probe
    scored: list | None = None  # with --probe --reader likelihood: experiments.likelihood.Scored
    stopped: BaseException | None = None  # what ended probing early: Ctrl-C, or the model failing

    @property
    def rows(self) -> list:
        """What --answers saves: every answer, or with the likelihood reader every score."""
        return (self.answers or []) if self.scored is None else self.scored


def replay_trace(args, policy: Policy, specs: list[str]) -> int:
    """`agent.py --replay FILE [--policies LIST] [--facts FILE] [--probe]`: tables (and a plot), or JSON, CSV, SVG."""
    recorded = open_trace(args.replay)
    with observations_cut_at(args.observation_cut):  # every context, fact state, page and probe under this cut
        return _replay_cut(args, specs, Replaying(args.replay, recorded.header, recorded.events))


def _replay_cut(args, specs: list[str], run: "Replaying") -> int:
    """The replay itself, under the observation cut in force."""
    from experiments.replay import replay

    run.facts, run.points = _facts_and_points(args, run)
    if args.probe and not any(event["type"] == "instructions" for event in run.events):
        return fail(f"{args.replay} has no instructions to probe with: it was cut short before its first model call")
    _replay_model(args, run)
    _check_reader(args, run)
    counter = local_counter()
    try:
        run.reports = replay(run.header, run.events, specs, counter, run.facts, run.points, run.summaries, run.window,
                             args.pace)
    except OSError as problem:
        return fail(f"cannot write the summaries: {problem.strerror or problem}: {run.summaries.path}")
    except ModelError as problem:  # writing a summary a summarising policy asks for
        print(f"error: {clean(problem)}", file=sys.stderr)
        return EXIT_USAGE if isinstance(problem, ModelConfigError) else EXIT_NO_ANSWER
    if args.probe:
        _probe(args, run, specs, counter)
    unwritten = _replay_outputs(args, run, counter)
    return _replay_exit(run, unwritten)


def _facts_and_points(args, run: Replaying) -> tuple[list, list]:
    """The planted facts and the probe points, from --facts or the trace's header, narrowed by --probe-facts and
    --probe-points; a point outside the session is one warning, a bad selection a UsageError."""
    from experiments.facts import load_facts, probe_points

    try:
        facts, declared = load_facts(run.header, args.facts)
        outside = []
        points = probe_points(declared, run.events, outside)
    except ValueError as problem:
        raise UsageError(str(problem)) from None
    except OSError as problem:
        raise UsageError(f"{problem.strerror}: {problem.filename}") from None
    for problem in outside:  # a trace cut short, or one whose run ended before the point: the rest still replays
        print(f"warning: {args.replay}: {problem}; that probe point is left out", file=sys.stderr)
    return _chosen_facts(args.probe_facts, facts), _chosen_points(args.probe_points, points, args.replay)


def _chosen_facts(listed: str | None, facts: list) -> list:
    """The facts --probe-facts names (all without it); a name that is no fact is a UsageError."""
    if not listed:
        return facts
    known = [fact.id for fact in facts]
    unknown = [name for name in comma_separated(listed) if name not in known]
    if unknown:
        raise UsageError(f"--probe-facts: no fact named {', '.join(unknown)}; the facts are {', '.join(known)}")
    return [fact for fact in facts if fact.id in comma_separated(listed)]


def _chosen_points(listed: str | None, points: list, path: str) -> list:
    """The probe points --probe-points numbers (all without it); none at all is a UsageError."""
    if not listed:
        return points
    try:
        wanted = set(map(int, comma_separated(listed)))
    except ValueError:
        raise UsageError(f"--probe-points takes numbers separated by commas, got {listed!r}") from None
    points = [point for point in points if point.number in wanted]
    if not points:
        raise UsageError(f"--probe-points: none of {listed} is a probe point of {path}")
    return points


def _replay_model(args, run: Replaying) -> None:
    """The model that probes (none when the replay needs none), the one that writes the summaries a summarising
    policy asks for (_summarizer), the summaries' cache beside the trace, and the context window reports are checked
    against."""
    from experiments.replay import Summaries, context_window

    if args.model or args.probe:
        load_env_files()
        try:
            run.model = chosen_model(args)
        except (ModelConfigError, ValueError) as problem:
            raise UsageError(str(problem)) from None
        check_via(args, run.model)
        if args.jobs and args.jobs > 1 and run.model.backend == "local":
            raise UsageError("--jobs runs calls at once against network models; "
                             "an embedded model answers one at a time")
    stem = args.replay[:-6] if args.replay.endswith(".jsonl") else args.replay
    run.summaries = Summaries(_summarizer(args, run), stem + ".summaries.json")
    run.window_model = run.model.name if run.model else parse_spec(OFFLINE_MODEL)[1]
    run.window = context_window(run.window_model)
    run.priced = _replay_price(args.prices_of, args.cache_ttl)


def _summarizer(args, run: Replaying) -> Model | None:
    """Who writes a missing summary: --summarizer's model, else --model's (as before --summarizer), else the model
    main() was given, else the embedded model; one named by a spec is loaded only when a summary is missing. None
    for --summarizer none: the cached summaries alone."""
    if args.summarizer and args.summarizer.strip().lower() == "none":
        return None
    if args.summarizer:
        load_env_files()
        return ModelWhenAsked(args.summarizer)
    return run.model or args.given_model or ModelWhenAsked(OFFLINE_MODEL)


def _replay_price(asked: str | None, cache_ttl: float | None = None) -> list | None:
    """[(a model, its list price)] for a replay's input cost with and without prompt caching: --prices-of's, each
    of which must be listed, the first the one the tables follow; by default PRICED_REPLAY's (None if a price file
    replaced the table without it). `cache_ttl` (--cache-ttl): every cache keeps a prefix that long."""
    names = list(dict.fromkeys(name.strip() for name in (asked or PRICED_REPLAY).split(",")))
    try:
        priced = [(name, _listed(name, cache_ttl)) for name in names]
    except ModelConfigError as problem:
        raise UsageError(str(problem)) from None
    unlisted = [name for name, price in priced if price is None]
    if unlisted and asked:
        raise UsageError(_unlisted(unlisted))
    return None if unlisted else priced


def _listed(name: str, cache_ttl: float | None):
    """A model's list price (None when not listed), its cache kept `cache_ttl` seconds when that is given."""
    price = price_of(name)
    return price and price.expiring(cache_ttl)


def _unlisted(names: list[str]) -> str:
    named = ", ".join(name or "an empty name" for name in names)
    return (f"--prices-of: no listed price for {named} in models/prices.json (or TINYREACT_PRICES): "
            f"listed are {', '.join(prices())}")


def _probe(args, run: Replaying, specs: list[str], counter) -> None:
    """Ask the probes; the answers so far are kept when Ctrl-C or a failing model stops it (run.stopped says which)."""
    from experiments.probe import probe
    from experiments.replay import paced

    if args.reader == "likelihood":
        return _score(args, run, specs, counter)
    run.answers = []
    if args.via:
        return _probe_via(args, run, specs, counter)
    _going(run, "probing…", lambda update: probe(
        paced(run.events, args.pace) if args.pace else run.events,  # the clock cold:T reads
        specs, run.model, run.facts, run.points, phrasings=args.phrasings, repeat=args.repeat or 1,
        jobs=args.jobs or 1, summaries=run.summaries, counter=counter, progress=update, answers=run.answers))


def _probe_via(args, run: Replaying, specs: list[str], counter) -> None:
    """The probes through the provider's engine (--via): planned, priced, and sent only with a yes."""
    from experiments.probe import planned
    from experiments.replay import paced

    try:
        plan = planned(paced(run.events, args.pace) if args.pace else run.events, specs, run.facts, run.points,
                       args.phrasings, args.repeat or 1, run.summaries, counter)
    except ValueError as problem:
        raise UsageError(str(problem)) from None
    asked_each = [messages for _, messages, _ in plan.tasks]
    sending = open_run(args, args.replay, run.model, asked_each)
    price_before_sending(args, run.model, asked_each, counter, sending)
    try:
        _going(run, "probing…", lambda update: _asked_through(sending, run, plan, args.jobs or 1, update))
    finally:
        sending.close()  # a batch's is closed already; closing again does nothing
    if isinstance(run.stopped, KeyboardInterrupt) or (args.via == "flex" and run.stopped is not None):
        print(resume_line(args), file=sys.stderr)


def _asked_through(sending, run: Replaying, plan, jobs: int, update) -> None:
    """A batch's replies read back into the answers; or flex calls asked one by one, `jobs` at a time, as without
    --via, through the run, which keeps each reply in the ledger as it comes."""
    from experiments.batch import FlexRun
    from experiments.probe import asked

    if isinstance(sending, FlexRun):
        asked(sending, plan, jobs, update, run.answers)
    else:
        asked(run.model, plan, jobs, update, run.answers, lambda requests: sending.replies(update, say))


def _going(run: Replaying, label: str, ask) -> None:
    """`ask(progress)` under a spinner; when Ctrl-C or a failing model stops it, run.stopped says which, and what
    came before is kept (the tables say how far it got)."""
    from views.display import spinner  # rich: only when showing a run (see cli/__init__.py)

    try:
        with spinner(label) as update:
            ask(update)
    except (KeyboardInterrupt, ModelError) as stopped:
        run.stopped = stopped


def _check_reader(args, run: Replaying) -> None:
    """--reader likelihood needs a model that can score text it did not write, and facts whose gold is not empty."""
    from experiments.likelihood import cannot_score, empty_gold

    if not (args.probe and args.reader == "likelihood"):
        return
    if cannot_score(run.model):
        raise UsageError(cannot_score(run.model))
    if args.repeat:
        raise UsageError("--repeat has nothing to repeat with --reader likelihood: a score is the same every time")
    if empty_gold(run.facts):
        raise UsageError(f"{empty_gold(run.facts)} (give the fact a gold answer, or leave it out with --probe-facts)")


def _score(args, run: Replaying, specs: list[str], counter) -> None:
    """Score the gold answers and distractors; the scores so far are kept when Ctrl-C or the model stops it."""
    from experiments.likelihood import score
    from experiments.replay import paced

    run.scored = []
    _going(run, "scoring…", lambda update: score(
        paced(run.events, args.pace) if args.pace else run.events, specs, run.model, run.facts, run.points,
        phrasings=args.phrasings, summaries=run.summaries, counter=counter, progress=update, scored=run.scored))


def _replay_outputs(args, run: Replaying, counter) -> list[str]:
    """The tables (or the JSON), and the files asked for; returns the files that could not be written."""
    from experiments.facts import cut_on_record
    from experiments.replay import probe_calls
    from views.display import LiveDisplay, replay_tables  # rich: only when showing a run (see cli/__init__.py)
    from views.pages import replay_page
    from views.reports import answers_csv, replay_csv, replay_json, svg_plot

    title, setup, likelihood = readable(args.replay), _setup(args, run, counter), _lifts(run)
    outputs = [(args.plot, lambda: svg_plot(run.reports, f"Context size per call: {title}", counter.name, run.points,
                                            probe_calls(run.points, run.events), run.answers, run.priced)),
               (args.csv, lambda: replay_csv(run.reports, setup)),
               (args.answers, lambda: answers_csv(run.rows))]
    unwritten = [path for path, text in outputs if path and not write_output(path, text)]  # the tables still follow
    model_name = run.model.name if run.model else None
    if args.json:
        print_json({**replay_json(run.reports, counter.name, run.facts, run.points, run.answers, model_name, run.window,
                                  run.priced, setup, run.scored, likelihood),
                    "interrupted": isinstance(run.stopped, KeyboardInterrupt)})
    else:
        replay_tables(LiveDisplay().console, run.reports, run.facts, run.points, run.answers, model_name, args.replay,
                      counter.name, (run.window, run.window_model) if run.window else None, cut_on_record(run.events),
                      run.priced, setup, likelihood)
    page = lambda: replay_page(run.header, run.events, run.reports, counter, run.facts, run.points,  # noqa: E731
                               run.answers, run.summaries, model_name, title=f"Replay of {title}", priced=run.priced,
                               setup=setup, likelihood=likelihood)
    if args.html and not write_output(args.html, page):
        unwritten.append(args.html)
    return unwritten


def _lifts(run: Replaying) -> dict | None:
    """The likelihood reader's lifts by condition, when it ran."""
    from experiments.likelihood import lifts

    return None if run.scored is None else lifts(run.scored)


def _setup(args, run: Replaying, counter) -> dict:
    """What made the numbers, for every output to carry (experiments/provenance.py)."""
    from experiments.provenance import provenance

    return provenance(args.replay, args.facts, run.priced, _probed(args, run), counter.name, args.pace)


def _probed(args, run: Replaying) -> dict | None:
    """The probe's settings, when it ran."""
    if not (args.probe and run.model):
        return None
    probed = {"model": run.model.name, "reader": args.reader or "answer", "phrasings": args.phrasings or "all",
              "repeats": args.repeat or 1, "jobs": args.jobs or 1}
    if probed["reader"] == "likelihood":  # a score is the same every time, one at a time
        del probed["repeats"], probed["jobs"]
    if args.via:  # the provider's engine asked: the same answers, another price
        probed["via"] = args.via
    return probed


def _replay_exit(run: Replaying, unwritten: list[str]) -> int:
    if isinstance(run.stopped, KeyboardInterrupt):
        print("interrupted: the probe tables hold the answers asked so far", file=sys.stderr)
        return EXIT_INTERRUPTED
    if run.stopped:
        print(f"error: probing stopped, the tables hold the answers asked before: {clean(run.stopped)}",
              file=sys.stderr)
        return EXIT_USAGE if isinstance(run.stopped, ModelConfigError) else EXIT_NO_ANSWER
    if unwritten:
        return EXIT_USAGE
    return EXIT_ANSWERED if all(report.violations == 0 for report in run.reports) else EXIT_NO_ANSWER
