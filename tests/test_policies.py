"""Context policies: the invariants every policy keeps (property tests over random sessions), and exactly
what each one keeps and forgets."""
import copy
import os
import sys
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agent import TinyReAct
from models import Message, ModelError, ModelReply
from models.scripted import ScriptedModel
from policies import POLICIES, POLICY_HELP, Policy, make_policy, measure
from policies.invariants import Checker, violations
from tokens import count_tokens
from policies.base import written as written_as
from policies.budget import ORDER_NOTE
from policies.rendering import NOT_SHOWN, View, assemble, lay_out, read_conversation
from policies.window import hide_all_but_recent
from tools.arithmetic import add_numbers, multiply_numbers

def written(name: str, kind) -> st.SearchStrategy:
    """A registered policy as the command line writes it: its bare name, or with one of its trial arguments."""
    with_argument = [st.sampled_from(kind.trial_arguments).map(f"{name}:{{}}".format)] if kind.trial_arguments else []
    return st.one_of(st.just(name), *with_argument)


# Every registered policy, so that one added to POLICIES is held to the invariants with no change here.
COMPOSABLE = st.one_of([written(name, kind) for name, kind in POLICIES.items() if kind.composable])
SPECS = st.one_of(
    COMPOSABLE,
    *[written(name, kind) for name, kind in POLICIES.items() if not kind.composable],
    st.lists(COMPOSABLE, min_size=2, max_size=3).map("+".join),  # composed: the invariants hold for the result too
)


def fetch(page: str) -> str:
    """Returns a long text for any page name.
    Example: fetch("a") returns "a a a ..."."""
    return (page + " ") * 300


def record(name: str) -> str:
    """Returns a short record of two lines.
    Example: record("ada") returns "name: ada" and "city: London" on two lines."""
    return f"name: {name}\ncity: London"


REPLIES = st.one_of(
    st.builds(lambda x, y: f"Thought: add\nAction: add_numbers({x}, {y})", st.integers(-99, 99), st.integers(-99, 99)),
    st.builds(lambda x: f"Action: multiply_numbers({x}, 2)", st.integers(0, 9)),
    st.builds(lambda p: f'Thought: read\nAction: fetch("{p}")', st.sampled_from(["alpha", "beta"])),
    st.builds(lambda p: f'Action: record("{p}")', st.sampled_from(["ada", "alan"])),  # short, but two lines
    st.builds(lambda t: f'Action: pin_note("{t}")', st.sampled_from(["code 4471", "name Ada", ""])),
    st.builds(lambda i: f"Action: unpin_note({i})", st.integers(0, 3)),
    st.builds(lambda w: f'Action: forget("{w}")', st.sampled_from(["fetch", "add_numbers", "alpha", "nothing"])),
    st.sampled_from(["Action: no_such_tool(1)", "Action: add_numbers(", "I am confused.", "",
                     "Thought: x\nAction: add_numbers(1, 1)\nObservation: 3\nAnswer: 3"]),
    st.builds(lambda a: f"Thought: done\nAnswer: {a}", st.text(min_size=1, max_size=20).filter(str.strip)),
)


class DrawingModel:
    """A model whose replies hypothesis draws; it records each call with the trace length at that moment."""
    name, backend, usage_source, window = "drawing", "test", "drawn by hypothesis", None

    def __init__(self, data):
        self.data, self.agent, self.calls = data, None, []

    def generate(self, messages, stop, **options):
        self.calls.append((len(self.agent.trace), messages))
        if messages[-1].parts[-1].kind == "request" and len(messages) == 1:  # a compact summary request
            return ModelReply(self.data.draw(st.sampled_from(["Summary: code 4471, name Ada.", "", "x" * 500])))
        return ModelReply(self.data.draw(REPLIES), input_tokens=10, output_tokens=3)


def check_invariants(messages, events, ordered=True):
    assert violations(messages, events, ordered) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), spec=SPECS,
       questions=st.lists(st.text(min_size=1, max_size=30).filter(str.strip), min_size=1, max_size=4),
       ttls=st.lists(st.integers(1, 6), min_size=4, max_size=4), reset_after=st.integers(0, 5))
def test_every_policy_keeps_the_invariants_and_renders_purely(data, spec, questions, ttls, reset_after):
    model = DrawingModel(data)
    agent = TinyReAct(model, tools=[add_numbers, multiply_numbers, fetch, record], policy=make_policy(spec))
    model.agent = agent
    for number, question in enumerate(questions):
        if number == reset_after:
            agent.reset()
        agent.ttl = ttls[number]
        agent.query(question, finish=number % 2 == 1)
    events, incremental = agent.trace.events, Checker()
    for length, messages in model.calls:
        if len(messages) == 1:  # a summary request, not a context
            continue
        prefix = copy.deepcopy(events[:length])
        check_invariants(messages, prefix, agent.policy.ordered)
        # A checker that reads only what the trace added since its last call (as replay's does) says the same,
        # on this context and on a broken one
        for shown in (messages, messages[:-1]):
            assert incremental(shown, events[:length], agent.policy.ordered) == violations(shown, prefix,
                                                                                          agent.policy.ordered)
        # Pure and deterministic: the same trace renders the same messages, and the trace is left untouched.
        assert agent.policy.render(prefix) == messages
        assert prefix == events[:length]
        assert_laid_out_as_if_walked(agent.policy, prefix)


