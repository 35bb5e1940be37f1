"""What a call sent is recorded once: the loop keeps the messages and tool schemas it sends (Trace.sent) and the
context event carries their digest. A live run's readers (the page, the spans) show exactly that; only a saved
trace's calls are rebuilt with today's policy code, and where the rebuilt context is not what the digest says was
sent, the reader says so."""
import json

import pytest

import views.reading
from agent import TinyReAct
from models import Message, ModelReply, ToolCall
from models.sent import sent_digest
from models.scripted import ScriptedModel
from policies import make_policy
from protocols import NativeProtocol
from tokens import TokenCounter
from tools.arithmetic import add_numbers
from views.pages import run_page
from views.telemetry import question_spans

REPLIES = ["Thought: add\nAction: add_numbers(2, 3)", "Thought: again\nAction: add_numbers(5, 5)", "Answer: 10"]


def run(replies=REPLIES, policy="window:1", **options):
    model = ScriptedModel(replies)
    agent = TinyReAct(model, tools=[add_numbers], policy=make_policy(policy), **options)
    agent.query("What is 2 + 3 + 5?")
    return agent, model


class Changed:
    """Today's code of a policy that has changed since the run: it renders one part more."""

    def __init__(self, policy):
        self.policy = policy

    def render(self, events):
        messages = self.policy.render(events)
        return [*messages, Message.of("user", "a part the policy adds since the run")]


@pytest.fixture
def policy_changed(monkeypatch):
    monkeypatch.setattr(views.reading, "make_policy", lambda name: Changed(make_policy(name)))


def contexts(events):
    return [event for event in events if event["type"] == "context"]


@pytest.mark.parametrize("policy", ["window:1", "full", "elide:1", "user-only:1", "window:1+facts"])
def test_each_context_event_records_the_digest_of_exactly_what_the_model_was_sent(policy):
    """The loop's digests, made call after call from where the context before left off (models.sent.Digests),
    equal each context's digest made whole, under policies that keep, drop and rewrite what came before."""
    agent, model = run(REPLIES * 2 + ["Answer: 10"], policy)
    agent.query("And again?")
    recorded = contexts(agent.trace.events)
    assert [event["sent"] for event in recorded] == [sent_digest(messages) for messages in model.calls]
    assert [agent.trace.sent[event["sent"]] for event in recorded] == model.calls
    assert len(set(event["sent"] for event in recorded)) == len(recorded)  # each call is shown something new


def test_a_native_call_s_digest_covers_the_tool_schemas_sent_beside_the_messages():
    calls = [ModelReply("", calls=(ToolCall("c1", "add_numbers", '{"x": 2, "y": 3}'),)), ModelReply("5")]
    agent, model = run(calls, protocol=NativeProtocol())
    schemas = json.dumps(model.offered[0], ensure_ascii=False)
    assert [event["sent"] for event in contexts(agent.trace.events)] == [
        sent_digest(messages, schemas) for messages in model.calls]
    assert sent_digest(model.calls[0], schemas) != sent_digest(model.calls[0])


def test_the_page_of_a_live_run_shows_what_was_sent_and_a_saved_trace_says_where_a_rebuild_differs(policy_changed):
    agent, model = run()
    counter = TokenCounter()
    live = run_page({}, agent.trace.events, counter, sent=agent.trace.sent)
    assert "a part the policy adds since the run" not in live and "rebuilt from the trace" not in live
    saved = run_page({}, agent.trace.events, counter)  # no sent: rebuilt by today's (changed) code
    assert "a part the policy adds since the run" in saved
    assert saved.count("the context below is rebuilt from the trace by today") == 3


def test_a_rebuilt_context_that_is_what_was_sent_is_not_flagged_and_the_page_is_the_same():
    agent, _ = run()
    counter = TokenCounter()
    assert run_page({}, agent.trace.events, counter) == run_page({}, agent.trace.events, counter,
                                                                 sent=agent.trace.sent)


def test_an_older_trace_without_digests_is_rebuilt_without_a_note(policy_changed):
    agent, _ = run()
    older = [{key: value for key, value in event.items() if key != "sent"} for event in agent.trace.events]
    page = run_page({}, older, TokenCounter())
    assert "a part the policy adds since the run" in page and "rebuilt from the trace" not in page


def test_the_spans_carry_what_was_sent_and_mark_a_rebuild_that_differs(policy_changed):
    agent, _ = run()
    events = agent.trace.events
    first = next(index for index, event in enumerate(events) if event["type"] == "question")

    def model_spans(sent):
        header = {"model": "scripted", "backend": "scripted"}
        spans = question_spans(header, events, first, len, content=True, sent=sent)
        return [span for span in spans if span.name == "chat scripted"]
    live, saved = model_spans(agent.trace.sent), model_spans(None)
    assert len(live) == len(saved) == 3
    assert not any("tinyreact.context.rebuilt_differs" in span.attributes for span in live)
    assert all(span.attributes["tinyreact.context.rebuilt_differs"] is True for span in saved)
    assert not any("a part the policy adds" in json.dumps(span.attributes) for span in live)
    assert all("a part the policy adds" in json.dumps(span.attributes) for span in saved)
