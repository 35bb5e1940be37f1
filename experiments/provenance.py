"""What a replay's outputs carry so that a paper's table can be made again from them alone: the project's version
(and its commit, in a git clone), the day, the files replayed with their digests, the observation cut, the caching
rule the costs follow and the probe's settings. The JSON holds it as `setup`; the CSV in lines beginning `#`
(pandas: `read_csv(path, comment="#")`); the page and the terminal in one line."""
import datetime
import hashlib
from pathlib import Path

from agent import __version__
from policies.rendering import observation_cut

ROOT = Path(__file__).resolve().parent.parent


def provenance(trace: str, facts: str | None, priced: list | None, probe: dict | None = None,
               counter: str = "", pace=None) -> dict:
    """The setup of a replay: `priced` is a list of (a model's name, its Price), the first the one the tables' costs
    follow; `probe` the probe's settings or None; `pace` the Pace the calls were priced at (None: the trace's own
    times)."""
    rules = [caching_rule(name, price) for name, price in priced or []]
    return {
        "tinyreact": __version__, "commit": commit(), "date": datetime.datetime.now(datetime.timezone.utc).date()
        .isoformat(), "trace": {"path": trace, "sha256": digest(trace)},
        "facts": {"path": facts, "sha256": digest(facts)} if facts else {"path": None, "from": "the trace's header"},
        "observation_cut": observation_cut(), "counter": counter,
        "caching_rule": rules[0] if rules else None, "caching_rules": rules,
        "times": {"pace": pace.said()} if pace else "the trace's own",
        "probe": probe,
    }


def caching_rule(name: str, price) -> dict:
    forever = lambda seconds: None if seconds == float("inf") else seconds  # noqa: E731 (JSON has no infinity)
    return {"priced_as": name, "rule": price.rule(), "min_cache_tokens": price.minimum, "cache_write": price.write,
            "cache_ttl": forever(price.lifetime), "cache_max_age": forever(price.longest),
            "prices_read": price.read, "source": price.source, "until": price.until or None}


def said(setup: dict) -> str:
    """The setup in one line, as the tables and the page end with it."""
    facts = setup["facts"]
    return " · ".join(filter(None, [
        f"TinyReAct {setup['tinyreact']}" + (f" ({setup['commit'][:12]})" if setup["commit"] else ""),
        setup["date"], f"trace sha256 {setup['trace']['sha256'][:16]}",
        f"facts sha256 {facts['sha256'][:16]}" if facts.get("sha256") else "facts from the trace's header",
        f"observations cut at {setup['observation_cut']:,} characters",
        *(f"costs at {rule['priced_as']}: {rule['rule']}" for rule in setup.get("caching_rules") or
          filter(None, [setup.get("caching_rule")])),
        _times(setup.get("times")),
        ("probe: " + ", ".join(f"{key} {value}" for key, value in setup["probe"].items())) if setup["probe"] else ""]))


def _times(times) -> str:
    """When the calls are taken to be made, in words."""
    if isinstance(times, dict):
        pace = times["pace"]
        return f"calls priced at a pace of {pace['question']:g} s before each question, {pace['step']:g} s before " \
               "each later call"
    return "calls priced at the trace's own times" if times else ""


def digest(path: str) -> str | None:
    """The file's SHA-256; None when it cannot be read (a pipe read once, a file gone since)."""
    try:
        with open(path, "rb") as file:
            return hashlib.file_digest(file, "sha256").hexdigest()
    except (OSError, ValueError):
        return None


def commit() -> str | None:
    """The commit this copy of the project was checked out at, read from its .git folder; None outside a clone."""
    try:
        head = (ROOT / ".git" / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head
        ref = head[5:]
        loose = ROOT / ".git" / ref
        if loose.is_file():
            return loose.read_text().strip()
        for line in (ROOT / ".git" / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    except (OSError, ValueError):
        return None
    return None
