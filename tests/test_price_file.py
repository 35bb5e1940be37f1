"""A price file (TINYREACT_PRICES) that cannot be a price table is refused in one line naming the file, before any
call: nested past Python's limit, a price that would overflow a cost, cached input dearer than input, a caching rule
that is not a price or a number of tokens, a FIFO or a device, a file too large to be a table."""
import json
import os

import pytest

import cli


def refused(monkeypatch, capsys, path) -> str:
    monkeypatch.setenv("TINYREACT_PRICES", str(path))
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    assert cli.main(["What is 2 + 2?", "--model", "gemini-3.8-flash"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    return line


@pytest.mark.parametrize("content, says", [
    ('{"models": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    (json.dumps({"models": {"m": {"input": 1e308, "cached_input": 0, "output": 1}}}), "up to 100,000"),
    (json.dumps({"models": {"m": {"input": 1, "cached_input": 2, "output": 1}}}), "cached_input above input"),
    ('{"models": {"m": ' + " " * 1_000_001 + "}}", "1,000,020 bytes, more than 1,000,000"),
    ('{"models": {"m": {"input": 1' + "0" * 400 + ', "cached_input": 0, "output": 1}}}', "up to 100,000"),
    (json.dumps({"models": {"m": {"input": 1, "cached_input": 0.1, "output": 1, "cache_write": "1.25x"}}}),
     "has a cache_write that is not dollars per million tokens"),
    (json.dumps({"models": {"m": {"input": 1, "cached_input": 0.1, "output": 1, "min_cache_tokens": 1024.5}}}),
     "has a min_cache_tokens that is not a whole number of tokens from 0 to 10,000,000"),
    *[(json.dumps({"models": {"m": {"input": 1, "cached_input": 0.1, "output": 1, "until": until}}}),
       "has an until that is not a day written YYYY-MM-DD") for until in ["soon", "2026-02-30", 20261231, "2026-1-5"]],
])
def test_a_price_file_that_is_no_table_is_one_line(monkeypatch, capsys, tmp_path, content, says):
    path = tmp_path / "prices.json"
    path.write_text(content)
    line = refused(monkeypatch, capsys, path)
    assert says in line and str(path) in line


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_price_file_that_would_block_or_never_end_is_refused(monkeypatch, capsys, tmp_path, kind):
    path = tmp_path / "prices.fifo"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path = "/dev/zero"
    said = "a pipe" if kind == "fifo" else "a device"
    assert f"it is {said}, not a regular file" in refused(monkeypatch, capsys, path)


def test_a_price_files_caching_rule_prices_a_replay(monkeypatch, capsys, tmp_path):
    """A row of TINYREACT_PRICES with its own rule: the replay's costs and its JSON follow it, and a row without one is
    said to assume 1,024 tokens."""
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {
        "never": {"input": 1, "cached_input": 0.1, "output": 1, "min_cache_tokens": 10_000_000},
        "plain": {"input": 1, "cached_input": 0.1, "output": 1}}}))
    monkeypatch.setenv("TINYREACT_PRICES", str(path))
    short = os.path.join(os.path.dirname(cli.__path__[0]), "conversations", "short.jsonl")
    for name in ("never", "plain"):
        assert cli.main(["--replay", short, "--policies", "full", "--prices-of", name, "--json"]) == 0
        replayed = json.loads(capsys.readouterr().out)
        cost, rule = replayed["policies"][0]["input_cost"], replayed["setup"]["caching_rule"]["rule"]
        if name == "never":
            assert cost["with_cache"] == cost["no_cache"] and "10,000,000 tokens" in rule
        else:
            assert cost["with_cache"] < cost["no_cache"] and "1,024 (assumed: the price row gives none)" in rule


def test_batch_and_flex_are_shares_of_the_standard_prices(tmp_path, monkeypatch):
    from models import ModelConfigError
    from models.prices import price_of, prices

    assert (price_of("gpt-5.6-luna").batch, price_of("gpt-5.6-luna").flex) == (0.5, 0.5)
    assert (price_of("gemini-3.8-flash").batch, price_of("gemini-3.8-flash").flex) == (0.5, None)
    table = tmp_path / "prices.json"
    table.write_text('{"models": {"m": {"input": 1, "cached_input": 0.1, "output": 2, "batch": 2}}}')
    monkeypatch.setenv("TINYREACT_PRICES", str(table))
    with pytest.raises(ModelConfigError, match="the price of m has a batch that is not a share of the standard"):
        prices()


def test_the_input_before_sending_costs_less_where_a_context_is_sent_again():
    from models.prices import Price, input_costs

    price = Price(2.0, 0.2, 8.0, "", "", cache_write=2.5, min_cache_tokens=1000)
    # two calls sharing a 1,000-token context, then one whose context is too short to be cached
    standard, cached = input_costs(price, [("a", 1000, 1010), ("a", 1000, 1020), ("b", 10, 20)])
    assert standard == pytest.approx(2050 * 2.0 / 1e6)
    assert cached == pytest.approx((1010 * 2.5 + 1000 * 0.2 + 20 * 2.0 + 20 * 2.0) / 1e6)
