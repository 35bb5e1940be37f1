"""The ReAct loop, driven by the scripted model: what it runs, what the model is shown, how each run ends."""
import json

import pytest

from agent import RECORD_LIMIT, REPLY_LIMIT, StopReason, TinyReAct
from policies.rendering import OBSERVATION_LIMIT, cap
from models import ModelError, ModelReply
from models.scripted import ScriptedModel, ScriptExhausted
from tools.arithmetic import add_numbers, subtract_numbers
from traces import Trace, load_trace, read_trace


def run(replies, question="What is 7 * 6 + 5?", **options):
    finish = options.pop("finish", False)
    model = ScriptedModel(replies)
    agent = TinyReAct(model, **options)
    return agent.query(question, finish=finish), model


def observations(result):
    return [e["text"] for e in result.trace if e["type"] == "observation"]


def test_three_step_arithmetic_answer():
    result, model = run([
        "Thought1: First multiply 7 by 6.\nAction1: multiply_numbers(7, 6)",
        "Thought2: Now add 5.\nAction2: add_numbers(42, 5)",
        "Thought3: Done.\nAnswer: 47",
    ])
    assert (result.answer, result.stop_reason, result.steps, result.model_calls) == ("47", StopReason.ANSWER, 2, 3)
    assert observations(result) == ["42", "47"]
    last = model.calls[-1]
    assert [m.role for m in last] == ["system", "user", "model", "user", "model", "user"]
    assert last[1].text == "Question: What is 7 * 6 + 5?"
    assert last[3].text == "Observation1: 42" and last[5].text == "Observation2: 47"
    assert "multiply_numbers(x: float, y: float) -> float" in last[0].text
    assert model.stops[0] == ["\nObservation"] and model.unused == []


def test_model_written_observation_never_reaches_the_context():
    result, model = run([
        "Thought: multiply\nAction: multiply_numbers(7, 6)\nObservation: 99\nThought: so 104\nAnswer: 104",
        "Thought: ok\nAnswer: 47",
    ])
    assert observations(result) == ["42"]  # the tool ran; the invented 99 and the answer after it were dropped
    assert result.answer == "47"
    shown = "\n".join(m.text for m in model.calls[1])
    assert "99" not in shown and "104" not in shown
    first_reply = next(e for e in result.trace if e["type"] == "reply")
    assert first_reply["raw"].endswith("Answer: 104")  # the raw reply is still in the trace, for the record


def test_ttl_counts_every_model_call_including_unparseable_ones():
    result, model = run(["Thought: hmm", "Action: add_numbers(1, 1)", "Thought: hmm", "Action: add_numbers(2, 2)"],
                        ttl=4)
    assert result.stop_reason is StopReason.TTL and result.answer is None
    assert result.model_calls == 4 and result.steps == 2 and len(model.calls) == 4


def test_three_consecutive_format_errors_stop_the_run():
    result, _ = run(["I am not sure.", "", ModelReply("", blocked="finish reason SAFETY")])
    assert result.stop_reason is StopReason.FORMAT_ERRORS and result.model_calls == 3
    assert [o.split(".")[0] for o in observations(result)] == [
        "Error: your reply had no Action or Answer line", "Error: your reply was empty",
        "Error: your reply was blocked (finish reason SAFETY)"]


def test_format_error_count_resets_after_a_good_reply():
    result, _ = run(["no format", "still none", "Action: add_numbers(1, 1)", "nope", "nope", "Answer: 2"])
    assert result.stop_reason is StopReason.ANSWER and result.answer == "2"


