"""The options as argparse reads them: each value checked as it is read, one line for a usage error, and the
lists of policies an option names. Which options go together is the table of modes (cli/modes.py)."""
import argparse
import functools
import sys

from models import OFFLINE_MODEL
from settings import quoted
from policies import POLICY_HELP, make_policy
from cli.output import EXIT_USAGE

DEFAULT_POLICIES = "full,window:2,user-only:4,elide:2,pinned,compact:8000"
PRICED_REPLAY = "gemini-3.8-flash"  # what answers gemini-flash-latest, the default Gemini model, as of 2026-12


class Parser(argparse.ArgumentParser):
    def error(self, message: str):
        """A usage error is one line, not the whole usage text."""
        print(f"error: {message} (see --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    args = _parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as typed: a batch left running says it
    return args


@functools.cache  # built once a process: argparse reads with it and changes nothing in it
def _parser() -> Parser:
    parser = Parser(
        prog="agent.py", description="Ask a question; a ReAct agent reasons, uses tools and answers. "
                                     "With no question on a terminal, or with --chat, it opens a conversation.",
        epilog="Environment (also read from ./.env and the .env beside agent.py, never from a folder above; the real "
               "environment wins): TINYREACT_MODEL; GEMINI_API_KEY (or GOOGLE_API_KEY), GEMINI_MODEL, "
               "GEMINI_THINKING (none|minimal|low|medium|high|<budget>), GEMINI_TEMPERATURE, "
               "GEMINI_MAX_OUTPUT_TOKENS (8192), GOOGLE_GEMINI_BASE_URL; OPENAI_API_KEY, OPENAI_BASE_URL; "
               "OLLAMA_HOST (http://localhost:11434); LLAMACPP_BASE_URL (http://localhost:8080/v1); "
               "TINYREACT_CALL_DEADLINE (seconds for a whole model call, retries included: 120); "
               "TINYREACT_BATCH_POLL (seconds between polls of a --via batch: 30); "
               "TINYREACT_CACHE_DIR (~/.cache/tinyreact); WIKIPEDIA_API_URL, OPEN_METEO_URL; NO_COLOR; with --otel, "
               "OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME. "
               "Exit codes: 0 answered, 1 no answer, 2 usage or configuration error, 74 stdout not writable, "
               "130 interrupted.")
    parser.add_argument("question", nargs="?", help="the question to answer")
    parser.add_argument("--model", type=_given, metavar="SPEC",
                        help="gemini:NAME (or a bare gemini-… name), openai:NAME, ollama:NAME, llamacpp:NAME, or "
                             "local:NAME for an embedded model (default: $TINYREACT_MODEL, else $GEMINI_MODEL, else "
                             "gemini-flash-latest with a key, the embedded model without)")
    parser.add_argument("--models", action="store_true",
                        help="list the models that can run here, and why others cannot")
    parser.add_argument("--verify-cache", action="store_true",
                        help="check every unpacked embedded model against the checksums written when it was unpacked")
    parser.add_argument("--no-stream", action="store_true",
                        help="show each reply when it is complete, not as it is written "
                             "(replies stream only to a terminal)")
    parser.add_argument("--ttl", type=_positive_int, help="at most this many model calls a question (default: 8)")
    parser.add_argument("--policy", type=_given, metavar="NAME",
                        help=f"context policy, what the model sees each call: {POLICY_HELP} (default: full)")
    parser.add_argument("--protocol", type=_protocols, metavar="text|native|text,native",
                        help="how tools are offered and calls read: text (Thought/Action/Answer written by the model, "
                             "the default) or native (the service's own function calling: tool schemas and "
                             "structured calls; Gemini, openai, ollama, llamacpp and the embedded Qwen); "
                             "text,native runs the question under both and prints one table")
    parser.add_argument("--chat", action="store_true", help="a conversation: each line you type is a question")
    parser.add_argument("--mcp", type=_given, action="append", metavar="COMMAND|URL",
                        help="also offer the tools of an MCP server: a command to run (over stdio, quoted as one "
                             "argument) or an http(s):// URL (Streamable HTTP); repeatable; default "
                             "$TINYREACT_MCP, several separated by ';'")
    parser.add_argument("--confirm", action="store_true",
                        help="ask on the terminal before every tool call: y runs it, n declines it, e edits its "
                             "arguments, a allows that tool for the session (without it, only MCP tools that may be "
                             "destructive ask: those not marked read-only; with no terminal, a call that would ask is "
                             "declined)")
    parser.add_argument("--yes", action="store_true",
                        help="run every tool call without asking, also those of MCP tools that may be destructive "
                             "(or TINYREACT_YES=1); with --via, send the calls without asking")
    parser.add_argument("--tools", action="store_true",
                        help="list every tool a run would offer, with where each comes from, and exit")
    parser.add_argument("--trace", type=_given, metavar="FILE",
                        help="write every event to FILE as JSON Lines, as it happens; "
                             "with --compare, one file per run, named FILE.POLICY.jsonl")
    parser.add_argument("--json", action="store_true", help="print one JSON object with the answer, counts and trace")
    parser.add_argument("--show-prompt", action="store_true", help="print the instruction prompt and exit")
    parser.add_argument("--show-context", nargs="?", const="changes", type=_context_choice, metavar="full|changes",
                        help="before every model call, print what the model is sent, part by part, with sizes: "
                             "after the first call only what changed since the previous one (changes, the default), "
                             "or every part of every call (full)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the answer")
    parser.add_argument("--finish", action="store_true",
                        help="when the TTL runs out, make one more call asking for the best answer so far")
    group = parser.add_argument_group("comparing policies")
    group.add_argument("--compare", type=_given, metavar="LIST",
                       help="run the question once per policy, e.g. full,window:2,user-only:4")
    group.add_argument("--expect", type=_given, metavar="TEXT",
                       help="with --compare: mark answers containing TEXT correct")
    group.add_argument("--repeat", type=_positive_int, metavar="N",
                       help="with --compare: N runs per policy (default: 1)")
    group.add_argument("--replay", type=_given, metavar="FILE",
                       help="replay a recorded session (a --trace file) under each policy")
    group.add_argument("--policies", type=_given, metavar="LIST",
                       help=f"with --replay: the policies to measure (default: {DEFAULT_POLICIES}); with --fork: "
                            "one fork each")
    group.add_argument("--probe", action="store_true", help="with --replay: ask the probe questions with the model")
    group.add_argument("--plot", type=_given, metavar="FILE.svg",
                       help="with --replay: also save the context-size chart as SVG")
    group.add_argument("--csv", type=_given, metavar="FILE",
                       help="with --replay: also save per-call context sizes and buckets as CSV")
    group.add_argument("--prices-of", type=_given, metavar="MODEL[,MODEL...]", dest="prices_of",
                       help="with --replay: what each policy's input would cost at this model's list price, with and "
                            "without prompt caching, by its caching rule; several models, several rules, the first "
                            f"the one --json's input_cost follows (default: {PRICED_REPLAY}; see models/prices.json)")
    group.add_argument("--cache-ttl", type=_cache_ttl, metavar="SECONDS|none", dest="cache_ttl",
                       help="with --replay: every prompt cache keeps a prefix SECONDS after its last use, whatever "
                            "its price row says (none: caches never expire, the costs as counted before they did)")
    group.add_argument("--pace", type=_pace, metavar="QUESTION[,STEP]",
                       help="with --replay: price the calls as made by a person keeping this pace, QUESTION seconds "
                            "before each question and STEP before each later call (default: the trace's own times)")
    group.add_argument("--observation-cut", type=_characters, metavar="N", dest="observation_cut",
                       help="with --replay: characters of each observation shown (default: 2000, as in a run); facts "
                            "lost to the cut are counted apart from those a policy loses")
    group.add_argument("--summarizer", type=_given, metavar="SPEC",
                       help="with --replay: the model that writes the summaries a summarising policy asks for "
                            "(compact:T, anthropic-compact, codex, ...), each cached beside the trace by a digest of "
                            "what it summarises, so that a second replay calls no model (default: --model's, else "
                            f"the embedded {OFFLINE_MODEL}, loaded only when a summary is missing; none: the cached "
                            "summaries only, a policy whose summaries are missing not measured)")
    group.add_argument("--facts", type=_given, metavar="FILE",
                       help="with --replay: the planted facts, their probes and probe points "
                            "(a facts file, see conversations/README.md); overrides the trace's")
    group.add_argument("--probe-facts", type=_given, metavar="IDS",
                       help="with --replay: only these facts, e.g. booking,sintra")
    group.add_argument("--probe-points", type=_given, metavar="LIST",
                       help="with --replay: only these probe points, by the number "
                            "in their label (turns, or calls for a trace header's)")
    group.add_argument("--reader", choices=["answer", "likelihood"],
                       help="with --probe: how the model reads each context: answer (the default) asks it to write "
                            "an answer and scores that; likelihood (an embedded model) scores the gold answer's "
                            "log-probability against closed book's, nothing generated")
    group.add_argument("--phrasings", type=_positive_int, metavar="N",
                       help="with --probe: ask only the first N phrasings")
    group.add_argument("--jobs", type=_positive_int, metavar="N",
                       help="with --probe: N calls at once, for network models (default: 1)")
    group.add_argument("--answers", type=_given, metavar="FILE.csv",
                       help="with --probe: save every answer and its verdict as CSV")
    group.add_argument("--via", choices=["batch", "flex"],
                       help="with --probe: ask through the provider's own engine, at about half price: batch (the "
                            "OpenAI Batch API or Gemini's batch mode: one job, answered within a day or two, resumed "
                            "from its ledger) or flex (OpenAI's flex tier: slower calls, retried when it is busy, "
                            "each reply kept in a ledger); the price is shown before anything is sent, and sending "
                            "needs a yes on the terminal or --yes")
    group.add_argument("--ledger", type=_given, metavar="FILE.jsonl",
                       help="with --via: the ledger of what was sent and what came back, read back when the run "
                            "starts again (default: TRACE.batch-RUN.jsonl or TRACE.flex-RUN.jsonl beside the trace)")
    group.add_argument("--max-cost", type=dollars_given, metavar="USD", dest="max_cost",
                       help="with --via: send nothing if the calls' input could cost more than USD at the "
                            "engine's rates (the answers' tokens are not priced)")
    group.add_argument("--record", type=_given, metavar="SCRIPT.json",
                       help="turn a scripted conversation into a trace (--trace FILE, "
                            "default SCRIPT.jsonl), through the real loop")
    group = parser.add_argument_group("seeing inside")
    group.add_argument("--html", type=_given, metavar="FILE.html",
                       help="also write one self-contained HTML page of the run, the chat, the comparison "
                            "or the replay")
    group.add_argument("--otel", action="store_true",
                       help="send the run as OpenTelemetry spans (one trace a question: the agent, each model call, "
                            "each tool call) to the OTLP/HTTP endpoint $OTEL_EXPORTER_OTLP_ENDPOINT names: Phoenix, "
                            "Langfuse, a collector; message content only with "
                            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (see docs/telemetry.md)")
    group.add_argument("--from", type=_given, dest="source", metavar="TRACE.jsonl",
                       help="with --html: write the page of a saved trace (a run, a chat, or a --compare run's file); "
                            "with --otel: send its spans, at the times it recorded")
    group.add_argument("--resume", type=_given, metavar="TRACE.jsonl",
                       help="go on from a saved conversation (a run's or a chat's --trace): the policy renders from "
                            "all of it, and the new --trace holds it and what follows")
    group.add_argument("--fork", type=_positive_int, metavar="N",
                       help="with --from: run the saved trace again from its model call N, the calls before it "
                            "copied from the trace (no model or tool called for them) and live from N on, under "
                            "--policy, --model, --protocol or --ttl (by default the trace's), into --trace; with "
                            "--policies A,B (or --model A,B), one fork a policy (or a model), side by side")
    group.add_argument("--set-observation", nargs=2, metavar=("K", "TEXT"), type=str, dest="set_observation",
                       help="with --fork: call K's tool result (K before the fork) is TEXT instead, recorded as "
                            "an edit")
    group.add_argument("--set-reply", type=str, metavar="TEXT", dest="set_reply",
                       help="with --fork: the reply of the call forked at is TEXT, recorded as an edit; the model "
                            "answers from the next call on")
    group.add_argument("--instructions", type=_given, metavar="FILE",
                       help="with --fork: the instructions from the fork on are FILE's text ($tools: the tools' "
                            "documentation), recorded as an edit")
    parser.set_defaults(given_model=None)  # not an option: the model main() may be given (cli/__init__.py)
    return parser


def _given(text: str) -> str:
    """An option's value, refused when empty: `--trace "$FILE"` with FILE unset must not turn the trace off."""
    if not text.strip():
        raise argparse.ArgumentTypeError("needs a value, got an empty one")
    return text


def _protocols(text: str) -> list[str]:
    """--protocol's value: one protocol, or several to compare, each once."""
    names = comma_separated(text)
    unknown = [name for name in names if name not in ("text", "native")]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"takes text, native or text,native, got {quoted(text)}")
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"names a protocol twice: {quoted(text)}")
    return names