def assert_laid_out_as_if_walked(policy, events):
    """A view that hides every step before a point is laid out without walking the turns it hides wholly (the
    conversation's running counts stand in for them): it must show exactly what the same view says step by step."""
    if type(policy).render is not Policy.render:  # compact lays out its own summary
        return
    conversation = read_conversation(events)
    view = policy.choose(conversation, View())
    step_by_step = replace(view, hidden_before=0, hidden={
        step.index: NOT_SHOWN for step in conversation.steps
        if step.index < view.hidden_before and step.index not in view.retrieved} | view.hidden)
    assert lay_out(conversation, view) == lay_out(conversation, step_by_step)


def session(policy, replies, questions):
    model = ScriptedModel(replies)
    agent = TinyReAct(model, tools=[add_numbers, multiply_numbers, fetch], policy=make_policy(policy))
    for question in questions:
        agent.query(question)
    return agent, model


def shown(model, call=-1):
    return [(part.kind, part.text) for message in model.calls[call][1:] for part in message.parts]


FOUR_STEPS = ["Action: add_numbers(1, 1)", "Action: add_numbers(2, 2)", "Answer: done",
              "Action: add_numbers(3, 3)", 'Action: fetch("alpha")', "Answer: ok"]


def test_window_keeps_the_current_question_and_the_last_n_steps():
    _, model = session("window:2", FOUR_STEPS, ["first question", "second question"])
    assert shown(model) == [
        ("placeholder", "[1 earlier question and 3 earlier steps not shown]"),
        ("question", "Question: second question"),
        ("reply", "Action: add_numbers(3, 3)"), ("observation", "Observation1: 6"),
        ("reply", 'Action: fetch("alpha")'), ("observation", "Observation2: " + fetch("alpha")),
    ]


def test_window_shows_the_question_of_a_kept_step_from_an_earlier_turn():
    _, model = session("window:3", FOUR_STEPS, ["first question", "second question"])
    assert shown(model)[:4] == [("question", "Question: first question"),
                                ("placeholder", "[2 earlier steps not shown]"),
                                ("reply", "Answer: done"), ("question", "Question: second question")]


def test_user_only_keeps_every_question_verbatim_and_the_last_n_steps():
    _, model = session("user-only:1", FOUR_STEPS, ["first question", "second question"])
    assert shown(model) == [
        ("question", "Question: first question"), ("placeholder", "[3 earlier steps not shown]"),
        ("question", "Question: second question"), ("placeholder", "[1 earlier step not shown]"),
        ("reply", 'Action: fetch("alpha")'), ("observation", "Observation2: " + fetch("alpha")),
    ]


def test_elide_replaces_old_long_observations_with_a_marker_counted_as_a_marker():
    replies = ['Action: fetch("alpha")', 'Action: fetch("beta")', "Action: add_numbers(1, 2)", "Answer: ok"]
    _, model = session("elide:1", replies, ["read both"])
    assert shown(model) == [
        ("question", "Question: read both"),
        ("reply", 'Action: fetch("alpha")'),
        ("placeholder", 'Observation1: [elided: fetch("alpha") returned 1,800 characters; '
                        'call it again to re-read them]'),
        ("reply", 'Action: fetch("beta")'),
        ("placeholder", 'Observation2: [elided: fetch("beta") returned 1,500 characters; '
                        'call it again to re-read them]'),
        ("reply", "Action: add_numbers(1, 2)"), ("observation", "Observation3: 3"),
    ]
    counts = measure(model.calls[-1], "", count_tokens)
    assert counts["observations"] == count_tokens("Observation3: 3")
    assert counts["markers"] == sum(count_tokens(f'Observation{n}: [elided: fetch("{p}") returned {c} characters; '
                                                 "call it again to re-read them]")
                                    for n, p, c in [(1, "alpha", "1,800"), (2, "beta", "1,500")])


def test_elide_keeps_short_observations_that_are_shorter_than_their_placeholder():
    _, model = session("elide:0", ["Action: add_numbers(1, 2)", "Answer: 3"], ["add"])
    assert ("observation", "Observation1: 3") in shown(model)


