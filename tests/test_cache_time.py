"""Caches expire: each price row's lifetime, the replay's calls priced at the time they were made (the trace's own, or
a stated --pace), --cache-ttl over every rule, and bad values refused in one line."""
import json
import os

import pytest

from experiments.replay import Pace, PolicyReplay, call_times, paced, parse_pace, replay
from models.prices import NEVER, Price, prices

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LONG = os.path.join(ROOT, "conversations", "long.jsonl")

# $2 a million input tokens, $0.20 cached, writes at $2.50: Anthropic's shape, with its 5-minute cache
ANTHROPIC = Price(2.0, 0.2, 10.0, "", "", cache_write=2.5, min_cache_tokens=1024, cache_ttl=300)


def session(times: list[float]) -> PolicyReplay:
    """Three calls of a history that only grows: each repeats the whole call before it."""
    return PolicyReplay("full", sizes=[2000, 2100, 2200], repeated=[0, 2000, 2100], times=times)


def test_every_shipped_row_states_its_caches_lifetime_and_where_it_is_said():
    for name, price in prices().items():
        assert price.cache_ttl is not None, name
        assert "after" in price.kept() and "assumed" not in price.kept(), name
    rows = json.load(open(os.path.join(ROOT, "models", "prices.json")))["models"]
    assert all(row["cache_source"].startswith("https://") and row["cache_read"] for row in rows.values())
    assert prices()["claude-sonnet-5"].kept() == "the cache keeps a prefix 5 minutes after its last use"
    assert "assumed" in rows["gemini-3.8-flash"]["cache_note"]  # nothing published: said so in the row


def test_a_call_made_after_the_cache_expired_reads_nothing_and_pays_the_write_again():
    warm = session([0, 100, 200])  # each call within five minutes of the one before
    cold = session([0, 100, 1000])  # the third fifteen minutes after the second
    assert warm.cacheable(ANTHROPIC) == 2000 + 2100 and warm.expired(ANTHROPIC) == 0
    assert cold.cacheable(ANTHROPIC) == 2000 and cold.expired(ANTHROPIC) == 1
    # warm: 2000 written, then 2000 read + 100 written, then 2100 read + 100 written
    assert warm.input_cost(ANTHROPIC, True) == pytest.approx((2200 * 2.5 + 4100 * 0.2) / 1e6)
    # cold: the third call writes all of its 2,200 tokens again
    assert cold.input_cost(ANTHROPIC, True) == pytest.approx((2000 * 2.5 + 2000 * 0.2 + 100 * 2.5 + 2200 * 2.5) / 1e6)
    assert cold.input_cost(ANTHROPIC, False) == warm.input_cost(ANTHROPIC, False)  # without a cache, time is nothing


def test_each_read_refreshes_the_cache_but_not_past_its_longest_life():
    every_four_minutes = session([0, 240, 480])  # 8 minutes in all, never 5 idle: every read kept it
    assert every_four_minutes.expired(ANTHROPIC) == 0
    hour = Price(1.0, 0.1, 1.0, "", "", min_cache_tokens=1024, cache_ttl=3600, cache_max_age=3600)  # Gemini's
    late = session([0, 2000, 4000])  # each read within the hour, but the first write is 4,000 s old at the third
    assert late.expired(hour) == 1 and late.cacheable(hour) == 2000
    assert late.expired(hour.expiring(3600)) == 0  # --cache-ttl lifts the cap with the rule


def test_cache_ttl_none_never_expires_and_a_row_without_a_lifetime_is_said_to_be_assumed():
    days = session([0, 86_400, 2 * 86_400])
    assert days.expired(ANTHROPIC.expiring(NEVER)) == 0 and days.cacheable(ANTHROPIC.expiring(NEVER)) == 4100
    assert ANTHROPIC.expiring(NEVER).kept() == "the cache never expires"
    unsaid = Price(1.0, 0.1, 1.0, "", "")
    assert unsaid.lifetime == 300 and "assumed: the price row gives no lifetime" in unsaid.rule()


def test_the_calls_times_come_from_the_trace_or_from_a_stated_pace():
    events = [{"type": "question", "t": 0}, {"type": "context", "t": 1.0}, {"type": "reply", "t": 2.0},
              {"type": "context", "t": 3.5}, {"type": "reply", "t": 4.0},
              {"type": "question", "t": 50}, {"type": "context", "t": 60.0}, {"type": "reply", "t": 61.0},
              {"type": "reply"}]  # a call recorded with no time: made with the one before
    assert call_times(events) == [1.0, 3.5, 60.0, 60.0]
    assert call_times(paced(events, Pace(7200, 2))) == [0.0, 2.0, 7202.0, 7204.0]
    assert parse_pace("300") == Pace(300, 0) and parse_pace("7200,2.5") == Pace(7200, 2.5)


