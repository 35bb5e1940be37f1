"""The tables of --compare and --replay fit the width they are printed at (80 columns in a pipe or an 80-column
terminal) and never cut a policy's name or a number: a column empty in every row goes first, then the padding, then
the columns a table names as least needed (said under it), and last the table goes in parts, its names in each.
A terminal wide enough shows the whole table."""
import io
import os
import re

import pytest
from rich.cells import cell_len
from rich.console import Console

import cli as command_line
from experiments.live import compare_live, summarise_runs
from models.scripted import ScriptedModel
from tools import DEFAULT_TOOLS
from views.display import live_table
from views.tables import Column, Fitted

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LONG = os.path.join(ROOT, "conversations", "long.jsonl")
REPLAYED = ["full", "window:2", "user-only:4", "elide:2", "pinned", "compact:8000"]  # --replay's default policies


def cells(text: str) -> list[str]:
    """Every cell of every table line in `text`, stripped (a header that wraps gives a cell a line)."""
    return [cell.strip() for line in text.splitlines() if line[:1] in "│┃" for cell in re.split("[│┃]", line)[1:-1]]


def widest(text: str) -> int:
    return max(cell_len(line.rstrip()) for line in text.splitlines())


def rendered(table, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False)
    console.print(table)
    return console.file.getvalue()


def test_the_replay_fits_80_columns_and_names_every_policy_whole(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")  # as rich sizes a pipe
    assert command_line.main(["--replay", LONG]) == 0
    out = capsys.readouterr().out
    shown = cells(out)
    assert widest(out) <= 80 and not [cell for cell in shown if "…" in cell]
    # each policy is a row of the totals, the contents and the caching tables, and a column of the facts table
    assert {name: shown.count(name) + shown.count(f"{name} *") for name in REPLAYED} == dict.fromkeys(REPLAYED, 4)
    # the two columns empty in every row (no summaries, no model's window) made the room; the others are whole
    assert "summary" not in shown and "over window" not in shown
    assert {"346,400", "26%", "6,704", "133,488", "$0.0961", "✓ ✓ ✓ ✓", "booking: KX-4471-B"} <= set(shown)
    assert "invariant" in " ".join(shown) and "not shown at" not in out  # nothing a row says was dropped


def test_the_replay_keeps_every_column_on_a_wide_terminal(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "200")
    assert command_line.main(["--replay", LONG]) == 0
    out = capsys.readouterr().out
    assert widest(out) <= 200
    assert {"input tokens, all calls", "vs full", "peak context", "summary calls (in / out)", "over window",
            "invariant violations", "instructions", "observations", "markers", *REPLAYED} <= set(cells(out))


def test_a_replay_of_many_policies_shows_its_facts_in_parts_each_with_the_facts_named(monkeypatch, capsys):
    many = [*REPLAYED, "window:0+facts", "user-only:4+facts", "elide:2+pinned", "retrieve:3+facts"]
    monkeypatch.setenv("COLUMNS", "80")
    assert command_line.main(["--replay", LONG, "--policies", ",".join(many)]) == 0
    out = capsys.readouterr().out
    shown = cells(out)
    assert widest(out) <= 80 and not [cell for cell in shown if "…" in cell]
    assert all(shown.count(name) + shown.count(f"{name} *") >= 4 for name in many)
    facts = out[out.index("Is each planted fact"):out.index("probe points, left to right")]
    parts = facts.count("┏")
    assert parts > 1 and facts.count("(continued)") == parts - 1 and cells(facts).count("fact") == parts


@pytest.fixture(scope="module")
def offline_rows():
    """The README's offline comparison, its model scripted: full, window:1 and user-only:4 each answer 60 in one
    step."""
    model = ScriptedModel(['Thought: I multiply.\nAction: calculate("(12 + 8) * 3")', "Answer: 60"] * 3)
    runs = list(compare_live("What is (12 + 8) * 3?", ["full", "window:1", "user-only:4"], model, DEFAULT_TOOLS,
                             expect="60"))
    return summarise_runs(runs)


def compare_table(rows, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False)
    live_table(console, rows, "scripted", "60", "a local tokenizer")
    return console.file.getvalue()


def test_the_offline_comparison_fits_80_columns_with_every_cell_whole(offline_rows):
    out = compare_table(offline_rows, 80)
    shown = cells(out)
    assert widest(out) <= 80
    assert all(shown.count(name) == 1 for name in ("full", "window:1", "user-only:4"))
    tokens = f"{offline_rows[0]['input_tokens']['median']:,}"
    assert shown.count("60") == shown.count("1/1") == shown.count(tokens) == 3 and shown.count("answer") == 4
    assert {"policy", "answer", "correct", "stop", "steps", "calls", "out"} <= set(shown)  # every column, headers whole
    assert "not shown at" not in out


def test_the_offline_comparison_is_whole_on_a_wide_terminal(offline_rows):
    shown = cells(compare_table(offline_rows, 200))
    assert {"policy", "answer", "correct", "stop", "steps", "calls", "in", "peak ctx", "out", "s", "live tools"} <= set(
        shown)


def test_a_comparison_too_wide_drops_its_least_needed_columns_and_says_which(offline_rows):
    priced = [{**row, "cost": {"median": 0.000112, "min": 0.000112, "max": 0.000112},
               "cached_input_tokens": {"median": 1024, "min": 1024, "max": 1024}} for row in offline_rows]
    out = compare_table(priced, 80)
    shown = cells(out)
    assert widest(out) <= 80 and all(shown.count(name) == 1 for name in ("full", "window:1", "user-only:4"))
    assert shown.count("$0.000112") == shown.count("1,024") == 3 and {"in", "cached", "cost", "out"} <= set(shown)
    assert "live tools" not in shown and "s" not in shown
    said = " ".join(out.split())  # the line under the table, as the console wrapped it
    assert "not shown at 80 columns: live tools, s (a wider terminal shows them, --json holds them)" in said


def test_the_seam_makes_room_in_its_order_and_never_cuts_a_name():
    columns = [Column("policy", "left", "never"), Column("tokens"), Column("summaries"), Column("seconds"),
               Column("note", "left", "text")]
    rows = [["user-only:4+facts", "128,139", "", "12.5", "a fact kept whole"], ["full", "346,400", "", "3.1", ""]]
    table = Fitted("title", columns, rows, least_needed=["seconds"])

    def at(width: int) -> tuple[str, list[str]]:
        out = rendered(table, width)
        shown = cells(out)
        assert widest(out) <= width and shown.count("user-only:4+facts") == out.count("┏")  # once in every part
        assert "128,139" in shown and "346,400" in shown
        return out, shown

    assert "summaries" in at(80)[1]  # whole: 73 columns
    out, shown = at(60)  # the empty column goes
    assert "summaries" not in shown and "│ full " in out
    out, shown = at(50)  # then the padding
    assert "│full " in out and "seconds" in shown and "not shown" not in out
    out, shown = at(44)  # then the least needed, said under the table
    assert "seconds" not in shown and "not shown at 44 columns: seconds" in " ".join(out.split())
    out, shown = at(34)  # then two parts
    assert out.count("(continued)") == 1 and out.count("┏") == 2