@pytest.mark.parametrize("where, notes_at", [("pinned", 0), ("pinned:end", 4)])
def test_pinned_notes_are_shown_at_the_top_or_before_the_current_question(where, notes_at):
    replies = ['Action: pin_note("The locker code is 4471")', "Answer: noted", "Action: add_numbers(1, 1)"]
    agent, model = session(where, replies + ["Answer: 2"], ["My locker code is 4471.", "One plus one?"])
    assert shown(model)[notes_at] == ("notes", "Pinned notes:\n1. The locker code is 4471")
    assert shown(model)[notes_at + 1 if where == "pinned:end" else -3] == ("question", "Question: One plus one?")
    assert "pin_note(text: str) -> str" in model.calls[0][0].text
    assert [e for e in agent.trace.events if e["type"] == "note"][0]["text"] == "The locker code is 4471"


def test_unpin_removes_a_note_and_bad_numbers_are_errors():
    replies = ['Action: pin_note("a")', 'Action: pin_note("b")', "Action: unpin_note(1)", "Action: unpin_note(5)",
               "Answer: x"]
    agent, model = session("pinned", replies, ["notes"])
    assert shown(model)[0] == ("notes", "Pinned notes:\n1. b")
    observations = [e["text"] for e in agent.trace.events if e["type"] == "observation"]
    assert observations == ["Pinned as note 1.", "Pinned as note 2.", "Unpinned note 1.",
                            "Error: there is no note 5; the notes are numbered 1 to 1."]


def test_switching_policy_mid_session_changes_the_tools_and_instructions():
    model = ScriptedModel(["Answer: a", "Answer: b", "Answer: c"])
    agent = TinyReAct(model, tools=[add_numbers])
    agent.query("one")
    agent.use_policy(make_policy("pinned"))
    agent.query("two")
    agent.use_policy(make_policy("window:1"))
    agent.query("three")
    assert ["pin_note" in call[0].text for call in model.calls] == [False, True, False]
    assert [e["type"] for e in agent.trace.events].count("instructions") == 3


def test_reset_starts_a_new_conversation_in_the_same_trace():
    model = ScriptedModel(["Answer: a", "Answer: b"])
    agent = TinyReAct(model, tools=[add_numbers])
    agent.query("the secret is 99")
    agent.reset()
    agent.query("what is the secret?")
    assert "99" not in "".join(m.text for m in model.calls[1])
    assert "the secret is 99" in [e.get("text") for e in agent.trace.events]  # the trace keeps it


def test_compact_asks_the_model_for_a_summary_and_counts_the_call():
    replies = [ModelReply('Action: fetch("alpha")', 500, 10), ModelReply('Action: fetch("beta")', 900, 10),
               ModelReply("Action: add_numbers(1, 2)", 1300, 10),
               ModelReply("Earlier: fetched alpha and beta pages (1,800 and 1,500 characters).", 1100, 20),
               ModelReply("Answer: 3", 400, 5)]
    agent, model = session("compact:1000", replies, ["read and add"])
    summary_call = model.calls[3]
    assert len(summary_call) == 1 and summary_call[0].parts[0].kind == "request"
    assert "keep verbatim" in summary_call[0].text.lower() and fetch("alpha") in summary_call[0].text
    assert shown(model) == [
        ("summary", "Summary of the earlier conversation:\n"
                    "Earlier: fetched alpha and beta pages (1,800 and 1,500 characters)."),
        ("question", "Question: read and add"),
        ("reply", 'Action: fetch("beta")'), ("observation", "Observation2: " + fetch("beta")),
        ("reply", "Action: add_numbers(1, 2)"), ("observation", "Observation3: 3"),
    ]
    result_usage = [e for e in agent.trace.events if e["type"] == "usage"]
    assert [u["purpose"] for u in result_usage] == ["step", "step", "step", "summary", "step"]
    # Replaying the trace renders the same context the model was sent.
    length = next(i for i, e in enumerate(agent.trace.events) if e["type"] == "reply" and e["text"] == "Answer: 3")
    assert agent.policy.render(agent.trace.events[:length - 1]) == model.calls[-1]


def test_compact_summary_call_is_in_the_result_but_not_in_the_ttl():
    replies = [ModelReply('Action: fetch("alpha")', 500, 10), ModelReply('Action: fetch("beta")', 900, 10),
               ModelReply("Action: add_numbers(1, 2)", 1300, 10), ModelReply("summary", 1100, 20),
               ModelReply("Answer: 3", 400, 5)]
    model = ScriptedModel(replies)
    agent = TinyReAct(model, tools=[add_numbers, fetch], policy=make_policy("compact:1000"), ttl=4)
    result = agent.query("read and add")
    assert (result.answer, result.model_calls, result.summary_calls) == ("3", 5, 1)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (4200, 55)


