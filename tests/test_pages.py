"""The HTML pages: parsed back with the standard library's parser and checked for what a teacher would point at
(a call per model call, its bars, its folded context, what changed), for hostile text staying text, for size,
and, in a real headless Chromium, for rendering without console errors and for folding."""
import html
import json
import os
import re
from html.parser import HTMLParser

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agent import TinyReAct
from browser import compare_traces, chromium, missing
from experiments.facts import Fact, load_facts, probe_points
from experiments.probe import ProbeAnswer, probe
from experiments.replay import PolicyReplay, replay
from models import ContextOverflow, ModelError
from models.scripted import ScriptedModel
from policies import BUCKET_NAMES, make_policy
from tokens import local_counter
from tools.arithmetic import add_numbers, multiply_numbers
from traces import read_trace_file
from views.pages import compare_page, inert_json, replay_page, run_page
from views.terminal import visible

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUPER_BOWL = os.path.join(ROOT, "conversations", "superbowl.jsonl")
LONG = os.path.join(ROOT, "conversations", "long.jsonl")
HOSTILE = '</details></pre></script><script>document.title="pwned"</script><img src=x onerror="document.title=1">'


# ---------------------------------------------------------------- the page, parsed

class Node:
    def __init__(self, tag: str, attrs: dict, parent=None):
        self.tag, self.attrs, self.parent, self.children = tag, attrs, parent, []

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    @property
    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text for child in self.children)

    def all(self, tag: str | None = None, css: str | None = None) -> list["Node"]:
        found = []
        for child in self.children:
            if isinstance(child, Node):
                if (tag is None or child.tag == tag) and (css is None or css in child.classes):
                    found.append(child)
                found += child.all(tag, css)
        return found

    def one(self, tag: str | None = None, css: str | None = None) -> "Node":
        found = self.all(tag, css)
        assert len(found) == 1, (tag, css, len(found))
        return found[0]


class Tree(HTMLParser):
    """The page as nodes; an end tag that closes anything but the element last opened fails the test."""
    VOID = {"meta", "br", "img", "input", "hr", "link"}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.root = self.open = Node("#document", {})
        self.feed(text)
        self.close()
        assert self.open is self.root, f"<{self.open.tag}> is never closed"

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.open)
        self.open.children.append(node)
        if tag not in self.VOID:
            self.open = node

    def handle_startendtag(self, tag, attrs):
        self.open.children.append(Node(tag, dict(attrs), self.open))

    def handle_endtag(self, tag):
        assert tag == self.open.tag, f"</{tag}> closes <{self.open.tag}>"
        self.open = self.open.parent

    def handle_data(self, data):
        self.open.children.append(data)


def parse(page: str) -> Node:
    return Tree(page).root


def page_data(root: Node) -> dict:
    return json.loads(next(node for node in root.all("script") if node.attrs.get("id") == "page-data").text)


def context_text(data: dict, number: int) -> list[tuple[str, str, str]]:
    """A stored context, as (role, kind, text) for each part, the way the page's script lays it out."""
    return [(role, kind, data["texts"][text])
            for role, kind, text, _ in (data["parts"][p] for p in data["contexts"][number])]


def parts_of(messages) -> list[tuple[str, str, str]]:
    return [(message.role, part.kind, part.text) for message in messages for part in message.parts]


@pytest.fixture(scope="module")
def counter():
    return local_counter()


@pytest.fixture(scope="module")
def super_bowl(counter):
    header, events = read_trace_file(SUPER_BOWL)
    return header, events, run_page(header, events, counter)


@pytest.fixture(scope="module")
def long_run(counter):
    header, events = read_trace_file(LONG)
    return header, events, run_page(header, events, counter)


@pytest.fixture(scope="module")
def long_replay(counter):
    header, events = read_trace_file(LONG)
    reports = replay(header, events, ["full", "window:2", "user-only:4", "elide:2", "pinned", "compact:2000"], counter)
    return header, events, reports, replay_page(header, events, reports, counter)


def session(policy: str, turns: list[tuple[str, list[str]]], ttl: int = 8, reset_before: int | None = None,
            tools=(add_numbers, multiply_numbers)):
    """A chat recorded through the real loop under `policy`: each turn is a question and its scripted replies."""
    model = ScriptedModel([reply for _, replies in turns for reply in replies])
    agent = TinyReAct(model, tools=list(tools), ttl=ttl, policy=make_policy(policy), counter=local_counter())
    for number, (question, _) in enumerate(turns):
        if number == reset_before:
            agent.reset()
        agent.query(question)
    return list(agent.trace.events)


ARITHMETIC = [("What is 7 * 6 + 5?", ["Thought1: multiply\nAction1: multiply_numbers(7, 6)",
                                       "Thought2: add\nAction2: add_numbers(42, 5)", "Thought3: done\nAnswer: 47"]),
              ("And 2 + 2?", ["Thought1: add\nAction1: add_numbers(2, 2)", "Answer: 4"]),
              ("And 3 * 3?", ["Action1: multiply_numbers(3, 3)", "Answer: 9"])]


# ---------------------------------------------------------------- the run page

def test_super_bowl_page_has_its_answer_and_counts_on_top(super_bowl):
    _, _, page = super_bowl
    root = parse(page)
    assert root.one("title").text == "The Super Bowl LIX temperature question: 6 steps"
    row = [cell.text for cell in root.one("table", "outcome").all("td")]
    assert row[2] == "It is 59.9 °F (15.5 °C) at the Caesars Superdome in New Orleans."
    assert row[3:7] == ["answer", "6", "7", "6,611 / 177"]  # stop reason, steps, calls, tokens billed in / out