def test_tool_problems_become_one_line_error_observations():
    result, _ = run([
        "Action: fly_to_moon(1)",
        "Action: add_numbers(1)",
        "Action: add_numbers(__import__('os').system('touch pwned'), 1)",
        "Action: divide_numbers(1, 0)",
        "Action: explode()",
        "Answer: gave up",
    ], tools=_tools_with_explode())
    obs = observations(result)
    assert obs[0] == ("Error: there is no tool named 'fly_to_moon'. "
                      "Available tools: add_numbers, divide_numbers, explode.")
    assert obs[1].startswith("Error: add_numbers(): missing a required argument: y")
    assert obs[2].startswith("Error: add_numbers(): arguments must be literal values")
    assert obs[3] == "Error: cannot divide by zero."
    assert obs[4] == "Error: explode failed: RuntimeError: boom on two lines"
    assert all("\n" not in o for o in obs)


def _tools_with_explode():
    from tools.arithmetic import add_numbers, divide_numbers

    def explode() -> str:
        """Always fails."""
        raise RuntimeError("boom on\ntwo lines")
    return [add_numbers, divide_numbers, explode]


def test_hostile_action_is_not_executed(tmp_path):
    run(["Action: add_numbers(__import__('os').system('touch pwned'), 1)", "Answer: no"])
    assert not (tmp_path / "pwned").exists()


def test_long_observations_are_recorded_whole_and_cut_when_shown():
    def big() -> str:
        """Returns a lot."""
        return "HEAD" + "x" * 10_000 + "TAIL"
    result, model = run(["Action: big()", "Answer: ok"], tools=[big])
    assert observations(result)[0] == "HEAD" + "x" * 10_000 + "TAIL"  # the trace keeps every character
    shown = model.calls[1][-1].parts[-1].text
    assert len(shown) <= OBSERVATION_LIMIT + len("Observation1: ")
    # 2 kept for the tail's indent
    assert (shown.startswith("Observation1: HEAD") and shown.endswith("TAIL")
            and "[... 8,050 characters cut ...]" in shown)
    assert cap("short", 10) == "short"


def test_a_huge_tool_result_is_cut_at_the_safety_cap_and_marked():
    def huge() -> str:
        """Returns far too much."""
        return "y" * (RECORD_LIMIT * 2)
    result, _ = run(["Action: huge()", "Answer: ok"], tools=[huge])
    event = next(e for e in result.trace if e["type"] == "observation")
    assert RECORD_LIMIT - 100 < len(event["text"]) <= RECORD_LIMIT and "characters cut" in event["text"]
    assert event["original_chars"] == RECORD_LIMIT * 2


def test_fourth_identical_action_in_a_row_gets_a_warning_instead_of_running():
    calls = []

    def ping(n: int) -> str:
        """Counts calls."""
        calls.append(n)
        return "pong"
    replies = ["Action: ping(1)"] * 4 + ["Action: ping(2)", "Action: ping(1)", "Answer: done"]
    result, _ = run(replies, tools=[ping])
    assert calls == [1, 1, 1, 2, 1]
    assert observations(result)[3].startswith("Warning: you have already run ping(1) 3 times in a row")


def test_a_model_that_sends_a_refused_call_again_is_stopped_as_stuck(tmp_path):
    """The guard refuses a fourth ping(1) in a row; a model that sends it a fifth time is stuck, and the run stops
    there, three calls before the TTL. One refusal and then an answer is not stuck."""
    calls = []

    def ping(n: int) -> str:
        """Counts calls."""
        calls.append(n)
        return "pong"
    path = tmp_path / "stuck.jsonl"
    model = ScriptedModel(["Action: ping(1)"] * 8)
    result = TinyReAct(model, tools=[ping], trace=Trace(str(path))).query("ping?")
    assert (result.answer, result.stop_reason, result.model_calls) == (None, StopReason.STUCK, 5)
    assert calls == [1, 1, 1] and len(model.unused) == 3
    told = [e for e in result.trace if e["type"] == "observation"]
    assert [e.get("refused") for e in told] == [None, None, None, "repeat", "repeat"]
    assert all(e["text"].startswith("Warning: you have already run ping(1)") for e in told[3:])
    assert read_trace(str(path))[-1]["type"] == "stop" and read_trace(str(path))[-1]["reason"] == "stuck"
    once, _ = run(["Action: ping(1)"] * 4 + ["Answer: pong"], tools=[ping])
    assert (once.answer, once.stop_reason) == ("pong", StopReason.ANSWER)