@pytest.mark.parametrize("policy, kept", [("full", True), ("user-only:2", True), ("pinned", True), ("window:2", False)])
def test_a_fact_from_the_first_message_at_turn_twenty(policy, kept):
    first = ['Thought: worth keeping\nAction: pin_note("Locker code: 4471")', "Answer: noted"] if policy == "pinned" \
        else ["Answer: noted"]
    replies = first + [r for n in range(19) for r in (f"Action: add_numbers({n}, 1)", f"Answer: {n + 1}")]
    questions = ["Please remember: my locker code is 4471."] + [f"What is {n} + 1?" for n in range(19)]
    _, model = session(policy, replies, questions)
    context = "\n".join(message.text for message in model.calls[-1])
    assert ("4471" in context) is kept


def test_measure_counts_every_bucket():
    agent, model = session("full", ['Action: fetch("alpha")', "Answer: ok"], ["read"])
    counts = measure(model.calls[-1], agent.trace.events[0]["tools"], count_tokens)
    assert counts["tools"] > 0 and counts["instructions"] > 0
    assert counts["observations"] == count_tokens("Observation1: " + fetch("alpha")) > 300
    assert (counts["user"] == count_tokens("Question: read")
            and counts["model"] == count_tokens('Action: fetch("alpha")'))
    context_events = [e for e in agent.trace.events if e["type"] == "context"]
    assert context_events[-1]["tokens"] == counts and context_events[-1]["counter"] == "Gemma 3 tokenizer, local"


@pytest.mark.parametrize("spec, message", [("window:x", "takes a whole number"), ("nope", "unknown policy"),
                                           ("full:3", "takes no argument"), ("pinned:middle", "top or end"),
                                           ("window:-1", "N >= 0"), ("compact:0", "T >= 1"),
                                           ("compact:900+pinned", "cannot be combined"), ("+pinned", "unknown policy"),
                                           ("budget:0", "T >= 1"), ("retrieve:x", "whole number")])
def test_bad_policy_specs_are_clear_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        make_policy(spec)


def test_every_registered_policy_builds_with_defaults():
    built = {name: make_policy(name).name for name in POLICIES}  # every registered one, any added since included
    assert all(made.split(":")[0] == name for name, made in built.items())
    shipped = {"full": "full", "window": "window:4", "user-only": "user-only:4", "elide": "elide:2", "pinned": "pinned",
               "compact": "compact:8000", "facts": "facts", "retrieve": "retrieve:3", "budget": "budget:4000",
               "forget": "forget"}
    assert {name: built.get(name) for name in shipped} == shipped


class LastStep(Policy):
    """A policy as a newcomer writes it: a name and a choice, no constructor and no reader of its own."""
    name = usage = "last-step"

    def choose(self, conversation, view):
        return hide_all_but_recent(conversation, view, 1)


def test_a_policy_registered_without_a_constructor_works_from_its_first_call(monkeypatch):
    monkeypatch.setitem(POLICIES, "last-step", LastStep)
    model = ScriptedModel(["Action: add_numbers(1, 1)", "Action: add_numbers(2, 2)", "Answer: 4", "Answer: 9"])
    agent = TinyReAct(model, tools=[add_numbers], policy=make_policy("last-step"))
    assert agent.query("two sums?").answer == "4"
    assert shown(model)[-2:] == [("reply", "Action: add_numbers(2, 2)"), ("observation", "Observation2: 4")]
    assert ("reply", "Action: add_numbers(1, 1)") not in shown(model)
    with pytest.raises(ValueError, match="takes no argument"):
        make_policy("last-step:2")


def test_the_help_lists_each_registered_policy_as_it_is_written():
    for name, kind in POLICIES.items():
        assert kind.usage.split(":")[0].split("[")[0].split(" ")[0] == name, f"{kind.__name__}.usage"
        assert kind.usage in POLICY_HELP
        for argument in kind.trial_arguments[:2]:
            make_policy(f"{name}:{argument}")  # what the property tests try is a policy


def test_an_action_left_unrun_by_the_finish_call_is_closed_in_the_next_context():
    model = ScriptedModel(["Action: add_numbers(1, 1)", "Action: add_numbers(2, 2)", "Answer: 4"])
    agent = TinyReAct(model, tools=[add_numbers], ttl=1)
    agent.query("first", finish=True)
    agent.query("second")
    assert shown(model)[-3:] == [("reply", "Action: add_numbers(2, 2)"),
                                 ("observation", "Observation2: [not run: the run had ended]"),
                                 ("question", "Question: second")]


class DownForTheFinish:
    """Acts once, then fails the --finish call, then answers."""
    name, backend, usage_source, window = "down", "test", "test", None

    def __init__(self):
        self.replies, self.calls = [ModelReply("Action: add_numbers(1, 2)"), ModelError("server down"),
                                    ModelReply("Answer: 7")], []

    def generate(self, messages, stop, **options):
        self.calls.append(messages)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