def test_super_bowl_page_has_one_entry_per_call_with_the_recorded_bucket_bars(super_bowl):
    _, events, page = super_bowl
    root = parse(page)
    calls = root.all("section", "call")
    contexts = [event for event in events if event["type"] == "context"]
    assert len(calls) == len(contexts) == 7
    for section, context in zip(calls, contexts):
        pieces = section.one("div", "bar").all("span")
        shown = {piece.attrs["class"][2:]: int(re.search(r"([\d,]+) tokens", piece.attrs["title"])[1].replace(",", ""))
                 for piece in pieces}
        assert shown == {name: count for name, count in context["tokens"].items() if count}
        assert list(shown) == [name for name in BUCKET_NAMES if name in shown]  # stacked in the legend's order
        assert f"{sum(context['tokens'].values()):,} tokens shown" in section.one("h3").text
    widths = [float(re.search(r"width:([\d.]+)%", call.one("div", "bar").attrs["style"])[1]) for call in calls]
    assert widths == sorted(widths) and widths[-1] == 100  # the full history grows, and the largest fills the line
    last = calls[-1]
    assert last.one("p", "answer").text == "Answer: It is 59.9 °F (15.5 °C) at the Caesars Superdome in New Orleans."
    assert "Action: add_numbers(27.9, 32)" in calls[5].one("p", "action").text
    assert "Observation6" in calls[5].one("details", "observation").one("summary").text


def test_folded_context_is_exactly_what_the_model_was_shown(super_bowl):
    _, events, page = super_bowl
    root, data = parse(page), page_data(parse(page))
    policy = make_policy("full")
    replies = [i for i, event in enumerate(events) if event["type"] == "reply"]
    for section, reply in zip(root.all("section", "call"), replies):
        folded = section.one("details", "context")
        assert folded.one("div", "body").children == []  # empty until opened: the script fills it from the store
        assert context_text(data, int(folded.attrs["data-context"])) == parts_of(policy.render(events[:reply]))


def test_changes_under_full_history_are_the_last_reply_and_its_observation(long_run):
    _, events, page = long_run
    calls = parse(page).all("section", "call")
    assert len(calls) == 84
    first = [item.one("span", "tag").text for item in calls[0].one("ul", "changes").all("li")]
    assert first == ["instructions", "added"]  # the first call adds the instructions and the question
    for number, call in enumerate(calls[1:], 2):
        tags = [item.one("span", "tag").text for item in call.one("ul", "changes").all("li")]
        assert set(tags) == {"added"} and len(tags) in (2, 3), number  # reply and observation, or reply and question
    summary = calls[1].one("ul", "changes").all("summary")[0].text
    assert "model · reply" in summary and "Thought1:" in summary


@pytest.mark.parametrize("policy, tag", [("elide:1", "elided"), ("window:1", "marker"), ("pinned", "pinned")])
def test_changes_name_what_the_policy_did(policy, tag, counter):
    def read(name: str) -> str:
        """Returns a long page."""
        return f"{name} " * 200
    replies = ['Action: read("a")', 'Action: read("b")', 'Action: read("c")', 'Action: read("d")', "Answer: done"]
    if policy == "pinned":
        replies.insert(0, 'Thought: pin it\nAction: pin_note("code 4471")')
    events = session(policy, [("Read four pages; remember code 4471.", replies)], tools=[read])
    root = parse(run_page({}, events, counter))
    tags = [span.text for span in root.all("span", "tag")]
    assert tag in tags
    if policy == "window:1":
        assert "dropped" in tags  # older steps leave the window
    if policy == "pinned":
        assert root.all("p", "note")[0].text == "note pinned: code 4471"


def test_a_summary_shows_where_it_was_written_and_as_a_change(counter):
    replies = [f"Thought{n}: step {n} of a long task with words to fill the context {'and more ' * 20}\n"
               f"Action{n}: add_numbers({n}, {n})" for n in range(1, 6)]
    turns = [("Add pairs of numbers.", [replies[0], replies[1], replies[2], "Summary: 1+1, 2+2 and 3+3 were added.",
                                        replies[3], "Summary: 1+1 to 4+4 were added.", "Answer: done"])]
    events = session("compact:550", turns)
    assert [event["text"] for event in events if event["type"] == "summary"] == [
        "Summary: 1+1, 2+2 and 3+3 were added.", "Summary: 1+1 to 4+4 were added."], "the policy must ask for two"
    root = parse(run_page({}, events, counter))
    written = root.all("details", "summary")
    assert len(written) == 2 and "Summary written by the model for policy compact:550" in written[0].one("summary").text
    assert "summarised" in [span.text for span in root.all("span", "tag")]
    assert [cell.text for cell in root.one("table", "outcome").all("td")][4:6] == ["4", "7 (2 summary)"]


def test_a_chat_shows_every_question_the_reset_and_a_total_row(counter):
    events = session("full", ARITHMETIC, reset_before=2)
    root = parse(run_page({}, events, counter))
    assert [h2.text for h2 in root.all("h2", "question")] == [f"Question: {q}" for q, _ in ARITHMETIC]
    assert len(root.all("h2", "reset")) == 1 and len(root.all("section", "call")) == 7
    rows = [[cell.text for cell in row.all("td")] for row in root.one("table", "outcome").all("tr")[1:]]
    assert [row[2] for row in rows] == ["47", "4", "9", ""] and rows[-1][1] == "all questions"
    assert [row[5] for row in rows] == ["3", "2", "2", "7"]
    assert root.all("section", "call")[0].one("h3").text.startswith("Call 1 · step 1")
    assert root.all("section", "call")[3].one("h3").text.startswith("Call 4 · step 1")  # steps restart, calls go on