def _characters(text: str) -> int:
    return _whole_number(text, 100, 100_000, " characters", " (a recorded observation holds at most 100,000)")


def _cache_ttl(text: str) -> float:
    """--cache-ttl's value: seconds from 0 to a week, or none (math.inf: never expires)."""
    from models.prices import MAX_CACHE_SECONDS, NEVER
    if text.strip().lower() == "none":
        return NEVER
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= MAX_CACHE_SECONDS:
        raise argparse.ArgumentTypeError(f"takes seconds from 0 to {MAX_CACHE_SECONDS:,} (a week), or none, "
                                         f"got {quoted(text)}")
    return seconds


def _pace(text: str):
    from experiments.replay import parse_pace
    try:
        return parse_pace(text)
    except ValueError as problem:
        raise argparse.ArgumentTypeError(str(problem).removeprefix("--pace ")) from None


def dollars_given(text: str) -> float:
    """--max-cost's value: US dollars, 0 or more (NaN, which every comparison lets through, refused): also the bench
    scripts'."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1_000_000:
        raise argparse.ArgumentTypeError(f"takes US dollars from 0 to 1,000,000, got {quoted(text)}")
    return value


def _context_choice(text: str) -> str:
    if text not in ("changes", "full"):
        raise argparse.ArgumentTypeError(f"takes full or changes, got {quoted(text)} "
                                         "(write the question before --show-context)")
    return text


def _positive_int(text: str) -> int:
    return _whole_number(text, 1, 1000)


def call_number(text: str) -> int | None:
    """A model call's number as a person typed it (--set-observation K, /fork N); None for anything else, "²" and a
    number of thousands of digits included (str.isdigit takes the one, int refuses the other)."""
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 9 else None


def _whole_number(text: str, low: int, high: int, unit: str = "", why: str = "") -> int:
    """An option's whole number from `low` to `high` (of `unit`, for the messages; `why` says why the bound)."""
    try:
        value = int(text)
    except ValueError:
        what = f"a whole number{unit and ' of' + unit}"
        raise argparse.ArgumentTypeError(f"expected {what}, got {quoted(text)}") from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"must be between {low} and {high}{unit}{why}, got {value}")
    return value


def policy_specs(text: str) -> list[str]:
    """The policies an option lists, each checked: a ValueError for none, for one that is no policy, or for one
    listed twice."""
    specs = comma_separated(text)
    if not specs:
        raise ValueError("no policies given: list them separated by commas, as in full,window:2,user-only:4")
    names = [make_policy(spec).name for spec in specs]  # raises a clear ValueError for a bad one
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"policy {', '.join(twice)} is listed twice: use --repeat to run a policy more than once")
    return specs


def comma_separated(text: str) -> list[str]:
    """The items of a comma-separated option, stripped, the empty ones left out."""
    return [item.strip() for item in text.split(",") if item.strip()]