def test_replies_with_no_call_between_the_same_call_do_not_hide_that_the_model_is_stuck():
    """The 0.5B sent calculate("12 / (5 - 5)") five times in eight calls, a reply with no Action between some: each
    such reply broke the run of identical calls the guard counts, so it ran to the TTL. Now it stops as stuck."""
    calls = []

    def ping(n: int) -> str:
        """Counts calls."""
        calls.append(n)
        return "pong"
    replies = ["Action: ping(1)", "Thought: the same again.", "Action: ping(1)", "Action: ping(1)",
               "Thought: again.", "Action: ping(1)", "Action: ping(1)", "Action: ping(1)"]
    result, model = run(replies, tools=[ping], ttl=8)
    assert (result.stop_reason, result.model_calls, calls) == (StopReason.STUCK, 7, [1, 1, 1])
    assert len(model.unused) == 1


def test_finish_makes_one_more_counted_call_for_the_best_answer():
    result, model = run(["Action: add_numbers(1, 1)", "Action: add_numbers(2, 2)", "Thought: best guess\nAnswer: 4"],
                        ttl=2, finish=True)
    assert result.answer == "4" and result.stop_reason is StopReason.TTL and result.model_calls == 3
    assert "You have no steps left" in model.calls[-1][-1].text
    assert [e["type"] for e in result.trace].count("finish") == 1


def test_usage_is_summed_from_every_call():
    result, _ = run([ModelReply("Action: add_numbers(1, 2)", 100, 7, 2), ModelReply("Answer: 3", 130, 5)])
    assert (result.usage.input_tokens, result.usage.output_tokens) == (230, 12)
    usage = [e for e in result.trace if e["type"] == "usage"]
    assert [u["input_tokens"] for u in usage] == [100, 130] and usage[0]["thoughts_tokens"] == 2


def test_model_failure_ends_the_run_with_error_and_keeps_the_trace():
    class Flaky(ScriptedModel):
        def generate(self, messages, stop, **options):
            if len(self.calls) == 1:
                raise ModelError("Gemini answered 503 UNAVAILABLE")
            return super().generate(messages, stop)
    agent = TinyReAct(Flaky(["Action: add_numbers(1, 2)"]))
    result = agent.query("1 + 2?")
    assert result.stop_reason is StopReason.ERROR and result.answer is None
    assert [e["type"] for e in result.trace][-4:] == ["observation", "context", "error", "stop"]
    assert result.trace[-1] == {"type": "stop", "reason": "error", "answer": None, "t": result.trace[-1]["t"]}


def test_scripted_model_fails_loudly_when_exhausted():
    with pytest.raises(ScriptExhausted):
        run(["Action: add_numbers(1, 2)"])


def test_trace_file_has_a_version_header_and_every_event_as_it_happens(tmp_path):
    path = tmp_path / "run.jsonl"
    seen_on_disk = []

    class Peeking(ScriptedModel):
        def generate(self, messages, stop, **options):
            seen_on_disk.append(len(path.read_text().splitlines()))
            return super().generate(messages, stop)
    agent = TinyReAct(Peeking(["Action: multiply_numbers(7, 6)", "Answer: 42"]), trace=Trace(str(path)))
    assert agent.query("7 * 6?").answer == "42"
    agent.trace.close()
    header = json.loads(path.read_text().splitlines()[0])
    assert header["format"] == "tinyreact-trace" and header["version"] == 2
    # header, instructions, question, context; then usage, reply, action, observation, context
    assert seen_on_disk == [4, 4 + 5]
    assert [e["type"] for e in read_trace(str(path))] == [e["type"] for e in agent.trace.events]