def test_stop_reasons_errors_retries_and_unknown_events(counter):
    ttl = session("full", [("Loop.", ["Action: add_numbers(1, 1)", "Action: add_numbers(2, 2)"])], ttl=2)
    unreadable = session("full", [("Say nothing.", ["hm", "hm?", "hm!"])])
    assert parse(run_page({}, ttl, counter)).one("span", "stop").text == "ttl"
    assert parse(run_page({}, unreadable, counter)).one("span", "stop").text == "format_errors"
    stuck = session("full", [("Loop.", ["Action: add_numbers(1, 1)"] * 5)])
    assert parse(run_page({}, stuck, counter)).one("span", "stop").text == "stuck"

    class Failing:
        name, usage_source, backend, window = "failing", "none", "gemini", None

        def generate(self, messages, stop, **callbacks):
            raise ModelError("503 UNAVAILABLE after 5 attempts")
    agent = TinyReAct(Failing(), tools=[add_numbers], counter=counter)
    agent.query("Anything?")
    events = list(agent.trace.events)
    at = next(i for i, event in enumerate(events) if event["type"] == "context") + 1
    events[at:at] = [{"type": "retry", "backend": "gemini", "status": 503, "reason": "UNAVAILABLE", "message": "busy",
                      "attempt": 2, "attempts": 4, "wait": 2.3, "t": 0.1},
                     {"type": "retry", "backend": "openai", "message": "no attempt count", "t": 0.1},
                     {"type": "telemetry-of-the-future", "text": "never shown", "t": 0.1}]
    root = parse(run_page({}, events, counter))
    assert root.one("span", "stop").text == "error"
    assert root.one("p", "error").text == "error: 503 UNAVAILABLE after 5 attempts"
    assert [p.text for p in root.all("p", "notice")] == ["Gemini 503 UNAVAILABLE — attempt 2/4 in 2.3 s",
                                                         "retry: backend openai · message no attempt count"]
    assert "never shown" not in root.text


def test_the_page_takes_the_stop_reason_from_the_trace_and_reads_older_traces_without_one(counter):
    class TooLong:
        name, usage_source, backend, window = "tiny", "its tokenizer", "local", 10

        def generate(self, messages, stop, **callbacks):
            raise ContextOverflow("the context is 900 tokens, more than tiny's window of 10")
    agent = TinyReAct(TooLong(), tools=[add_numbers], counter=counter)
    agent.query("Anything?")
    assert agent.trace.events[-1] == {"type": "stop", "reason": "context_overflow", "answer": None,
                                      "t": agent.trace.events[-1]["t"]}
    assert parse(run_page({}, agent.trace.events, counter)).one("span", "stop").text == "context_overflow"
    answered = session("full", [("One plus one?", ["Action: add_numbers(1, 1)", "Answer: 2"])])
    older = [event for event in answered if event["type"] != "stop"]  # a trace written before the stop event
    assert len(older) == len(answered) - 1
    for events in (answered, older):
        root = parse(run_page({}, events, counter))
        assert root.one("span", "stop").text == "answer" and "<b>2</b>" in run_page({}, events, counter)


def test_an_interrupted_run_and_a_trace_without_context_events(super_bowl, counter):
    _, events, _ = super_bowl
    cut = next(i for i, event in enumerate(events) if event["type"] == "context" and i > 20)
    interrupted = [*events[:cut + 1], {"type": "error", "message": "interrupted", "t": 9}]
    root = parse(run_page({}, interrupted, counter))
    assert root.one("span", "stop").text == "interrupted"
    last = root.all("section", "call")[-1]
    assert last.all("p", "error")[0].text == "error: interrupted" and last.all("p", "thought") == []
    assert last.one("details", "context")  # what the model had been shown when the run was stopped

    bare = [event for event in events if event["type"] != "context"]  # as if recorded before context events existed
    root = parse(run_page({}, bare, counter))
    calls = root.all("section", "call")
    assert len(calls) == 7 and root.all("div", "bar") == [] and calls[-1].one("p", "answer")
    usage = [event for event in events if event["type"] == "usage"]
    assert [call.one("p", "usage").text for call in calls] == [
        f"billed: {event['input_tokens']:,} tokens in, {event['output_tokens']:,} out" for event in usage]


def test_a_query_s_own_events_without_the_instructions_still_make_a_page(counter):
    result = TinyReAct(ScriptedModel(["Action: add_numbers(1, 2)", "Answer: 3"]), tools=[add_numbers],
                       counter=counter).query("1 + 2?")
    root = parse(run_page({}, result.trace, counter))  # a Result's trace starts at its question
    calls = root.all("section", "call")
    assert len(calls) == 2 and len(root.all("div", "bar")) == 2 and root.all("details", "context") == []
    assert root.one("p", "answer").text == "Answer: 3"
    assert all(call.one("p", "warning").text.startswith("only its counts are shown") for call in calls)


def test_a_policy_switched_during_a_chat_is_said(counter):
    model = ScriptedModel(["Answer: 1", "Answer: 2"])
    agent = TinyReAct(model, tools=[add_numbers], counter=counter)
    agent.query("One?")
    agent.use_policy(make_policy("window:1"))
    agent.query("Two?")
    root = parse(run_page({}, agent.trace.events, counter))
    assert root.one("p", "policy-change").text == "The policy changes from full to window:1"
    assert ([call.one("h3").text.split(" · ")[2] for call in root.all("section", "call")]
            == ["policy full", "policy window:1"])