@pytest.mark.parametrize("spec", ["full", "window:4", "facts", "compact:8000"])
def test_a_finish_request_the_model_never_answered_is_not_asked_again_in_a_later_turn(spec):
    model = DownForTheFinish()
    agent = TinyReAct(model, tools=[add_numbers], ttl=1, policy=make_policy(spec))
    agent.query("first", finish=True)  # the TTL runs out, then the finish call fails
    agent.query("what is 3 + 4?")
    assert not any(part.kind == "request" for message in model.calls[-1] for part in message.parts)


@pytest.mark.parametrize("broken, problem", [
    (lambda m: m[1:], "instructions"),
    (lambda m: m[:1] + [Message.of("user", "Question: something else", "question")], "current question"),
    (lambda m: m[:-1], "roles"),
    (lambda m: m[:2] + [Message.of("model", "Action: add_numbers(1, 1)", "reply"),
                        Message.of("user", "[gap]", "placeholder")],
     "action without its observation"),
    (lambda m: m[:-1] + [Message.of("user", "Observation1: 99", "observation")], "does not hold"),
])
def test_the_invariant_checker_catches_each_kind_of_breakage(broken, problem):
    agent, model = session("full", ["Action: add_numbers(1, 1)", "Answer: 2"], ["one plus one"])
    events = agent.trace.events[:-5]  # just before the second call (its context, usage, reply, answer and the stop)
    assert violations(model.calls[-1], events) == []
    assert any(problem in v for v in violations(broken(model.calls[-1]), events))


def test_text_from_before_a_reset_is_not_held_and_a_checker_rereads_a_trace_that_is_not_its_last_one_grown():
    agent, model = session("full", ["Action: add_numbers(1, 1)", "Answer: 2", "Answer: fresh"], ["one plus one"])
    before_reset = agent.trace.events[:-5]  # just before the second call of the first question
    agent.reset()
    agent.query("a new start")
    events = agent.trace.events[:-5]  # just before the call after the reset
    old_step = [Message.of("user", "Question: one plus one", "question"),
                Message.of("model", "Action: add_numbers(1, 1)", "reply"),
                Message.of("user", "Observation1: 2", "observation")]
    forged = model.calls[-1][:1] + old_step + model.calls[-1][1:]
    assert violations(model.calls[-1], events) == []
    assert any("does not hold" in problem for problem in violations(forged, events))
    check = Checker()
    assert check(model.calls[1], before_reset) == []
    assert any("does not hold" in problem for problem in check(forged, events))
    other = [dict(e) for e in events]  # the same events, but not the list read last grown: read from the start
    last = max(i for i, e in enumerate(other) if e["type"] == "instructions")
    other[last] = {**other[last], "text": "Other instructions"}
    assert check(model.calls[-1], other) == violations(model.calls[-1], other) != []


def test_context_growth_follows_the_formulas_the_benchmark_states():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
    from run import context_growth

    rows = {spec: (measured, formula) for spec, _, measured, formula, _ in context_growth()}
    for spec in ("full", "window:4", "user-only:4", "pinned"):
        measured, formula = rows[spec]
        assert abs(measured / formula - 1) < 0.05, spec
    assert rows["window:4"][0] < rows["full"][0] and rows["compact:1200"][0] < rows["full"][0]


# ---------------------------------------------------------------- the policies of the context-engineering essays

def lookup(name: str) -> str:
    """Looks up a name.
    Example: lookup("ada") returns a line about Ada Lovelace."""
    return {"ada": "Ada Lovelace, born 1815 in London", "paris": "Paris is the capital of France. " * 20}[name]


FOUR_TURNS = ['Action: lookup("ada")', "Answer: 1815", 'Action: lookup("paris")', "Answer: Paris",
              "Action: add_numbers(2, 3)", "Answer: 5", "Answer: London"]
QUESTIONS = ["My locker code is 4471. When was Ada born?", "What is the capital of France?", "What is 2 + 3?",
             "Where was Ada born?"]


def essay_session(policy, replies=FOUR_TURNS):
    model = ScriptedModel(replies)
    agent = TinyReAct(model, tools=[add_numbers, lookup], policy=make_policy(policy))
    for question in QUESTIONS:
        agent.query(question)
    return agent, model


def test_facts_composed_with_a_window_keeps_what_the_user_stated_and_short_results():
    _, model = essay_session("window:1+facts")
    assert shown(model) == [
        ("notes", "Key facts, extracted by rule from the conversation:\n- My locker code is 4471.\n"
                  "- lookup(name='ada') returned Ada Lovelace, born 1815 in London\n"
                  "- add_numbers(x=2, y=3) returned 5"),
        ("placeholder", "[2 earlier questions and 4 earlier steps not shown]"),
        ("question", "Question: What is 2 + 3?"), ("placeholder", "[1 earlier step not shown]"), ("reply", "Answer: 5"),
        ("question", "Question: Where was Ada born?"),
    ]  # the Paris page is a document, not a fact: too long for the rule