def test_trace_survives_a_crash_mid_run(tmp_path):
    path = tmp_path / "crash.jsonl"
    agent = TinyReAct(ScriptedModel(["Action: multiply_numbers(7, 6)"]), trace=Trace(str(path)))
    with pytest.raises(ScriptExhausted):
        agent.query("7 * 6?")
    assert [e["type"] for e in read_trace(str(path))][-2:] == ["observation", "context"]


def test_instructions_render_under_six_thousand_characters():
    agent = TinyReAct(ScriptedModel([]))
    assert len(agent.trace.events[0]["text"]) < 6000


def test_ttl_must_be_positive():
    with pytest.raises(ValueError):
        TinyReAct(ScriptedModel([]), ttl=0)


def test_a_runaway_reply_is_kept_to_its_limit():
    huge = "Thought: " + "blah " * 1_000_000 + "\nAction: add_numbers(1, 1)"
    result, model = run([huge, huge, "Answer: 2"])
    replies = [e for e in result.trace if e["type"] == "reply"]
    assert result.answer == "2" and all(len(e["text"]) <= REPLY_LIMIT and len(e["raw"]) <= REPLY_LIMIT for e in replies)
    assert "characters cut" in replies[0]["text"]
    assert sum(len(m.text) for m in model.calls[-1]) < 3 * REPLY_LIMIT  # later contexts carry the kept part only


def test_a_context_past_a_remote_models_window_is_warned_once_a_query():
    class SmallWindow(ScriptedModel):
        window = 500  # the instructions alone are about 900 tokens

    agent = TinyReAct(SmallWindow(["Action: add_numbers(1, 1)", "Action: add_numbers(2, 2)", "Answer: 4"]))
    result = agent.query("1 + 1, then 2 + 2?")
    warnings = [e["message"] for e in result.trace if e["type"] == "warning"]
    assert result.answer == "4" and len(warnings) == 1  # the run goes on: only the model can say it is too much
    assert "more than scripted's window of 500" in warnings[0]


def echo(text: str) -> str:
    """Return the text as it is. Example: echo("a") returns a."""
    return text


@pytest.mark.parametrize("reply", [
    'Thought: t\nAction: echo("code \\ud800 4471")',  # pure ASCII: the string literal's escape makes the surrogate
    'Thought: t \ud800\nAction: echo("x")',  # a backend's JSON decoder can hand one over in the reply itself
])
def test_a_lone_surrogate_is_recorded_as_a_replacement_character_and_the_trace_reads_back(reply, tmp_path):
    path = tmp_path / "run.jsonl"
    trace = Trace(str(path))
    agent = TinyReAct(ScriptedModel([reply, "Answer: done"]), tools=[echo], trace=trace)  # the Gemma counter
    result = agent.query("Echo my code")
    trace.close()
    assert result.stop_reason == StopReason.ANSWER and result.error is None
    texts = [value for event in result.trace for value in event.values() if isinstance(value, str)]
    assert not any("\ud800" in text for text in texts) and any("\ufffd" in text for text in texts)
    assert len(load_trace(str(path)).events) == len(agent.trace)


def test_a_protocol_that_fails_while_reading_a_call_is_a_framework_bug_and_raises():
    """Only a tool's own failure becomes an observation: a protocol's bug reading the second call of a reply is not
    said to the model as the first call's tool failing (it was, with the first call's name and key)."""
    from protocols import TextProtocol

    class Broken(TextProtocol):
        def call(self, action, tools):
            if "subtract" in action.text:
                raise KeyError("unit")
            return super().call(action, tools)

    agent = TinyReAct(ScriptedModel(["Action: add_numbers(2, 3)", "Action: subtract_numbers(5, 1)", "Answer: 4"]),
                      tools=[add_numbers, subtract_numbers], protocol=Broken())
    with pytest.raises(KeyError, match="unit"):
        agent.query("Sums?")
    assert [e["text"] for e in agent.trace.events if e["type"] == "observation"] == ["5"]