# ---------------------------------------------------------------- hostile text and keys

def test_hostile_text_stays_text_everywhere(counter, monkeypatch):
    def fetch(page: str) -> str:
        """Returns the page."""
        return f"{HOSTILE} {page}"
    replies = [f'Thought: {HOSTILE}\nAction: fetch("{HOSTILE.replace(chr(34), "")}")', f"Answer: {HOSTILE}"]
    events = session("full", [(HOSTILE, replies)], tools=[fetch])
    events.insert(3, {"type": "retry", "backend": HOSTILE, "message": HOSTILE, "t": 0})
    for page in [run_page({"title": HOSTILE, "model": HOSTILE}, events, counter),
                 compare_page([({"policy": "full", "model": HOSTILE}, events)], counter, expect=HOSTILE),
                 replay_page({"title": HOSTILE, "facts": [{"id": HOSTILE, "text": HOSTILE}]}, events,
                             replay({}, events, ["full"], counter), counter, model=HOSTILE,
                             facts=[Fact(HOSTILE, HOSTILE, gold="x", phrasings=[HOSTILE])],
                             points=probe_points({}, events),
                             answers=[ProbeAnswer(HOSTILE, HOSTILE, HOSTILE, 1, 1, HOSTILE, HOSTILE, "refusal", 1),
                                      ProbeAnswer("full", "p", HOSTILE, 1, 1, HOSTILE, HOSTILE * 9, "other", 1)])]:
        root = parse(page)  # fails on any end tag that closes the wrong element
        assert root.all("img") == [] and not any("onerror" in node.attrs for node in root.all())
        assert [node.attrs.get("id") for node in root.all("script")] == ["page-data", None]
        assert root.one("head").one("title").text.endswith(HOSTILE)  # the title, as text
        assert HOSTILE in root.text  # shown, as text
        data = page_data(root)
        assert any(HOSTILE in text for text in data["texts"])  # stored, as text, and read back whole
        assert "</" not in next(n for n in root.all("script") if n.attrs.get("id") == "page-data").text


# Control characters a page must show where they stand: C0, DEL and C1, CSI (U+009B) and OSC (U+009D) among them;
# U+009D is what UTF-8 read as Latin-1 leaves in scraped text ("â\x80\x9d" for a closing quote).
CONTROLS = st.sampled_from([chr(code) for code in [*range(0, 9), 11, 12, *range(14, 32), *range(127, 160)]])


def every_page(text: str, counter) -> list[str]:
    """The run, comparison and replay pages of a session whose question, replies and tool output hold `text`."""
    def fetch(page: str) -> str:
        """Returns the page."""
        return f"page {text} ends here"
    events = session("full", [(f"ask {text} now", [f'Thought: {text}\nAction: fetch("x")', f"Answer: {text} done"])],
                     tools=[fetch])
    return [run_page({"title": text}, events, counter), compare_page([({"policy": "full"}, events)], counter),
            replay_page({"title": text}, events, replay({}, events, ["full", "window:1"], counter), counter)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(CONTROLS, st.sampled_from(["x", "\x07", "\x1b\\", "\x9c", "[", "]", "0;"])), max_size=8))
def test_a_control_character_in_any_text_is_shown_where_it_stands_and_takes_nothing_after_it(counter, pieces):
    text = "".join(pieces)
    for page in every_page(f"<{text}>", counter):
        assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", page)  # none left for a terminal to obey
        root = parse(page)  # the markup is whole
        data = page_data(root)  # and its data still parses
        everything = " ".join(data["texts"])
        assert "ends here" in everything  # what came after it, whole
        assert " done" in root.text or "Replay" in root.one("head").one("title").text  # a replay has no call after it
        assert any(f"ask <{text}> now" in stored for stored in data["texts"])  # stored exactly, read back whole
        if "Replay" not in root.one("head").one("title").text:  # shown visibly (a preview folds whitespace)
            assert (f"ask <{visible(text)}> now" in root.text
                    or f"ask <{' '.join(visible(text).split())}> now" in root.text)


def test_mojibake_holding_an_osc_keeps_the_page_whole(counter):
    scraped = "He said \u00e2\u0080\u009dhello\u00e2\u0080\u009d and left."  # UTF-8 quotes read as Latin-1
    for page in every_page(scraped, counter):
        root = parse(page)
        assert "hello" in root.text and "and left." in root.text
        assert any("hello" in text and "and left." in text for text in page_data(root)["texts"])


def test_api_keys_in_the_environment_never_reach_the_page(counter, monkeypatch):
    key = "AIzaSy-not-a-real-key-0123456789"
    monkeypatch.setenv("GEMINI_API_KEY", key)
    events = session("full", [(f"my key is {key}", [f"Thought: the key {key}\nAnswer: noted"])])
    events.append({"type": "error", "message": f"rejected key {key}", "t": 1})
    for page in [run_page({"title": key}, events, counter), compare_page([({}, events)], counter)]:
        assert key not in page and "***" in page


# ---------------------------------------------------------------- size

def copies(page: str, text: str) -> int:
    """How often `text` is in the page, as HTML or as a JSON string."""
    return sum(page.count(form) for form in {html.escape(text), inert_json(text)[1:-1]})