@pytest.mark.parametrize("text", ["-1", "soon", "1,2,3", "", "nan", "1e12", "5,-2"])
def test_a_pace_that_is_no_pace_is_refused(text):
    with pytest.raises(ValueError, match="seconds before each question"):
        parse_pace(text)


def test_the_replay_prices_the_shipped_conversation_in_time(agent_py):
    def costs(*options):
        done = agent_py("--replay", LONG, "--policies", "full,window:2", "--prices-of", "claude-sonnet-5", "--json",
                        *options)
        assert done.returncode == 0, done.stderr
        replayed = json.loads(done.stdout)
        return {p["policy"]: p["input_cost"]["with_cache"] for p in replayed["policies"]}, replayed["setup"]

    recorded, setup = costs()  # recorded in seconds: its own times expire nothing
    never, _ = costs("--cache-ttl", "none")
    assert recorded == never and setup["times"] == "the trace's own"
    assert setup["caching_rule"]["cache_ttl"] == 300
    hours, setup = costs("--pace", "7200")  # two hours before each question: each question's first call is cold
    assert hours["full"] > 2 * recorded["full"] and hours["window:2"] == recorded["window:2"]  # it never hit
    assert setup["times"] == {"pace": {"question": 7200.0, "step": 0.0}}
    kept_warm, setup = costs("--pace", "7200", "--cache-ttl", "10800")  # a three-hour cache outlives the gaps
    assert kept_warm == recorded and setup["caching_rule"]["cache_ttl"] == 10800
    assert setup["caching_rule"]["cache_max_age"] is None
    table = agent_py("--replay", LONG, "--policies", "full", "--prices-of", "claude-sonnet-5", "--pace", "7200")
    said = " ".join(table.stdout.split())
    assert "expired" in said and "calls priced at a pace of 7200 s before each question" in said


@pytest.mark.parametrize("option, value", [("--cache-ttl", "-5"), ("--cache-ttl", "an hour"),
                                           ("--cache-ttl", "1e9"), ("--cache-ttl", "inf"), ("--pace", "-60"),
                                           ("--pace", "later"), ("--pace", "1e12")])
def test_a_bad_lifetime_or_pace_is_one_line_and_writes_nothing(agent_py, tmp_path, option, value):
    out = tmp_path / "sizes.csv"
    done = agent_py("--replay", LONG, option, value, "--csv", str(out))
    assert done.returncode == 2 and not out.exists()
    assert len(done.stderr.strip().splitlines()) == 1 and option in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("row, said", [({"cache_ttl": -1}, "has a cache_ttl that is not a number of seconds"),
                                       ({"cache_ttl": "5m"}, "has a cache_ttl that is not a number of seconds"),
                                       ({"cache_max_age": 10 ** 9}, "has a cache_max_age that is not a number"),
                                       ({"cache_ttl": True}, "has a cache_ttl that is not a number of seconds")])
def test_a_price_file_with_an_absurd_lifetime_is_refused_in_one_line(agent_py, tmp_path, monkeypatch, row, said):
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"models": {"m": {"input": 1, "cached_input": 0.1, "output": 1, **row}}}))
    monkeypatch.setenv("TINYREACT_PRICES", str(table))
    done = agent_py("--replay", LONG, "--prices-of", "m")
    assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_cold_appends_while_the_cache_is_warm_and_rewrites_only_at_a_call_it_has_expired_for():
    from experiments.facts import load_facts, probe_points
    from traces import read_trace_file

    header, events = read_trace_file(LONG)
    facts, declared = load_facts(header)
    points = probe_points(declared, events)
    # recorded in seconds and under T: what full history sends, call for call
    full, cold = replay(header, events, ["full", "cold"], facts=facts, points=points)
    assert cold.sizes == full.sizes and cold.repeated == full.repeated
    # two hours before each question: the first call of each question finds the cache cold, and only there it rewrites
    full, cold = replay(header, events, ["full", "cold:4000"], facts=facts, points=points, pace=Pace(7200))
    starts = {number for number, at in enumerate(cold.times) if number and at - cold.times[number - 1] > 300}
    rewrites = {number for number in range(1, len(cold.sizes)) if cold.repeated[number] != cold.sizes[number - 1]}
    assert rewrites and rewrites <= starts and cold.violations == 0
    assert cold.input_cost(ANTHROPIC, True) < full.input_cost(ANTHROPIC, True)


def test_a_rewrite_that_would_keep_everything_changes_nothing():
    """short.jsonl never passes half of cold's T: each cold call rewrites to what full history sends (it added a
    block of the first question's facts at the first expired call, and read steps[-1] when there was one step)."""
    from traces import read_trace_file

    header, events = read_trace_file(os.path.join(ROOT, "conversations", "short.jsonl"))
    full, cold = replay(header, events, ["full", "cold"], facts=[], points=[], pace=Pace(7200))
    assert cold.sizes == full.sizes and cold.repeated == full.repeated
