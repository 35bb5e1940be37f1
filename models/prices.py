"""What a run cost at list price: the dated price table (models/prices.json), and the cost of a run's usage.

A cost is shown only where the table has a price for the model asked for (an alias, a name ending in `latest`, is
priced as the model the reply says it came from; a retired name has no row, so no cost). An embedded
model costs nothing. For any other model no cost is shown: a guess would be worse than none. TINYREACT_PRICES
names a JSON file of the same shape as prices.json whose rows replace or add to the shipped ones, for prices
that changed or models the table lacks.
"""
import json
import math
import os
from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache
from pathlib import Path

from models import ModelConfigError, backend_record
from files import read_input

PRICES = Path(__file__).with_name("prices.json")
PRICES_VARIABLE = "TINYREACT_PRICES"
FIELDS = ("input", "cached_input", "output")
# The caching rule's fields a row may give: the price of a token written to the cache (absent: the input price, as
# for Gemini's and the older OpenAI models' implicit caches, which bill no write), and the shortest prefix the service
# caches (absent: DEFAULT_MIN_CACHE_TOKENS, said as assumed wherever a table names the rule).
CACHE_FIELDS = ("cache_write", "min_cache_tokens", "cache_ttl", "cache_max_age")
DEFAULT_MIN_CACHE_TOKENS = 1024
# What a call sent through a provider's own engine pays, as a share of the row's prices (--via): batch (a Batch API)
# and flex (OpenAI's flex tier), each with the page it comes from in engine_source.
ENGINE_FIELDS = ("batch", "flex")
# How long a cached prefix lives: cache_ttl seconds after its last use (each read refreshes it), and at most
# cache_max_age seconds after it was written, whatever reads it (absent: no cap but cache_ttl). A row that gives no
# lifetime is assumed to keep its cache DEFAULT_CACHE_TTL seconds, the shortest any provider documents (Anthropic's
# default), and every table that names the rule says so. NEVER (--cache-ttl none) keeps every prefix for ever: the
# costs as they were counted before caches expired.
DEFAULT_CACHE_TTL = 300
NEVER = math.inf
MAX_CACHE_SECONDS = 7 * 24 * 3600  # a week: the longest documented lifetime is a day (OpenAI's extended retention)
MAX_FILE_BYTES = 1_000_000  # a price table of thousands of models is a few hundred kilobytes
# Dollars per million tokens: the dearest listed price is some hundreds; past this a figure is a typo, and a run's
# cost (tokens times price) could overflow to infinity.
MAX_DOLLARS = 100_000
MAX_MIN_CACHE_TOKENS = 10_000_000  # longer than any context window


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens, and where the figures come from; the caching rule: what a token written to the
    cache costs, and the shortest prefix cached."""
    input: float
    cached_input: float
    output: float
    read: str  # the day the price was read at its source
    source: str
    cache_write: float | None = None  # None: the input price (no write is billed)
    min_cache_tokens: int | None = None  # None: not given by the row, DEFAULT_MIN_CACHE_TOKENS assumed
    until: str = ""  # the last day of a price the source says will change
    cache_ttl: float | None = None  # None: not given by the row, DEFAULT_CACHE_TTL assumed; NEVER: never expires
    cache_max_age: float | None = None  # None: no cap but cache_ttl
    batch: float | None = None  # the share of these prices a call sent in a batch pays (0.5: half); None: not listed
    flex: float | None = None  # the share a call of the flex tier pays; None: not listed

    @property
    def lifetime(self) -> float:
        """Seconds a cached prefix lives after its last use."""
        return DEFAULT_CACHE_TTL if self.cache_ttl is None else self.cache_ttl

    @property
    def longest(self) -> float:
        """Seconds a cached prefix lives after it was written, however often it is read."""
        return NEVER if self.cache_max_age is None else self.cache_max_age

    def expiring(self, seconds: float | None) -> "Price":
        """The same price with its cache kept `seconds` after its last use and no other cap (--cache-ttl); with
        None, as its row has it."""
        return self if seconds is None else replace(self, cache_ttl=seconds, cache_max_age=None)

    @property
    def write(self) -> float:
        return self.input if self.cache_write is None else self.cache_write

    @property
    def minimum(self) -> int:
        return DEFAULT_MIN_CACHE_TOKENS if self.min_cache_tokens is None else self.min_cache_tokens

    def rule(self) -> str:
        """The caching rule in words, as every table names it."""
        minimum = f"{self.minimum:,}" + (" (assumed: the price row gives none)" if self.min_cache_tokens is None
                                           else "")
        rest = (f"written to the cache at ${self.write:g}" if self.write != self.input
                else f"at the input price, ${self.input:g} (no write is billed)")
        until = f"; the price holds until {self.until}" if self.until else ""
        return (f"a repeated prefix of {minimum} tokens or more is read at ${self.cached_input:g} a million tokens, "
                f"the rest {rest}; {self.kept()}{until}")

    def kept(self) -> str:
        """How long the cache keeps a prefix, in words."""
        if self.lifetime == NEVER:
            return "the cache never expires"
        assumed = " (assumed: the price row gives no lifetime)" if self.cache_ttl is None else ""
        capped = (f", {duration(self.longest)} after it was written at most" if self.longest < NEVER and
                  self.longest != self.lifetime else "")
        if self.longest == self.lifetime:
            return f"the cache keeps a prefix {duration(self.lifetime)} after it was written{assumed}"
        return f"the cache keeps a prefix {duration(self.lifetime)} after its last use{capped}{assumed}"


def duration(seconds: float) -> str:
    """90 seconds, 5 minutes, 1 hour, 1.5 hours, 24 hours."""
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds >= size:
            amount = seconds / size
            return f"{amount:g} {unit}" + ("" if amount == 1 else "s")
    return f"{seconds:g} second" + ("" if seconds == 1 else "s")


@dataclass(frozen=True)
class Cost:
    dollars: float
    priced_as: str  # the model whose price was used
    read: str  # the day that price was read
    source: str

    def to_dict(self) -> dict:
        return {"usd": round(self.dollars, 10), "priced_as": self.priced_as, "prices_read": self.read,
                "source": self.source}


def dollars(amount: float) -> str:
    """$0.000788, $0.0318, $1.24, $12.35: three significant figures below $10, cents above."""
    return f"${amount:,.2f}" if amount >= 10 else f"${amount:.3g}" if amount else "$0"


def price_of(model: str, table: dict | None = None) -> Price | None:
    """The list price of a model (`models/` and `-NNN` version suffixes are matched too); None when not listed."""
    table = table if table is not None else prices()
    name = model.removeprefix("models/")
    return table.get(name) or next((price for listed, price in table.items() if name.startswith(listed + "-0")), None)


def input_costs(price: Price, calls: list[tuple[str, int, int]]) -> tuple[float, float]:
    """What the input of `calls` costs at `price`'s standard rates, and at best with prompt caching, each call given
    as (a key of its prefix, the prefix's tokens, all its tokens): under the caching rule, a prefix already sent, at
    least the rule's minimum long, is read at the cached price, and a new one as long is written at the write price.
    At best: it assumes every cache lives until its prefix is sent again."""
    seen, standard, cached = set(), 0.0, 0.0
    for key, prefix, tokens in calls:
        standard += tokens * price.input
        if prefix >= price.minimum and key in seen:
            cached += prefix * price.cached_input + (tokens - prefix) * price.input
        else:
            cached += tokens * (price.write if prefix >= price.minimum else price.input)
        seen.add(key)
    return standard / 1_000_000, cached / 1_000_000


def cost_of(usage: list[tuple[str, int, int, int]], backend: str) -> Cost | None:
    """The cost of calls, each (the model that answered, input tokens, of them cached, output tokens), by the price's
    caching rule: cached tokens at the cached price, the rest of a call at least the rule's minimum long at the write
    price; None when a model of them has no listed price. An embedded model's calls, and those to your own server,
    cost 0."""
    free = backend_record(backend).free
    if free:
        return Cost(0.0, free, "", "nothing is billed")
    try:
        table = prices()
    except ModelConfigError:  # a TINYREACT_PRICES file that cannot be read: the command line says so up front
        return None
    total, priced = 0.0, None
    for model, input_tokens, cached, output_tokens in usage:
        price = price_of(model, table)
        if price is None:
            return None
        cached = min(max(cached, 0), input_tokens)
        # the rest of a prompt long enough to be cached was written to the cache: at the write price where the
        # provider bills writes (the replay's rule, experiments/replay.py)
        rest = price.write if input_tokens >= price.minimum else price.input
        total += ((input_tokens - cached) * rest + cached * price.cached_input
                  + output_tokens * price.output) / 1_000_000
        priced = (model, price)
    if priced is None:
        return None
    model, price = priced
    return Cost(total, model, price.read, price.source)


def prices() -> dict[str, Price]:
    """The shipped table, with the rows of the user's file (TINYREACT_PRICES) over it; ModelConfigError, naming the
    file, when one cannot be read. Read when asked: both are small."""
    rows = _read(PRICES)
    user_file = os.environ.get(PRICES_VARIABLE, "").strip()
    if user_file:
        rows |= _read(Path(user_file))
    return rows


def _read(path: Path) -> dict[str, Price]:
    """The rows of a price file, read again only when it changes (its size or time of change): a run is priced at
    its end, and a chat or a comparison has many runs."""
    try:
        status = path.stat()
    except OSError:
        return _rows(path)  # says why, in one line
    return dict(_rows_of(str(path), status.st_mtime_ns, status.st_size))


@lru_cache(maxsize=8)
def _rows_of(path: str, changed: int, size: int) -> dict[str, Price]:
    return _rows(Path(path))


def _rows(path: Path) -> dict[str, Price]:
    try:
        data = read_input(str(path), MAX_FILE_BYTES, "a price table")  # a FIFO would block, /dev/zero never end
    except OSError as problem:
        raise ModelConfigError(f"{PRICES_VARIABLE}: cannot read {path}: {problem.strerror or problem}") from None
    except ValueError as problem:
        raise ModelConfigError(f"{PRICES_VARIABLE}: {problem}") from None
    try:
        data = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as problem:
        what = "nested too deeply" if isinstance(problem, RecursionError) else str(problem)[:80]
        raise ModelConfigError(f"{PRICES_VARIABLE}: {path} is not JSON in UTF-8 ({what})") from None
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        raise ModelConfigError(f"{path} is not a price table: it needs a \"models\" object (see models/prices.json)")
    rows = {}
    for name, row in models.items():
        if not isinstance(row, dict) or not all(_dollars(row.get(field)) for field in FIELDS):
            raise ModelConfigError(f"{path}: the price of {str(name)[:60]} needs {', '.join(FIELDS)} as dollars per "
                                   f"million tokens (numbers of 0 or more, up to {MAX_DOLLARS:,})")
        if row["cached_input"] > row["input"]:
            raise ModelConfigError(f"{path}: the price of {str(name)[:60]} has cached_input above input: a cached "
                                   "token costs at most a fresh one")
        write, minimum = row.get("cache_write"), row.get("min_cache_tokens")
        if write is not None and not _dollars(write):
            raise ModelConfigError(f"{path}: the price of {str(name)[:60]} has a cache_write that is not dollars per "
                                   f"million tokens (a number of 0 or more, up to {MAX_DOLLARS:,})")
        if minimum is not None and not (type(minimum) is int and 0 <= minimum <= MAX_MIN_CACHE_TOKENS):
            raise ModelConfigError(f"{path}: the price of {str(name)[:60]} has a min_cache_tokens that is not a whole "
                                   f"number of tokens from 0 to {MAX_MIN_CACHE_TOKENS:,}")
        lifetimes = [row.get(field) for field in ("cache_ttl", "cache_max_age")]
        for field, seconds in zip(("cache_ttl", "cache_max_age"), lifetimes):
            if seconds is not None and not _seconds(seconds):
                raise ModelConfigError(f"{path}: the price of {str(name)[:60]} has a {field} that is not a number of "
                                       f"seconds from 0 to {MAX_CACHE_SECONDS:,} (a week)")
        if "until" in row and not _day(row["until"]):
            raise ModelConfigError(f"{path}: the price of {str(name)[:60]} has an until that is not a day written "
                                   "YYYY-MM-DD (the last day the source gives the price for)")
        for field in ENGINE_FIELDS:
            if row.get(field) is not None and not (type(row[field]) in (int, float) and 0 < row[field] <= 1):
                raise ModelConfigError(f"{path}: the price of {str(name)[:60]} has a {field} that is not a share of "
                                       "the standard prices (a number above 0, at most 1: 0.5 for half)")
        rows[name] = Price(*(float(row[field]) for field in FIELDS), str(row.get("read", "")),
                           str(row.get("source", "")), None if write is None else float(write), minimum,
                           str(row.get("until", "")), *(None if seconds is None else float(seconds)
                                                        for seconds in lifetimes),
                           *(None if row.get(field) is None else float(row[field]) for field in ENGINE_FIELDS))
    return rows


def _seconds(value) -> bool:
    """A cache's lifetime: a number of seconds from 0 to MAX_CACHE_SECONDS."""
    return type(value) in (int, float) and 0 <= value <= MAX_CACHE_SECONDS


def _day(value) -> bool:
    """A day of the calendar written YYYY-MM-DD: not "soon", not 2026-02-30."""
    try:
        return isinstance(value, str) and len(value) == 10 and date.fromisoformat(value).isoformat() == value
    except ValueError:
        return False


def _dollars(value) -> bool:
    """A price: a number from 0 to MAX_DOLLARS (a whole number of any size is compared as it is: a float of it could
    overflow)."""
    return type(value) in (int, float) and (type(value) is int or math.isfinite(value)) and 0 <= value <= MAX_DOLLARS