def test_each_distinct_text_is_stored_once(long_run):
    _, events, page = long_run
    instructions = next(event["text"] for event in events if event["type"] == "instructions")
    longest = max((event["text"] for event in events if event["type"] == "observation"), key=len)
    assert copies(page, instructions) == 1  # shown in all 84 contexts, stored once
    # An observation is stored as the tool returned it (its fold) and as the model saw it ("Observation5: ..."), which
    # all later contexts share: twice, whatever the number of calls.
    assert (copies(page, longest) == 2
            and sum(call_fold.count(longest) for call_fold in page_data(parse(page))["texts"]) == 2)
    assert len(page.encode()) < 1_000_000


def test_long_replay_page_stays_small(long_replay):
    _, events, _, page = long_replay
    instructions = next(event["text"] for event in events if event["type"] == "instructions")
    assert copies(page, instructions) == 1  # in 5 policies × 84 contexts, stored once
    assert len(page.encode()) < 2_000_000


# ---------------------------------------------------------------- the comparison page

def test_comparison_page_puts_each_policy_in_a_column(tmp_path, counter):
    traces = compare_traces(str(tmp_path))
    root = parse(compare_page(traces, counter, expect="Superdome"))
    rows = [[cell.text for cell in row.all("td")] for row in root.one("table", "totals").all("tr")[1:]]
    assert [row[0] for row in rows] == ["full", "window:1", "elide:1"]
    assert [row[2] for row in rows] == ["✓ right", "✗ wrong", "✗ wrong"]  # only full's answer names the stadium
    assert [row[5] for row in rows] == ["7", "7", "7"]
    grid = root.one("table", "side-by-side")
    assert [th.text for th in grid.one("thead").all("th")] == ["", "full", "window:1", "elide:1"]
    body = grid.one("tbody").all("tr")
    assert len(body) == 7 and all(len(row.all("td")) == 3 for row in body)
    sizes = [[int(span.text.replace(",", "")) for span in row.all("span", "size")] for row in body]
    assert sizes[0][0] == sizes[0][1] == sizes[0][2]  # the first call is the same under every policy
    assert sizes[-1][1] < sizes[-1][2] < sizes[-1][0]  # then window:1 < elide:1 < full
    data = page_data(root)
    assert sum(text.startswith("You answer the user's question") for text in data["texts"]) == 1


# ---------------------------------------------------------------- the replay page

def test_replay_page_plots_every_measured_policy_with_probe_points(long_replay):
    header, _, reports, page = long_replay
    svg = parse(page).one("svg", "plot")
    lines = svg.all("polyline", "policy")
    assert ([line.one("title").text.split(": peak")[0] for line in lines]
            == ["full", "window:2", "user-only:4", "elide:2", "pinned"])
    widths = [float(line.attrs["stroke-width"]) for line in lines]
    assert widths == sorted(widths, reverse=True) and len({line.attrs["stroke-dasharray"] for line in lines}) == 5
    assert len(svg.all("line", "probe")) == len(header["probe_points"]) == 4
    assert len(svg.all("circle")) == 5 * 4
    full = next(report for report in reports if report.policy == "full")
    assert f"peak {full.peak:,}" in lines[0].one("title").text
    assert "compact:2000: not measured" in parse(page).one("p", "warning").text  # it needs a model to write summaries


def test_replay_page_fact_table(long_replay):
    _, _, reports, page = long_replay
    tables = {table.attrs["data-fact"]: table for table in parse(page).all("table", "facts")}
    assert list(tables) == ["instruction", "sintra", "booking", "distractor"]
    rows = {}
    for fact, table in tables.items():
        assert [th.text for th in table.one("thead").all("th")] == [
            "policy", "call 31 (turn 12)", "call 55 (turn 20)", "call 72 (turn 26)", "call 84 (turn 32)"]
        rows[fact] = {row.one("th").text: [cell.text for cell in row.all("td")] for row in table.one("tbody").all("tr")}
        assert list(rows[fact]) == ["full", "window:2", "user-only:4", "elide:2", "pinned"]
        for report in reports[:5]:  # point by point, as replay found them
            assert [cell.split()[1] for cell in rows[fact][report.policy]] == list(report.facts[fact].values())
    assert rows["instruction"]["full"] == ["✓ kept"] * 4  # the user's instruction, at each of the four probe points
    # Gone from the window's context since call 5 (stated at call 3, the window of 2 steps moved on): the cell links
    # to that call's row among the policy's calls.
    assert rows["instruction"]["window:2"] == ["✗ gone left at call 5"] * 4
    root = parse(page)
    link = next(a for a in root.all("a", "left") if a.attrs["href"] == "#call-window-2-5")
    assert any(row.attrs.get("id") == "call-window-2-5" for row in root.all("tr")) and link.text == "left at call 5"
    assert rows["sintra"]["full"][0] == "– unstated"  # Sintra's temperature comes after call 31


def test_replay_page_names_every_fact_state_and_marks_an_unknown_one(counter):
    header, events = read_trace_file(SUPER_BOWL)
    reports = [PolicyReplay(name, sizes=[10] * 7, calls=[{"user": 10}] * 7,
                            facts={"temperature": {"call 7 (turn 1)": state}})
               for name, state in [("full", "cut"), ("window:1", "partly"), ("elide:1", "lost in a future version")]]
    cells = parse(replay_page(header, events, reports, counter)).one("table", "facts").all("td")
    assert [cell.text for cell in cells] == ["✂ cut", "◐ partly", "? unknown"]
    assert cells[0].attrs["title"] == ("cut: the observation stating it was shown cut by the observation cap, without "
                                       "it: lost to the cap (a setting of the replay, --observation-cut), not to the "
                                       "policy")


