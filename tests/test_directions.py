"""Direction characters (the embeddings, overrides and isolates, U+202A-U+202E and U+2066-U+2069) reorder the text
after them as a terminal shows it: a tool name or an argument can display reversed. Whatever is printed of a model,
a tool, a server or the environment shows each as its code point; the trace keeps the text as it came. The marks
that right-to-left text uses (U+200E, U+200F, U+061C) are left as they are."""
import sys

import cli
from traces import read_trace
from views.terminal import clean

OVERRIDE, ISOLATE = "\u202e", "\u2066"


def test_clean_shows_each_direction_character_as_its_code_point():
    assert clean(f"rm {OVERRIDE}fdp.exe{ISOLATE}x") == "rm <U+202E>fdp.exe<U+2066>x"
    marked = "العدد \u061c42 \u200fشكرا hello"  # right-to-left text, its marks too, is shown as it is
    assert clean(marked) == marked


def test_a_reply_s_direction_characters_are_shown_not_obeyed_and_the_trace_keeps_them(world, capsys, tmp_path):
    world([f'Thought: look\nAction: search_wikipedia_page("{OVERRIDE}Lisbon")', f"Answer: {OVERRIDE}done"])
    trace = tmp_path / "t.jsonl"
    assert cli.main(["Where?", "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert OVERRIDE not in out
    assert 'search_wikipedia_page("<U+202E>Lisbon")' in out and "Answer: <U+202E>done" in out
    assert f"{OVERRIDE}done" in [e["text"] for e in read_trace(str(trace)) if e["type"] == "answer"]


def a_tool_named_oddly(text: str) -> str:
    """Reverse text. Example: it turns \u202eabc into cba."""
    return text[::-1]


def test_the_prompt_and_the_tool_list_show_no_direction_character(monkeypatch, capsys):
    monkeypatch.setattr(sys.modules["cli.models"], "DEFAULT_TOOLS", [a_tool_named_oddly])
    for arguments in (["--show-prompt"], ["--show-prompt", "--protocol", "native", "--model", "openai:m"],
                      ["--tools"]):
        assert cli.main(arguments) == 0
        out = capsys.readouterr().out
        assert OVERRIDE not in out and "a_tool_named_oddly" in out


def test_the_otel_endpoint_is_printed_clean(monkeypatch, capsys, world):
    world(["Answer: 4"])
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:9/\x1b]0;PWNED\x07{OVERRIDE}x")
    assert cli.main(["2 + 2?", "-q", "--otel"]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and OVERRIDE not in err and "--otel" in err


def test_a_tool_name_of_twenty_thousand_characters_does_not_pad_every_row_of_tools(monkeypatch, capsys):
    def long(): """A tool a server named at length."""
    long.__name__ = "n" * 20_000
    monkeypatch.setattr(sys.modules["cli.models"], "DEFAULT_TOOLS", [long, a_tool_named_oddly])
    assert cli.main(["--tools"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 2 and all(len(row) < 100 for row in rows) and rows[0].startswith("n" * 63 + "…")