@pytest.mark.parametrize("spec", ["facts", "window:1+facts"])
def test_a_short_result_of_several_lines_is_one_fact_on_one_line(spec):
    agent = TinyReAct(ScriptedModel(['Action: record("ada")', "Answer: London", "Answer: ada"]), tools=[record],
                      policy=make_policy(spec))
    agent.query("Where does Ada live?")
    agent.query("What was her name?")
    messages = agent.model.calls[-1]
    block = [part.text for message in messages for part in message.parts if part.kind == "notes"]
    assert block == ["Key facts, extracted by rule from the conversation:\n"
                     "- record(name='ada') returned name: ada city: London"]
    check_invariants(messages, agent.trace.events[:-4])  # the call before the last usage, reply, answer and stop


def test_retrieve_brings_back_the_relevant_earlier_step_marked():
    _, model = essay_session("retrieve:1", FOUR_TURNS[:-1] + ["Action: add_numbers(1, 1)", "Action: add_numbers(1, 2)",
                                                              "Action: add_numbers(1, 3)", "Answer: London"])
    assert shown(model)[:8] == [
        ("question", "Question: My locker code is 4471. When was Ada born?"),
        ("placeholder", "[brought back: an earlier step relevant to the current question]"),
        ("reply", 'Action: lookup("ada")'), ("observation", "Observation1: Ada Lovelace, born 1815 in London"),
        ("placeholder", "[1 earlier question and 3 earlier steps not shown]"),
        ("question", "Question: What is 2 + 3?"), ("placeholder", "[1 earlier step not shown]"), ("reply", "Answer: 5"),
    ]  # the last 4 steps (the one before this turn, and this turn's 3) follow


def test_budget_keeps_the_most_relevant_steps_that_fit_and_says_how_they_are_ordered():
    agent, _ = essay_session("full")
    events = agent.trace.events[:-3]  # the context of the last call: its reply, answer and stop left out
    current = count_tokens("Question: Where was Ada born?")
    ada_turn = sum(map(count_tokens, ["Question: My locker code is 4471. When was Ada born?", 'Action: lookup("ada")',
                                      "Observation1: Ada Lovelace, born 1815 in London", "Answer: 1815"]))
    marker = count_tokens("[2 earlier questions and 4 earlier steps not shown]")  # what is left out is said, and costs
    budget = count_tokens(events[0]["text"]) + current + count_tokens(f"[{ORDER_NOTE}]") + marker + ada_turn
    messages = make_policy(f"budget:{budget}").render(events)
    assert sum(count_tokens(part.text) for message in messages for part in message.parts) <= budget
    parts = [(part.kind, part.text) for message in messages[1:] for part in message.parts]
    assert parts == [
        ("placeholder", f"[{ORDER_NOTE}]"), ("placeholder", "[2 earlier questions and 4 earlier steps not shown]"),
        ("question", "Question: My locker code is 4471. When was Ada born?"),
        ("reply", 'Action: lookup("ada")'), ("observation", "Observation1: Ada Lovelace, born 1815 in London"),
        ("reply", "Answer: 1815"), ("question", "Question: Where was Ada born?"),
    ]  # the steps that name Ada are the most relevant, and exactly fit
    assert violations(messages, events, ordered=False) == []
    fewer = make_policy(f"budget:{budget - 1}").render(events)  # a token less, and the Ada turn no longer fits
    assert "Question: My locker code is 4471. When was Ada born?" not in [p.text for m in fewer for p in m.parts]


def test_budget_lays_the_chosen_turns_out_most_relevant_at_both_edges():
    questions = ["alpha", "beta", "alpha beta gamma delta", "gamma delta", "alpha beta gamma delta?"]
    agent = TinyReAct(ScriptedModel([f"Answer: {n}" for n in range(5)]), tools=[add_numbers])
    for question in questions:
        agent.query(question)
    messages = make_policy("budget:100000").render(agent.trace.events[:-3])
    shown_questions = [part.text for message in messages[1:] for part in message.parts if part.kind == "question"]
    # BM25 ranks the question with all four words first and "gamma delta" second; the one-word questions come last.
    # Laid out from both edges inward: the first at the top, the second just before the current question.
    assert shown_questions[0] == "Question: alpha beta gamma delta"
    assert shown_questions[-2] == "Question: gamma delta" and shown_questions[-1] == "Question: alpha beta gamma delta?"
    assert sorted(shown_questions[1:3]) == ["Question: alpha", "Question: beta"]


def test_forget_drops_the_steps_the_model_chose_and_replay_shows_the_same():
    agent, model = essay_session("forget", FOUR_TURNS[:-1] + ['Action: forget("paris")', "Answer: London"])
    forgets = [e for e in agent.trace.events if e["type"] == "forget"]
    assert len(forgets) == 1 and forgets[0]["what"] == "paris"
    assert ("placeholder", "[1 earlier step forgotten at the model's request]") in shown(model)
    assert ("reply", 'Action: lookup("paris")') not in shown(model) and ("reply", "Answer: Paris") in shown(model)
    assert "Observation1: Forgot 1 earlier step." in [text for _, text in shown(model)]
    length = len(agent.trace.events) - 4  # just before the last reply: replay renders what the model was sent
    assert make_policy("forget").render(agent.trace.events[:length]) == model.calls[-1]