def test_replay_page_shows_every_probe_answer_with_its_verdict(counter):
    header, events = read_trace_file(SUPER_BOWL)
    facts, declared = load_facts(header)
    points = probe_points(declared, events)
    specs = ["full", "window:1"]
    # Asked condition by condition: the closed book's six phrasings, the facts only's, then each policy's.
    model = ScriptedModel([reply for reply in ["Answer: I don't know.", "Answer: 15.5", "Answer: It was 15.5 °C",
                                               "Answer: 20 °C"] for _ in range(6)])
    answers = probe(events, specs, model, facts, points, counter=counter)
    assert not model.unused
    root = parse(replay_page(header, events, replay(header, events, specs, counter), counter, facts=facts,
                             points=points, answers=answers, model="scripted"))
    scores = {row.all("td")[0].text: row.all("td")[1] for row in root.one("table", "scores").one("tbody").all("tr")}
    assert list(scores) == ["closed book", "facts only", "full", "window:1"]
    assert scores["full"].one("span", "score").text == "6/6" and scores["window:1"].text.startswith("0/6")
    assert "6 refusal" in scores["closed book"].text and "6 other" in scores["window:1"].text
    every = {block.one("summary").text: block for block in root.all("details", "answers")}
    assert list(every) == [f"Every answer under {name} (6)" for name in scores]
    row = every["Every answer under window:1 (6)"].one("tbody").all("tr")[0]
    assert [cell.text for cell in row.all("td")] == ["call 7 (turn 1)", "temperature 1", "1", "20 °C", "other"]
    assert "What temperature in Celsius did the weather tool report?" in root.one("details", "phrasings").text


def test_replay_page_has_every_call_of_every_policy_folded(long_replay):
    _, events, reports, page = long_replay
    root = parse(page)
    data = page_data(root)
    blocks = root.all("details", "policy-calls")
    assert len(blocks) == 5
    window = blocks[1]
    assert window.all("summary")[0].text.startswith("window:2: 84 calls")
    rows = window.all("tr")
    assert len(rows) == 84 and len([row for row in rows if "probe-point" in row.classes]) == 4
    sizes = [int(row.one("span", "size").text.replace(",", "")) for row in rows]
    assert sizes == next(report.sizes for report in reports if report.policy == "window:2")
    last = rows[-1].one("details", "context")
    replies = [i for i, event in enumerate(events) if event["type"] == "reply"]
    assert (context_text(data, int(last.attrs["data-context"]))
            == parts_of(make_policy("window:2").render(events[:replies[-1]])))


# ---------------------------------------------------------------- in a real browser

@pytest.mark.slow
@pytest.mark.skipif(missing() is not None, reason=f"no headless browser: {missing()}")
def test_pages_render_in_chromium_without_errors_and_fold_open(tmp_path, counter, super_bowl, long_replay):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    hostile = session("full", [(HOSTILE, [f"Thought: {HOSTILE}\nAnswer: {HOSTILE}"])])
    controls = "".join(chr(code) for code in [*range(1, 9), 11, 12, *range(14, 32), *range(127, 160)])
    run, compared, replayed = every_page(f"\u00e2\u0080\u009d{controls}", counter)
    pages = {"run": super_bowl[2], "replay": long_replay[3],
             "compare": compare_page(compare_traces(str(tmp_path)), counter),
             "hostile": run_page({"title": "hostile"}, hostile, counter),
             "controls run": run, "controls compare": compared, "controls replay": replayed}
    with chromium() as driver:
        for kind, page in pages.items():
            path = tmp_path / f"{kind}.html"
            path.write_text(page, encoding="utf-8")
            driver.get(path.as_uri())
            problems = [entry for entry in driver.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]
            assert problems == [], kind
            assert driver.title != "pwned" and driver.title != "1", kind
            shot = tmp_path / f"{kind}.png"
            assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000, kind

            folded = driver.find_elements(By.CSS_SELECTOR, "details.context")[0]
            if kind.endswith("replay"):
                driver.find_elements(By.CSS_SELECTOR, "details.policy-calls > summary")[0].click()
            folded.find_element(By.TAG_NAME, "summary").click()
            assert folded.get_attribute("open") is not None, kind
            # The page fills a fold on its "toggle" event, which the browser fires in a task of its own after the
            # click: wait for it rather than read the fold before it can be filled.
            shown = WebDriverWait(driver, 10, poll_frequency=0.02).until(
                lambda _: folded.find_elements(By.CSS_SELECTOR, ".body pre"), message=f"{kind}: the fold stayed empty")
            assert shown and shown[0].text.startswith("You answer the user's question"), kind
            labels = [label.text for label in folded.find_elements(By.CSS_SELECTOR, ".part-label")]
            assert labels[0].startswith("[system · instructions ·") and labels[0].endswith("tokens]"), kind
            folded.find_element(By.TAG_NAME, "summary").click()
            assert folded.get_attribute("open") is None, kind
            if kind == "hostile":
                answer = driver.find_element(By.CSS_SELECTOR, "p.answer")
                assert HOSTILE in answer.text and not driver.find_elements(By.TAG_NAME, "img")
            driver.find_element(By.ID, "open-all").click()
            assert driver.execute_script("return [...document.querySelectorAll('details')].every(d => "
                                         "d.open === !d.matches('.context'))"), kind
            assert driver.get_log("browser") == [], kind


@pytest.mark.slow
@pytest.mark.skipif(missing() is not None, reason=f"no headless browser: {missing()}")
def test_the_replay_page_finds_text_in_closed_folds_and_its_links_open_the_call(tmp_path, long_replay):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    path = tmp_path / "replay.html"
    path.write_text(long_replay[3], encoding="utf-8")
    with chromium() as driver:
        driver.get(path.as_uri())
        assert driver.find_element(By.CSS_SELECTOR, "svg.tradeoff").is_displayed()
        assert driver.find_elements(By.CSS_SELECTOR, "table.missing")[1].is_displayed()
        find = driver.find_element(By.CSS_SELECTOR, "#find input")
        find.send_keys("kx-4471-b", Keys.ENTER)
        assert re.fullmatch(r"opened \d+ folds that hold it: Ctrl-F finds it now",
                            driver.find_element(By.ID, "found").text)
        opened, holding, shown = driver.execute_script(
            "const open = [...document.querySelectorAll('details.context[open]')];"
            "return [open.length, open.filter(d => d.querySelector('.body').textContent.includes('KX-4471-B')).length,"
            " open.filter(d => d.checkVisibility()).length];")
        assert opened > 0 and holding == opened and shown == opened  # the policy's fold around each opened too
        find.clear()
        find.send_keys("no such text anywhere", Keys.ENTER)
        assert driver.find_element(By.ID, "found").text == "no closed fold holds it"

        driver.find_element(By.ID, "close-all").click()
        link = driver.find_elements(By.CSS_SELECTOR, "a.left")[0]
        target = link.get_attribute("href").split("#")[1]
        link.click()
        row = driver.find_element(By.ID, target)
        assert row.is_displayed() and row.text.startswith(link.text.replace("left at ", ""))
        assert driver.get_log("browser") == []


def test_comparison_page_says_what_changed_at_each_call_of_each_policy(tmp_path, counter):
    """As the run page does for one run: each cell names what its policy added, dropped or elided since the call
    before, so that where the policies part ways can be read across a row."""
    root = parse(compare_page(compare_traces(str(tmp_path)), counter))
    body = root.one("table", "side-by-side").one("tbody").all("tr")
    tags = [[{span.text.split()[-1] for span in cell.one("details", "diff").all("summary")[0].all("span", "tag")}
             for cell in row.all("td")] for row in body]
    assert tags[0] == [{"instructions", "added"}] * 3  # the first call is the same under every policy
    assert all(row[0] == {"added"} for row in tags[1:])  # full history only ever adds
    assert any("dropped" in row[1] for row in tags[1:]) and any("marker" in row[1] for row in tags[1:])  # window:1
    assert any("elided" in row[2] for row in tags[1:])  # elide:1
    dropped = body[-1].all("td")[1].one("details", "diff").all("li")
    assert any("dropped" in item.one("span", "tag").text for item in dropped)


def test_the_outcome_table_shows_cached_tokens_and_the_cost_at_list_price(counter):
    from models import ModelReply

    class Priced:
        name, backend, usage_source, window, temperature = "gemini-3.5-flash-lite", "gemini", "billed", None, None

        def generate(self, messages, stop, **callbacks):
            return ModelReply("Answer: 4", input_tokens=2000, output_tokens=10, cached_tokens=1500)
    agent = TinyReAct(Priced(), tools=[add_numbers], counter=counter)
    agent.query("What is 2 + 2?")
    page = run_page({"model": "gemini-3.5-flash-lite", "backend": "gemini"}, agent.trace.events, counter)
    cells = [cell.text for cell in parse(page).all("td")]
    assert "2,000 (1,500 cached) / 10" in cells
    assert "$0.00022" in cells  # 500 × $0.30 + 1,500 × $0.03 + 10 × $2.50, per million
    unpriced = run_page({"model": "some-model", "backend": "openai"}, agent.trace.events, counter)
    assert "–" in [cell.text for cell in parse(unpriced).all("td")]


def test_each_call_says_how_long_it_took_and_a_local_model_s_page_says_nothing_is_billed(counter):
    from models import ModelReply

    class Local:
        name, backend, usage_source, window, temperature = "tiny", "local", "its tokenizer", None, 0.0

        def generate(self, messages, stop, **callbacks):
            return ModelReply("Answer: 4", input_tokens=20, output_tokens=3)
    agent = TinyReAct(Local(), tools=[add_numbers], counter=counter)
    result = agent.query("What is 2 + 2?")
    assert len(result.call_seconds) == 1 and 0 <= result.call_seconds[0] < 5
    assert result.to_dict()["call_seconds"] == result.call_seconds
    page = run_page({"model": "tiny", "backend": "local"}, agent.trace.events, counter)
    usage = parse(page).one("p", "usage").text
    assert re.fullmatch(r"counted, nothing billed: 20 tokens in, 3 out · \d+\.\d\d s", usage)
    assert "tokens in / out (counted, nothing billed)" in page and ">billed:" not in page
    billed = run_page({"model": "m", "backend": "gemini"}, agent.trace.events, counter)
    assert parse(billed).one("p", "usage").text.startswith("billed: 20 tokens in, 3 out · ")


def test_the_replay_page_says_its_calls_take_no_time(long_replay):
    assert "no call takes any time: the replies were recorded, not asked" in long_replay[3]