def test_forget_of_something_never_mentioned_is_an_error_observation():
    agent, _ = essay_session("forget", FOUR_TURNS[:-1] + ['Action: forget("tokyo")', "Answer: London"])
    assert not [e for e in agent.trace.events if e["type"] == "forget"]
    assert "Error: no earlier step mentions 'tokyo'; nothing was forgotten." in [
        e["text"] for e in agent.trace.events if e["type"] == "observation"]


def test_composition_applies_the_policies_in_order_and_offers_their_tools():
    agent, model = essay_session("elide:0+pinned", ['Action: pin_note("Locker 4471")'] + FOUR_TURNS)
    assert shown(model) == [
        ("notes", "Pinned notes:\n1. Locker 4471"),
        ("placeholder", "[1 earlier question and 3 earlier steps not shown]"),
        ("question", "Question: What is the capital of France?"), ("reply", 'Action: lookup("paris")'),
        ("placeholder", 'Observation1: [elided: lookup("paris") returned 640 characters; '
                        'call it again to re-read them]'),
        ("reply", "Answer: Paris"), ("question", "Question: What is 2 + 3?"), ("reply", "Action: add_numbers(2, 3)"),
        ("observation", "Observation1: 5"),  # shorter than its marker: kept
        ("reply", "Answer: 5"), ("question", "Question: Where was Ada born?"),
    ]  # elide:0 marked every long observation; pinned then kept the last 4 steps and added its notes
    assert "pin_note(text: str)" in model.calls[-1][0].text and agent.policy.name == "elide:0+pinned"



def test_an_observation_cut_when_shown_is_held_by_the_trace_but_a_forged_cut_is_not():
    agent, model = session("full", ['Action: fetch("alpha")', "Answer: ok"], ["read"])
    events = agent.trace.events[:-5]
    messages = make_policy("full").render(events)
    assert violations(messages, events) == []
    forged = [*messages[:-1],
              Message.of("user", "Observation1: alpha\n[... 12 characters cut ...]\nalpha", "observation")]
    assert any("does not hold" in problem for problem in violations(forged, events))


class DownAtFirst(DownForTheFinish):
    """Fails the first question's only call, then acts and answers."""

    def __init__(self):
        self.replies, self.calls = [ModelError("server down")] + [
            ModelReply(text) for text in ["Action: add_numbers(1, 1)", "Answer: 2", "Action: add_numbers(2, 2)",
                                          "Action: add_numbers(3, 3)", "Answer: 6"]], []


@pytest.mark.parametrize("spec", ["window:1", "forget+window:1", "window:2+retrieve:1"])
def test_a_window_still_shows_an_earlier_question_that_got_no_reply_and_says_what_it_hid(spec):
    model = DownAtFirst()
    agent = TinyReAct(model, tools=[add_numbers], policy=make_policy(spec))
    for question in ["Is the server up?", "What is 1 + 1?", "What is 2 + 2 and 3 + 3?"]:
        agent.query(question)
    assert shown(model)[0] == ("question", "Question: Is the server up?")  # no step of it to hide: still shown
    if spec == "window:1":
        assert shown(model)[1:4] == [("placeholder", "[1 earlier question and 2 earlier steps not shown]"),
                                     ("question", "Question: What is 2 + 2 and 3 + 3?"),
                                     ("placeholder", "[1 earlier step not shown]")]
    assert_laid_out_as_if_walked(agent.policy, agent.trace.events)


class Clearing(Policy):
    """A policy whose parameters are named on the command line, as the vendors' context managers are written."""
    name = "clearing"
    usage = "clearing[:trigger=N/keep=N/exclude=TOOL]"

    def __init__(self, trigger: int = 100, keep: int = 3, share: float = 0.5, inputs: bool = False,
                 exclude: tuple[str, ...] = ()):
        if trigger < 0:
            raise ValueError("trigger needs >= 0 tokens")
        if keep > trigger:
            raise ValueError(f"keep={keep} is more than trigger={trigger} allows")
        self.trigger, self.keep, self.share, self.inputs, self.exclude = trigger, keep, share, inputs, exclude
        self.name = written_as("clearing", self, trigger=trigger, keep=keep, share=share, inputs=inputs,
                            exclude=exclude)