def test_the_replay_page_shows_the_cost_with_and_without_prompt_caching(counter):
    from models.prices import Price, price_of

    header, events = read_trace_file(SUPER_BOWL)
    reports = replay(header, events, ["full", "window:2"], counter)
    root = parse(replay_page(header, events, reports, counter,
                             priced=[("gemini-3.8-flash", price_of("gemini-3.8-flash"))]))
    rows = {row.all("td")[0].text: [cell.text for cell in row.all("td")[1:]]
            for row in root.one("table", "caching").one("tbody").all("tr")}
    # the share read from the cache, the calls it had expired for, the cost without and with it, what it saved
    assert rows["window:2"][0] == "0%" and rows["window:2"][2] == rows["window:2"][3]  # nothing repeats: no saving
    assert rows["window:2"][1] == "0"  # recorded in seconds: no call came after its cache had expired
    price = price_of("gemini-3.8-flash")
    assert reports[0].peak < 4096 and rows["full"][0] == "0%" and rows["full"][2] == rows["full"][3]  # all under 4,096
    said = replay_page(header, events, reports, counter, priced=[("gemini-3.8-flash", price)])
    assert "by gemini-3.8-flash's rule: a repeated prefix of 4,096 tokens or more is read at $0.075" in said
    assert "the price holds until 2026-12-31" in said
    from experiments.provenance import provenance
    setup = provenance(SUPER_BOWL, None, [("gemini-3.8-flash", price)])
    shown = parse(replay_page(header, events, reports, counter, priced=[("gemini-3.8-flash", price)], setup=setup))
    assert "observations cut at 2,000 characters · costs at gemini-3.8-flash" in shown.one("p", "setup").text
    cheap = ("a 1,024 minimum", Price(0.75, 0.075, 3.75, "", "", min_cache_tokens=1024))
    both = parse(replay_page(header, events, reports, counter, priced=[("gemini-3.8-flash", price), cheap]))
    gemini_rows, cheap_rows = [{row.all("td")[0].text: [cell.text for cell in row.all("td")[1:]]
                                for row in table.one("tbody").all("tr")} for table in both.all("table", "caching")]
    assert gemini_rows == rows  # the first rule's table as before, the second's after it
    assert cheap_rows["full"][0] == f"{reports[0].cacheable(cheap[1]) / reports[0].total:.0%}" != "0%"
    assert cheap_rows["full"][3] < cheap_rows["full"][2]
    # one panel of cost with caching against facts kept for each rule, each named for its model
    panels = [text.text for text in both.one("svg", "tradeoff").all("text") if "prompt caching" in text.text]
    assert panels == ["input cost with prompt caching, gemini-3.8-flash",
                      "input cost with prompt caching, a 1,024 minimum"]


def test_a_chat_page_is_titled_a_chat_and_its_total_time_is_the_time_spent_answering(counter):
    events = session("full", [("One plus one?", ["Answer: 2"]), ("Two plus two?", ["Answer: 4"])])
    question = [i for i, event in enumerate(events) if event["type"] == "question"][1]
    typed = [dict(event) for event in events]
    for event in typed[question:]:  # the user took a minute to type the second question
        event["t"] += 60
    root = parse(run_page({}, typed, counter))
    assert root.one("h1").text == "Chat: One plus one? and 1 more"
    total = root.one("table", "outcome").one("tbody").all("tr")[-1].all("td")[-1].text
    assert total.endswith("s answering") and float(total.split()[0]) < 5


def test_a_reply_that_answers_is_not_called_a_step(counter):
    events = session("full", [("One plus one?", ["Action: add_numbers(1, 1)", "Answer: 2"])])
    headings = [h.text for h in parse(run_page({}, events, counter)).all("h3")]
    assert [h.split(" · ")[1] for h in headings] == ["step 1", "the answer"]  # 1 step, as the terminal says
    assert "step 2" not in " ".join(headings)


def test_the_replay_page_plots_cost_against_what_is_kept_and_names_the_frontier(counter):
    header, events = read_trace_file(LONG)
    facts, declared = load_facts(header, os.path.join(ROOT, "conversations", "long.facts.json"))
    points = probe_points(declared, events)
    specs = ["full", "window:2", "user-only:4", "elide:2", "budget:2000", "window:0+facts", "retrieve:3"]
    reports = replay(header, events, specs, counter, facts, points)
    root = parse(replay_page(header, events, reports, counter, facts=facts, points=points))
    assert len(root.one("svg", "tradeoff").all("circle", "policy")) == len(specs)
    [sentence] = [p.text for p in root.all("p", "frontier")]
    assert sentence.startswith("On the frontier, from the cheapest (input tokens, all calls, facts kept): window:2 "
                               "(90,766, 0%); user-only:4 (128,139, 70%); retrieve:3 (128,693, 85%); window:0+facts "
                               "(132,394, 100%).")
    assert len(root.one("svg", "multiples").all("polyline", "policy")) == len(specs)  # more than 6: small multiples


def test_the_replay_page_lists_what_each_policy_lacks_that_full_history_holds_with_the_facts_marked(long_replay):
    root = parse(long_replay[3])
    tables = root.all("table", "missing")
    assert len(tables) == 4  # one per probe point: before calls 31, 55, 72 and 84
    at_55 = {row.one("th").text: row for row in tables[1].one("tbody").all("tr")}
    assert set(at_55) == {"window:2", "user-only:4", "elide:2", "pinned"}
    lacking = at_55["window:2"]
    assert (lacking.all("td")[0].text.endswith("tokens")
            and int(lacking.all("td")[0].text.split()[0].replace(",", "")) > 20)
    marks = [mark.text for mark in lacking.all("mark")]
    assert "13.7 °C" in marks and "KX-4471-B" in marks  # the Sintra reading and the booking, gone from the window
    assert at_55["elide:2"].all("td")[1].text == "no part that holds a planted fact"  # elide keeps every fact