def test_named_parameters_are_read_by_their_types_and_named_back_as_written(monkeypatch):
    monkeypatch.setitem(POLICIES, "clearing", Clearing)
    policy = make_policy("clearing:trigger=500/keep=2/share=0.25/inputs=true/exclude=a/exclude=b")
    read = (policy.trigger, policy.keep, policy.share, policy.inputs, policy.exclude)
    assert read == (500, 2, 0.25, True, ("a", "b"))
    assert policy.name == "clearing:trigger=500/keep=2/share=0.25/inputs=true/exclude=a/exclude=b"
    assert make_policy(policy.name).name == policy.name  # a report's name is a spec that builds the same policy
    assert make_policy("clearing:keep=3").name == "clearing"  # the defaults are not written
    assert make_policy("clearing:keep=1+elide:2").name == "clearing:keep=1+elide:2"


@pytest.mark.parametrize("spec, message", [
    ("clearing:foo=1", "unknown parameter 'foo'"), ("clearing:=4", "unknown parameter"),
    ("clearing:trigger=-5", "trigger needs >= 0"), ("clearing:trigger=10/keep=20", "keep=20 is more than trigger"),
    ("clearing:trigger=x", "trigger takes a whole number, got 'x'"), ("clearing:keep=1/keep=2", "keep is given twice"),
    ("clearing:inputs=yes", "inputs takes true or false")])
def test_bad_named_parameters_are_one_line_naming_the_policy_s_parameters(monkeypatch, spec, message):
    monkeypatch.setitem(POLICIES, "clearing", Clearing)
    with pytest.raises(ValueError, match=message) as raised:
        make_policy(spec)
    said = str(raised.value)
    assert "\n" not in said and said.endswith("clearing takes trigger=, keep=, share=, inputs=, exclude=")


def test_a_view_trims_an_observation_to_its_head_and_tail_and_shows_calls_without_their_arguments():
    """The view's `trims` (step -> characters kept at the head and the tail of its result) and `bare` (steps whose
    calls are shown without their arguments), which the vendors' clearing policies are written with; what they show
    keeps every invariant, and a trim longer than the cut in force shows what the cut shows."""
    agent, model = session("full", ['Thought: read\nAction: fetch("alpha")', "Action: add_numbers(2, 3)",
                                    "Answer: ok"], ["q"])
    events = before_last_call(agent.trace.events)
    conversation = read_conversation(events)
    first, second = conversation.steps[:2]
    messages = assemble(conversation, lay_out(conversation, View(trims={first.index: (10, 5)},
                                                                 bare={first.index, second.index})))
    whole = fetch("alpha")
    assert [part.text for message in messages[1:] for part in message.parts][1:5] == [
        "Thought: read\nAction: fetch([input cleared])",
        f"Observation1: {whole[:10]}\n[... {len(whole) - 15:,} characters cut ...]\n  {whole[-5:]}",
        "Action: add_numbers([input cleared])", "Observation2: 5"]
    assert violations(messages, events) == []
    assert lay_out(conversation, View(trims={first.index: (5000, 5000)})) == lay_out(conversation, View())


def test_a_native_call_shown_without_its_arguments_goes_to_the_service_with_none():
    from models import ToolCall
    from protocols import NativeProtocol
    model = ScriptedModel([ModelReply("", calls=(ToolCall("c1", "add_numbers", '{"x": 2, "y": 3}'),)),
                           ModelReply("5")])
    agent = TinyReAct(model, tools=[add_numbers], protocol=NativeProtocol())
    agent.query("What is 2 + 3?")
    events = before_last_call(agent.trace.events)
    conversation = read_conversation(events)
    messages = assemble(conversation, lay_out(conversation, View(bare={conversation.steps[0].index})))
    reply = next(part for message in messages for part in message.parts if part.kind == "reply")
    assert reply.text == "Call: add_numbers([input cleared])" and reply.calls[0].arguments == "{}"
    assert reply.calls[0].id == "c1" and violations(messages, events) == []


def before_last_call(events):
    """The trace as it stood when its last model call was made."""
    return events[:max(index for index, event in enumerate(events) if event["type"] == "context")]


def test_the_record_of_a_call_does_not_move_the_conversation_s_clock():
    """A `context` event is written after its call's context was rendered: read again with it, the trace gives the
    clock the call was rendered at (a policy acting on idle gaps, openclaw-ttl, renders the context it sent)."""
    agent, _ = session("full", ["Action: add_numbers(1, 1)", "Answer: 2"], ["q"])
    events = agent.trace.events
    call = next(index for index, event in enumerate(events) if event["type"] == "context")
    rendered_at = read_conversation(events[:call]).now
    assert read_conversation([*events[:call], dict(events[call], t=rendered_at + 3600)]).now == rendered_at


def test_the_conversation_reader_passes_by_only_the_events_it_does_not_read():
    """ConversationReader skips an event whose kind is not in READ: a kind _read_event learns must be added there."""
    import inspect
    import re

    from policies import rendering
    assert set(re.findall(r'kind == "(\w+)"', inspect.getsource(rendering._read_event))) == rendering.READ
