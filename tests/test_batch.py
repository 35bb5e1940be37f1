"""--via batch and --via flex: the probe asked through OpenAI's Batch API (tests/model_servers.py's BatchStandIn,
written from its reference) or its flex tier gives the answers the calls give, in the same places; the price is shown
before anything is sent; a run killed at any moment and started again sends no call twice; and what goes wrong is one
line."""
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from model_servers import BatchStandIn, GeminiBatchStandIn, OpenAIStandIn, openai_error, stand_ins
from models.services import retry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = ["--probe", "--policies", "full,window:1", "--model", "openai:m"]
# 24 calls (6 phrasings under two policies and two controls), each reply its own, some of them right
REPLIES = [f"Thought: reading\nAnswer: {n} or 15.5 °C" if n % 3 else f"Answer: not sure ({n})" for n in range(24)]


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "superbowl.jsonl"
    shutil.copy(os.path.join(ROOT, "conversations", "superbowl.jsonl"), path)
    return str(path)


def _stand_ins(monkeypatch, make, environment):
    """model_servers.stand_ins, each stand-in polled at once (TINYREACT_BATCH_POLL 0)."""
    return stand_ins(monkeypatch, make, lambda server: {**environment(server), "TINYREACT_BATCH_POLL": "0"})


@pytest.fixture
def batches(monkeypatch):
    """start(replies, **knobs): a BatchStandIn named by OPENAI_BASE_URL, its key in OPENAI_API_KEY, polled at once."""
    yield from _stand_ins(monkeypatch, lambda replies, **knobs: BatchStandIn(replies, key="test-key-0123", **knobs),
                          lambda server: {"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": "test-key-0123"})


def synchronous(agent_py, openai, trace, tmp_path, replies=REPLIES) -> tuple[str, list[dict]]:
    """The answers CSV of the probe asked one call at a time, and the bodies it sent."""
    server = openai(list(replies))
    done = agent_py("--replay", trace, *PROBE, "--answers", str(tmp_path / "calls.csv"))
    assert done.returncode == 0, done.stderr
    return (tmp_path / "calls.csv").read_text(), server.bodies


def test_a_batch_gives_the_answers_of_the_calls_in_their_places(agent_py, openai, batches, trace, tmp_path):
    expected, sent = synchronous(agent_py, openai, trace, tmp_path)
    server = batches(list(REPLIES))
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--answers", str(tmp_path / "batch.csv"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "batch.csv").read_text() == expected  # the output came reversed: read by custom_id
    # Each line carries the very body the call sent, named by its SHA-256, in the Batch API's input shape.
    assert [line["body"] for line in server.uploaded] == sent
    assert all(line["custom_id"] == hashlib.sha256(json.dumps(line["body"], sort_keys=True, separators=(",", ":"),
                                                              ensure_ascii=False).encode()).hexdigest()
               for line in server.uploaded[:1])
    assert {(line["method"], line["url"]) for line in server.uploaded} == {("POST", "/v1/chat/completions")}
    assert len({line["custom_id"] for line in server.uploaded}) == 24  # a body asked twice is two calls
    assert "24 calls to send to openai:m" in done.stderr and "batch batch_1" not in done.stdout


def test_a_run_started_again_reads_its_answers_from_the_ledger_and_sends_nothing(agent_py, batches, trace, tmp_path):
    server = batches(list(REPLIES))
    first = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--answers", str(tmp_path / "1.csv"))
    again = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--answers", str(tmp_path / "2.csv"))
    assert first.returncode == again.returncode == 0
    assert (tmp_path / "1.csv").read_text() == (tmp_path / "2.csv").read_text()
    assert len(server.batches) == 1 and "0 calls to send" in again.stderr
    assert "24 of 24 calls sent before, 24 answered" in again.stderr


def test_calls_that_failed_in_their_batch_are_sent_once_more_and_the_run_says_so(agent_py, batches, trace, tmp_path):
    server = batches(["Answer: 15.5 °C"] * 24, fail_first=2)
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert "note: 2 call(s) failed in their batch (500: The server had an error processing your request.): " \
           "sending them once more, in a new batch" in done.stderr
    assert [len(b) for b in _lines_by_batch(server)] == [24, 2]
    assert _lines_by_batch(server)[1] == _lines_by_batch(server)[0][:2]
    table = json.loads(done.stdout)["probe"]
    assert json.loads(done.stdout)["setup"]["probe"]["via"] == "batch"
    assert all(cell["k"] == cell["n"] == 6 for row in table["by_point"].values() for cell in row.values())


def test_a_model_that_refuses_stop_in_a_batch_is_sent_its_calls_again_without_it(agent_py, openai, batches, trace,
                                                                                   tmp_path):
    """OpenAI's reasoning models (o3, o4-mini, gpt-5) refuse `stop` with "Unsupported parameter" (the reasoning
    guide); in a batch each line fails so, in the error file (openai-openapi issue #302: response.body.error, with
    its param). The calls are sent once more without it, as a call drops it, and answer as the calls do."""
    expected, _ = synchronous(agent_py, openai, trace, tmp_path)
    server = batches(list(REPLIES), refuse_stop=True)
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--answers", str(tmp_path / "batch.csv"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "batch.csv").read_text() == expected
    first, second = _lines_by_batch(server)
    assert first == second and len(second) == 24  # the same calls, named as before
    sent = [json.loads(line)["body"] for batch in server.batches.values()
            for line in server.files[batch["input_file_id"]]["data"].splitlines()]
    assert all("stop" in body for body in sent[:24]) and not any("stop" in body for body in sent[24:])
    assert "24 call(s) failed in their batch (unsupported_parameter: Unsupported parameter: 'stop'" in done.stderr
    again = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes")
    assert again.returncode == 0 and "0 calls to send" in again.stderr and len(server.batches) == 2


def test_a_model_that_refuses_stop_and_temperature_in_a_batch_answers_as_the_calls_do(agent_py, batches, trace,
                                                                                        tmp_path):
    """Reasoning models refuse a temperature but the default as well: each refusal costs the calls one batch, and
    a body rewritten without a setting starts its tries again, so the third batch answers."""
    server = batches(list(REPLIES), refuse_stop=True, refuse_temperature=True)
    calls = agent_py("--replay", trace, *PROBE, "--answers", str(tmp_path / "calls.csv"))  # asked one at a time
    assert calls.returncode == 0, calls.stderr
    server.replies = list(REPLIES)
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--answers", str(tmp_path / "batch.csv"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "batch.csv").read_text() == (tmp_path / "calls.csv").read_text() and len(server.batches) == 3


def test_a_batch_run_started_again_finds_its_calls_after_a_refusal_met_while_summaries_were_written(agent_py, batches,
                                                                                                     trace):
    """compact:T has the model write summaries first; a refusal of `temperature` met there leaves it out of the
    batch's bodies, but the calls are named as planned, so the run started again (its summaries cached, the refusal
    not met) finds them in the same ledger and sends nothing."""
    server = batches(["A summary of it."] * 4 + ["Answer: 15.5 °C"] * 24, refuse_temperature=True)
    argv = ["--replay", trace, "--probe", "--policies", "full,compact:400", "--model", "openai:m", "--via", "batch",
            "--yes"]
    first = agent_py(*argv)
    assert first.returncode == 0, first.stderr
    assert not any("temperature" in json.loads(line)["body"] for batch in server.batches.values()
                   for line in server.files[batch["input_file_id"]]["data"].splitlines())
    again = agent_py(*argv)
    assert again.returncode == 0 and "0 calls to send" in again.stderr and len(server.batches) == 1


def _lines_by_batch(server) -> list[list[str]]:
    return [[json.loads(line)["custom_id"] for line in server.files[batch["input_file_id"]]["data"].splitlines()]
            for batch in server.batches.values()]


@pytest.mark.parametrize("knob, said", [
    ({"outcome": "failed"}, "batch batch_1 failed: The url of line 1 does not match the batch's endpoint."),
    ({"outcome": "expired"}, "batch batch_1 expired with 12 of 24 calls answered (kept in the ledger): run the same "
                             "command again to send the rest"),
    ({"stranger": True}, "batch batch_1 answered for a call it was not sent (custom_id 'not-sent-here'): not read"),
])
def test_a_batch_that_fails_expires_or_answers_a_stranger_is_one_line(agent_py, batches, trace, knob, said):
    batches(list(REPLIES), **knob)
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes")
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: probing stopped, the tables hold the answers asked before: {said}"]


def test_an_expired_batch_sends_only_its_unanswered_calls_again(agent_py, batches, trace, tmp_path):
    server = batches(["Answer: 15.5 °C"] * 36, outcome="expired")
    expired = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--answers", str(tmp_path / "a.csv"))
    assert expired.returncode == 1
    assert (tmp_path / "a.csv").read_text().count("correct") == 12  # the answers that came are the tables'
    server.outcome = "completed"
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes")
    assert done.returncode == 0, done.stderr
    first, second = _lines_by_batch(server)
    assert second == first[12:]  # the 12 the expired batch answered are not asked again


def test_a_cancelled_batch_keeps_its_answers_and_the_run_started_again_sends_only_the_rest(agent_py, openai, batches,
                                                                                             trace, tmp_path):
    expected, _ = synchronous(agent_py, openai, trace, tmp_path)
    server = batches(list(REPLIES), outcome="cancelled")
    cancelled = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes")
    assert cancelled.returncode == 1
    assert "batch batch_1 cancelled with 12 of 24 calls answered (kept in the ledger): run the same command again to " \
           "send the rest" in cancelled.stderr
    server.outcome = "completed"
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--answers", str(tmp_path / "b.csv"))
    assert done.returncode == 0, done.stderr
    first, second = _lines_by_batch(server)
    assert second == first[12:] and (tmp_path / "b.csv").read_text() == expected


def test_with_no_terminal_nothing_is_sent_without_yes(agent_py, batches, trace):
    server = batches(list(REPLIES))
    done = agent_py("--replay", trace, *PROBE, "--via", "batch")
    assert done.returncode == 2 and server.uploaded == [] and server.requests == []
    assert done.stderr.splitlines()[-1] == ("error: not sent: there is no terminal to ask before paying; add --yes "
                                            "to send")
    assert done.stderr.startswith("--via batch: 24 calls to send to openai:m, ")


def test_the_price_is_shown_before_sending_and_max_cost_refuses_above_it(agent_py, batches, trace, tmp_path,
                                                                       monkeypatch):
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"models": {"m": {"input": 2.0, "cached_input": 0.2, "output": 8.0, "batch": 0.5,
                                                  "flex": 0.5, "min_cache_tokens": 256, "read": "2026-12-07"}}}))
    monkeypatch.setenv("TINYREACT_PRICES", str(table))
    server = batches(list(REPLIES))
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--max-cost", "0.0001", "--yes")
    assert done.returncode == 2 and server.requests == []
    tokens = int(done.stderr.split(" input tokens")[0].rsplit(", ", 1)[1].replace(",", ""))
    standard = tokens * 2.0 / 1e6
    assert f"${standard:.3g} at standard rates, ${standard / 2:.3g} at batch rates (0.5 of standard)" in done.stderr
    assert "at batch rates with caching at best (prices read 2026-12-07)" in done.stderr
    assert done.stderr.splitlines()[-1].startswith("error: --max-cost 0.0001: sending could cost up to $")
    assert agent_py("--replay", trace, *PROBE, "--via", "batch", "--max-cost", "5", "--yes").returncode == 0


@pytest.mark.parametrize("spec", ["ollama:qwen3:8b", "llamacpp:m"])
def test_via_with_a_service_that_has_no_engine_names_those_that_have(agent_py, trace, spec):
    done = agent_py("--replay", trace, "--probe", "--model", spec, "--via", "batch", "--yes")
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: --via batch: {spec} has no batch engine; gemini: and openai: have one"


def test_a_ledger_of_another_run_or_a_damaged_one_is_one_line(agent_py, batches, trace, tmp_path):
    batches(list(REPLIES) * 2)
    ledger = tmp_path / "l.jsonl"
    assert agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--ledger", str(ledger)).returncode == 0
    other = agent_py("--replay", trace, "--probe", "--policies", "full", "--model", "openai:m", "--via", "batch",
                     "--yes", "--ledger", str(ledger))
    assert other.returncode == 2 and other.stderr.count("\n") == 1
    assert "belongs to another run" in other.stderr and "name another --ledger, or remove it" in other.stderr
    lines = ledger.read_bytes().split(b"\n")
    ledger.write_bytes(b"\n".join([lines[0], b"{oops", *lines[1:]]))
    damaged = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--ledger", str(ledger))
    assert damaged.returncode == 2 and damaged.stderr.strip() == f"error: {ledger}, line 2: damaged: not JSON in UTF-8"


@pytest.mark.parametrize("argv, said", [
    (["--via", "batch", "--jobs", "4"], "--via batch does not go with --jobs: the service runs the batch's calls"),
    (["--ledger", "l.jsonl"], "--ledger only works with --via"),
    (["--max-cost", "3"], "--max-cost only works with --via"),
])
def test_what_does_not_go_with_via_is_one_line(agent_py, trace, argv, said):
    done = agent_py("--replay", trace, *PROBE, *argv)
    assert (done.returncode, done.stderr.strip()) == (2, f"error: {said}")


def test_via_without_probe_is_refused(agent_py, trace):
    done = agent_py("--replay", trace, "--via", "batch")
    assert done.stderr.strip() == "error: --via only works with --probe"


class FlexStandIn(OpenAIStandIn):
    """Flex processing (https://platform.openai.com/docs/guides/flex-processing, read 2026-12-07): a request with
    service_tier "flex" may be refused with "429 Resource Unavailable" when capacity is short, and is not billed;
    retried with back-off it is answered. The first `busy` flex requests are refused."""

    def __init__(self, replies, busy: int, **knobs):
        super().__init__(replies, models=("m",), **knobs)
        self.busy = busy

    def handle(self, request):
        body = request["body"]
        if isinstance(body, dict) and body.get("service_tier") == "flex" and self.busy > 0:
            self.busy -= 1
            return openai_error(429, "Resource unavailable: flex capacity is short; please retry later.",
                                type="resource_unavailable", code="resource_unavailable")
        return super().handle(request)


@pytest.fixture
def flex(monkeypatch):
    """start(replies, busy=0, **knobs): a FlexStandIn named by OPENAI_BASE_URL, its key in OPENAI_API_KEY."""
    yield from stand_ins(monkeypatch, lambda replies, busy=0, **knobs: FlexStandIn(replies, busy, **knobs),
                         lambda server: {"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": "test-key-0123"})


def test_flex_gives_the_answers_of_the_calls_with_the_flex_tier_retried_when_busy(agent_py, flex, openai, trace,
                                                                                  tmp_path, monkeypatch):
    expected, sent = synchronous(agent_py, openai, trace, tmp_path)
    waits = []
    monkeypatch.setattr(retry, "sleep", waits.append)
    server = flex(list(REPLIES), busy=2)
    done = agent_py("--replay", trace, *PROBE, "--via", "flex", "--yes", "--answers", str(tmp_path / "f.csv"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "f.csv").read_text() == expected and len(waits) == 2
    assert [{**body, "service_tier": "flex"} for body in sent] == server.bodies[2:]
    assert done.stderr.startswith("--via flex: 24 calls to send to openai:m")


def test_flex_stopped_midway_and_started_again_asks_only_the_calls_not_answered(agent_py, flex, openai, trace, tmp_path,
                                                                               monkeypatch):
    """A flex call is paid for when it is answered: each reply goes to the run's ledger as it comes, and the run
    started again asks only the rest, its answers those of the calls asked in one go."""
    expected, sent = synchronous(agent_py, openai, trace, tmp_path)
    monkeypatch.setattr(retry, "sleep", lambda seconds: None)
    server = flex(REPLIES[:10])  # the 11th call finds the server failing
    stopped = agent_py("--replay", trace, *PROBE, "--via", "flex", "--yes", "--answers", str(tmp_path / "1.csv"))
    assert stopped.returncode == 1
    assert "the replies that came are kept in the ledger; run the same command to ask only the rest: " \
           "python agent.py --replay" in stopped.stderr
    server.replies = list(REPLIES[10:])
    again = agent_py("--replay", trace, *PROBE, "--via", "flex", "--yes", "--answers", str(tmp_path / "2.csv"))
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "2.csv").read_text() == expected
    flexed = [{**body, "service_tier": "flex"} for body in sent]
    assert server.bodies == flexed[:10] + [flexed[10]] * 4 + flexed[10:]  # the 11th tried 4 times, then asked again
    ledger = next(tmp_path.glob("superbowl.flex-*.jsonl"))
    assert again.stderr.startswith("--via flex: 14 calls to send to openai:m, ")
    assert f"  ledger {ledger}: 10 of 24 calls answered before\n" in again.stderr
    third = agent_py("--replay", trace, *PROBE, "--via", "flex", "--yes")  # all answered: nothing to ask
    assert third.returncode == 0 and len(server.bodies) == 28 and "0 calls to send" in third.stderr


def test_a_flex_call_is_found_in_the_ledger_after_the_server_refused_a_setting(agent_py, flex, trace, tmp_path,
                                                                             monkeypatch):
    """A reasoning model refuses `stop`, and each later call is sent without it: the ledger still names each call by
    the body it was planned with, so the run started again (which has not learned the refusal yet) finds them."""
    monkeypatch.setattr(retry, "sleep", lambda seconds: None)
    server = flex(REPLIES[:10], refuse_stop=True)
    assert agent_py("--replay", trace, *PROBE, "--via", "flex", "--yes").returncode == 1
    server.replies = list(REPLIES[10:])
    again = agent_py("--replay", trace, *PROBE, "--via", "flex", "--yes")
    assert again.returncode == 0, again.stderr
    assert "10 of 24 calls answered before" in again.stderr
    assert len([body for body in server.bodies if "stop" not in body]) == 10 + 4 + 14


def test_a_flex_call_is_found_after_the_server_refused_temperature_while_summaries_were_written(agent_py, flex, trace,
                                                                                              monkeypatch):
    """compact:T has the model write summaries before the probe's calls are named; a refusal met there changes the
    bodies sent, and the run started again (its summaries cached, the refusal not met) must find the same calls."""
    monkeypatch.setattr(retry, "sleep", lambda seconds: None)
    argv = ["--replay", trace, "--probe", "--policies", "full,compact:400", "--model", "openai:m", "--via", "flex",
            "--yes"]
    server = flex(["A summary of it."] * 3 + ["Answer: 15.5 °C"] * 10, refuse_temperature=True)
    assert agent_py(*argv).returncode == 1
    server.replies = ["Answer: 15.5 °C"] * 100
    again = agent_py(*argv)
    assert again.returncode == 0, again.stderr
    answered = re.search(r"\n  ledger .*: (\d+) of 24 calls answered before\n", again.stderr)
    assert answered and int(answered[1]) == 9, again.stderr  # 13 replies: the summaries, then 9 answers


def test_a_flex_reply_with_a_lone_surrogate_is_kept_as_it_came(agent_py, flex, trace, tmp_path):
    """A service may send half of a surrogate pair (an escape JSON allows); the reply is kept in the ledger as it
    came, and read back from it, as a call without --via would take it."""
    from model_servers import completion

    replies = [completion("Answer: 15.5 \ud83d")] + ["Answer: 15.5 °C"] * 23
    server = flex(list(replies))
    first = agent_py("--replay", trace, *PROBE, "--via", "flex", "--yes", "--answers", str(tmp_path / "1.csv"))
    again = agent_py("--replay", trace, *PROBE, "--via", "flex", "--yes", "--answers", str(tmp_path / "2.csv"))
    assert first.returncode == again.returncode == 0, first.stderr
    assert len(server.bodies) == 24 and (tmp_path / "1.csv").read_text() == (tmp_path / "2.csv").read_text()


def test_flex_calls_asked_several_at_once_each_keep_their_reply(agent_py, flex, trace, tmp_path):
    server = flex(["Answer: 15.5 °C"] * 24)
    done = agent_py("--replay", trace, *PROBE, "--via", "flex", "--yes", "--jobs", "4")
    again = agent_py("--replay", trace, *PROBE, "--via", "flex", "--yes", "--jobs", "4")
    assert done.returncode == again.returncode == 0 and len(server.bodies) == 24
    records = [json.loads(line) for line in next(tmp_path.glob("superbowl.flex-*.jsonl")).read_text().splitlines()]
    assert len({record["id"] for record in records[1:]}) == 24 and "24 of 24 calls answered before" in again.stderr


def test_a_flex_ledger_is_not_a_batch_one(agent_py, openai, batches, trace, tmp_path):
    """The same calls through flex and through a batch are two runs: their bodies differ by the service tier."""
    batches(list(REPLIES))
    ledger = tmp_path / "l.jsonl"
    assert agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--ledger", str(ledger)).returncode == 0
    flex = agent_py("--replay", trace, *PROBE, "--via", "flex", "--yes", "--ledger", str(ledger))
    assert flex.returncode == 2 and flex.stderr.count("\n") == 1
    assert "belongs to another run (openai:m, run " in flex.stderr and "this one is openai:m flex" in flex.stderr


# ------------------------------------------------------------------ killed and started again

def _agent(trace: str, url: str, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "test-key-0123",
           "TINYREACT_BATCH_POLL": "0", "NO_PROXY": "127.0.0.1,localhost"}
    return subprocess.Popen([sys.executable, os.path.join(ROOT, "agent.py"), "--replay", trace, *PROBE, "--via",
                             "batch", "--yes", *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.slow  # a process started, killed and started again (or a deadline waited out)
@pytest.mark.parametrize("stall", ["upload", "create", "poll"])
def test_a_run_killed_at_any_step_and_started_again_sends_no_call_twice(trace, tmp_path, stall):
    with BatchStandIn(["Answer: 15.5 °C"] * 24, key="test-key-0123", stall=stall) as server:
        running = _agent(trace, server.url)
        assert server.stalled.wait(60), running.communicate()
        time.sleep(0.2)  # whatever the run writes after the step, it has written
        running.send_signal(signal.SIGKILL)
        running.communicate()
        server.stall = None
        again = _agent(trace, server.url, "--answers", str(tmp_path / "a.csv"))
        out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    assert len(server.uploaded) == 24 and len(server.batches) == 1  # uploaded once, one batch made of it
    assert (tmp_path / "a.csv").read_text().count("correct") == 24


def test_ctrl_c_leaves_the_batch_running_and_says_how_to_pick_it_up(trace, sigint_reaches_children):
    with BatchStandIn(["Answer: 15.5 °C"] * 24, key="test-key-0123", stall="poll") as server:
        running = _agent(trace, server.url)
        assert server.stalled.wait(60)
        running.send_signal(signal.SIGINT)
        out, err = running.communicate(timeout=60)
    assert running.returncode == 130
    assert (f"the batch keeps running at the service; run the same command to pick it up: python agent.py --replay "
            f"{trace} --probe --policies full,window:1 --model openai:m --via batch --yes") in err


def test_the_wait_shows_the_batch_its_calls_done_of_all_and_the_time_waited(tmp_path, monkeypatch):
    from experiments.batch import BatchRun, service_for
    from models import Message
    from models.services.openai_compatible import OpenAICompatibleModel

    monkeypatch.setenv("TINYREACT_BATCH_POLL", "0")
    with BatchStandIn(["Answer: 1", "Answer: 2"], key="k") as server:
        model = OpenAICompatibleModel("m", server.url + "/v1", api_key="k")
        asked = [([Message.of("user", f"question {n}", "question")], ["Observation:"]) for n in (1, 2)]
        run = BatchRun(service_for(model), asked, lambda digest: str(tmp_path / f"{digest}.jsonl"))
        shown = []
        replies = run.replies(shown.append, print)
    assert [reply.text for reply in replies] == ["Answer: 1", "Answer: 2"]
    assert shown == [f"batch batch_1: {status}, {done} of 2 calls, waited 0:00"
                     for status, done in [("in_progress", 0), ("finalizing", 0), ("completed", 2)]]


def test_a_poll_interval_that_is_no_number_of_seconds_is_one_line(agent_py, batches, trace, monkeypatch):
    server = batches(list(REPLIES))
    monkeypatch.setenv("TINYREACT_BATCH_POLL", "soon")
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes")
    assert (done.returncode, done.stderr.strip()) == (
        2, "error: TINYREACT_BATCH_POLL must be a number of seconds from 0 to 86,400, got 'soon'")
    assert server.requests == []


# ------------------------------------------------------------------ Gemini's batch mode

GEMINI = ["--probe", "--policies", "full,window:1", "--model", "gemini:gemini-flash-latest"]


@pytest.fixture
def gemini_batches(monkeypatch):
    """start(replies, **knobs): a GeminiBatchStandIn the SDK is pointed at (GOOGLE_GEMINI_BASE_URL), polled at once."""
    yield from _stand_ins(monkeypatch, GeminiBatchStandIn,
                          lambda server: {"GOOGLE_GEMINI_BASE_URL": server.url, "GEMINI_API_KEY": server.key})


def test_a_gemini_batch_started_again_finds_its_calls_after_a_refusal_met_while_summaries_were_written(
        agent_py, gemini_batches, trace, monkeypatch):
    """As for OpenAI: gemini-flash-latest refuses a temperature (GEMINI_TEMPERATURE=0), met while compact's
    summaries are written; the calls are named as planned, so the run started again finds them."""
    monkeypatch.setenv("GEMINI_TEMPERATURE", "0")
    server = gemini_batches(["A summary of it."] * 4 + ["Answer: 15.5 °C"] * 100)
    argv = ["--replay", trace, "--probe", "--policies", "full,compact:400", "--model", "gemini:gemini-flash-latest",
            "--via", "batch", "--yes"]
    first = agent_py(*argv)
    assert first.returncode == 0, first.stderr
    again = agent_py(*argv)
    assert again.returncode == 0 and "0 calls to send" in again.stderr and len(server.jobs) == 1, again.stderr


def gemini_batch_as_the_calls(agent_py, gemini, gemini_batches, trace, tmp_path) -> tuple:
    """The probe asked of Gemini call by call, then through its batch mode, each with REPLIES; the batch's answers
    CSV is the calls' byte for byte. Returns the two stand-ins and the batch run."""
    calls = gemini(list(REPLIES))
    assert agent_py("--replay", trace, *GEMINI, "--answers", str(tmp_path / "calls.csv")).returncode == 0
    server = gemini_batches(list(REPLIES))
    done = agent_py("--replay", trace, *GEMINI, "--via", "batch", "--yes", "--answers", str(tmp_path / "batch.csv"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "batch.csv").read_text() == (tmp_path / "calls.csv").read_text()
    return calls, server, done


def test_a_gemini_batch_gives_the_answers_of_the_calls_in_their_places(agent_py, gemini, gemini_batches, trace,
                                                                      tmp_path):
    calls, server, _ = gemini_batch_as_the_calls(agent_py, gemini, gemini_batches, trace, tmp_path)
    # each inline request is the request a call sends (its contents, instruction and generation config)
    keys = ("contents", "systemInstruction", "generationConfig")
    assert [{key: inline["request"][key] for key in keys} for inline in server.sent] == \
        [{key: body[key] for key in keys} for body in calls.bodies]
    assert len({inline["metadata"]["key"] for inline in server.sent}) == 24


def test_a_gemini_batch_sends_a_call_refused_a_setting_again_without_it(agent_py, gemini, gemini_batches, trace,
                                                                          tmp_path, monkeypatch):
    """gemini-flash-latest refuses a temperature (GEMINI_TEMPERATURE=0): each request of the first batch fails with
    INVALID_ARGUMENT naming it, and is sent again without it, as a call leaves it out."""
    monkeypatch.setenv("GEMINI_TEMPERATURE", "0")
    _, server, done = gemini_batch_as_the_calls(agent_py, gemini, gemini_batches, trace, tmp_path)
    assert [("temperature" in inline["request"]["generationConfig"]) for inline in server.sent] == \
        [True] * 24 + [False] * 24
    assert "note: 24 call(s) failed in their batch (3: temperature is not supported" in done.stderr


def test_a_gemini_refusal_naming_two_settings_leaves_out_the_one_the_body_still_holds(agent_py, gemini, gemini_batches,
                                                                                       trace, tmp_path, monkeypatch):
    """An error that names both settings ("temperature is not supported for thinking models"): the first batch
    leaves out the first it names, and the next the other, as a call moves on from a setting already left out."""
    import model_servers

    rule = model_servers.thinking_rule
    monkeypatch.setattr(model_servers, "thinking_rule", lambda model, generation: (
        "temperature is not supported for thinking models; leave it unset." if "temperature" in generation
        else rule(model, generation)))
    monkeypatch.setenv("GEMINI_TEMPERATURE", "0")
    _, server, _ = gemini_batch_as_the_calls(agent_py, gemini, gemini_batches, trace, tmp_path)
    assert len(server.jobs) == 3  # without thinking, then without temperature too


def test_a_gemini_batch_sends_a_failed_call_once_more_and_finds_a_batch_it_made_by_its_name(agent_py,
                                                                                           gemini_batches, trace,
                                                                                           tmp_path):
    server = gemini_batches(["Answer: 15.5 °C"] * 24, fail_first=1)
    ledger = tmp_path / "l.jsonl"
    done = agent_py("--replay", trace, *GEMINI, "--via", "batch", "--yes", "--ledger", str(ledger))
    assert done.returncode == 0, done.stderr
    assert "note: 1 call(s) failed in their batch (13: Internal error encountered.)" in done.stderr
    assert [len(job["_requests"]) for job in server.jobs.values()] == [24, 1]
    # killed after the service took the second batch, before the ledger heard its name: started again, it finds it
    lines = ledger.read_text().splitlines(keepends=True)
    second = max(n for n, line in enumerate(lines) if '"type":"submitting"' in line)
    ledger.write_text("".join(lines[:second + 1]))
    again = agent_py("--replay", trace, *GEMINI, "--via", "batch", "--yes", "--ledger", str(ledger))
    assert again.returncode == 0, again.stderr
    assert len(server.jobs) == 2 and "0 calls to send" in again.stderr


@pytest.mark.parametrize("outcome, said", [
    ("failed", "batch batches/1 failed: the service gave no reason"),
    ("expired", "batch batches/1 expired with 0 of 24 calls answered (kept in the ledger): run the same command "
                "again to send the rest"),
])
def test_a_gemini_batch_that_fails_or_expires_is_one_line(agent_py, gemini_batches, trace, outcome, said):
    gemini_batches(list(REPLIES), outcome=outcome)
    done = agent_py("--replay", trace, *GEMINI, "--via", "batch", "--yes")
    assert done.returncode == 1
    assert [line for line in done.stderr.splitlines() if line.startswith("error:")] == \
        [f"error: probing stopped, the tables hold the answers asked before: {said}"]


def test_flex_is_openais_alone(agent_py, trace, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    done = agent_py("--replay", trace, *GEMINI, "--via", "flex", "--yes")
    assert done.stderr.strip() == "error: --via flex: gemini:gemini-flash-latest has no flex engine; openai: has one"


@pytest.mark.parametrize("typed, sent", [("y", True), ("n", False)])
def test_on_a_terminal_the_price_is_shown_and_a_yes_sends(trace, tmp_path, typed, sent):
    from terminals import Terminal

    with BatchStandIn(list(REPLIES), key="test-key-0123") as server:
        terminal = Terminal(["--replay", trace, *PROBE, "--via", "batch", "--answers", str(tmp_path / "a.csv")],
                            {"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": "test-key-0123",
                             "TINYREACT_BATCH_POLL": "0", "NO_PROXY": "127.0.0.1,localhost"})
        try:
            shown = terminal.wait_for("send? [y/N] ")
            assert "24 calls to send to openai:m" in shown and server.requests == []
            terminal.type(f"{typed}\r")
            code = terminal.exit_code()
        finally:
            terminal.close()
    assert (code, len(server.uploaded), (tmp_path / "a.csv").exists()) == ((0, 24, True) if sent else (2, 0, False))


@pytest.mark.slow  # a process started, killed and started again (or a deadline waited out)
@pytest.mark.parametrize("stall", ["create", "poll"])
def test_a_gemini_run_killed_at_any_step_and_started_again_sends_no_call_twice(trace, tmp_path, stall):
    with GeminiBatchStandIn(["Answer: 15.5 °C"] * 24, stall=stall) as server:
        env = {**os.environ, "GOOGLE_GEMINI_BASE_URL": server.url, "GEMINI_API_KEY": server.key,
               "TINYREACT_BATCH_POLL": "0", "NO_PROXY": "127.0.0.1,localhost"}
        argv = [sys.executable, os.path.join(ROOT, "agent.py"), "--replay", trace, *GEMINI, "--via", "batch", "--yes"]
        running = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert server.stalled.wait(60), running.communicate()
        time.sleep(0.2)
        running.send_signal(signal.SIGKILL)
        running.communicate()
        server.stall = None
        again = subprocess.run([*argv, "--answers", str(tmp_path / "a.csv")], env=env, capture_output=True,
                               text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert len(server.sent) == 24 and len(server.jobs) == 1  # sent once, in one batch
    assert (tmp_path / "a.csv").read_text().count("correct") == 24


# ------------------------------------------------------------------ what a run started again must not do

def test_a_ledger_cut_mid_line_is_written_on_whole_and_read_again(agent_py, batches, trace, tmp_path):
    batches(list(REPLIES))
    ledger = tmp_path / "l.jsonl"
    assert agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--ledger", str(ledger)).returncode == 0
    lines = ledger.read_text().splitlines(keepends=True)
    submitted = next(n for n, line in enumerate(lines) if '"type":"submitted"' in line)
    ledger.write_text("".join(lines[:submitted + 1]) + lines[submitted + 1][:20])  # killed writing the next line
    again = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--ledger", str(ledger))
    assert again.returncode == 0, again.stderr
    assert f"line {submitted + 2} was cut off and skipped" in again.stderr
    third = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--ledger", str(ledger))
    assert third.returncode == 0, third.stderr
    assert "0 calls to send" in third.stderr and "cut off" not in third.stderr


def test_calls_to_send_again_are_priced_and_asked_for(agent_py, batches, trace, tmp_path):
    server = batches(["Answer: 15.5 °C"] * 36, outcome="expired")
    assert agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes").returncode == 1
    server.outcome = "completed"
    again = agent_py("--replay", trace, *PROBE, "--via", "batch")  # no terminal, no --yes
    assert again.returncode == 2 and len(server.batches) == 1
    assert again.stderr.startswith("--via batch: 12 calls to send to openai:m, ")
    assert "24 of 24 calls sent before, 12 answered" in again.stderr
    assert again.stderr.splitlines()[-1] == "error: not sent: there is no terminal to ask before paying; add --yes " \
                                            "to send"


@pytest.mark.parametrize("odd", [
    {"error": {"message": "The server is overloaded.", "type": "server_error", "code": 503}},
    {"object": "list", "data": []},
])
def test_a_200_line_that_is_no_completion_is_a_failed_call_sent_once_more(agent_py, batches, trace, tmp_path, odd):
    from servers import Answer

    server = batches([Answer.json(200, odd)] + ["Answer: 15.5 °C"] * 24)
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--answers", str(tmp_path / "a.csv"))
    assert done.returncode == 0, done.stderr
    assert "note: 1 call(s) failed in their batch (" in done.stderr
    assert [len(b) for b in _lines_by_batch(server)] == [24, 1]
    assert (tmp_path / "a.csv").read_text().count("correct") == 24


def test_two_runs_on_one_ledger_at_once_the_second_sends_nothing(agent_py, batches, trace, tmp_path):
    import fcntl

    server = batches(list(REPLIES))
    ledger = tmp_path / "l.jsonl"
    with open(ledger, "ab") as held:  # a run that holds it
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--ledger", str(ledger))
    assert (done.returncode, done.stderr.strip()) == (2, f"error: cannot use the ledger: another run is using it: "
                                                         f"{ledger} (--ledger FILE names another)")
    assert server.requests == [] and ledger.read_bytes() == b""


def test_a_ledger_that_is_a_folder_is_one_line(agent_py, batches, trace, tmp_path):
    server = batches(list(REPLIES))
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--ledger", str(tmp_path))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
    assert server.requests == []


@pytest.mark.slow  # a process started, killed and started again (or a deadline waited out)
def test_a_slow_flex_call_is_waited_for_within_the_deadline_not_sent_again(agent_py, trace, tmp_path, monkeypatch):
    """The flex guide: "Due to slower processing speeds with Flex processing, request timeouts are more likely",
    and its examples wait 15 minutes. A flex answer slower than the calls' usual read timeout (retry.DEFAULT_DEADLINE,
    shortened here) is waited for within TINYREACT_CALL_DEADLINE, not abandoned and sent (and paid for) again."""
    import time as clock

    class SlowFlex(FlexStandIn):
        def handle(self, request):
            if request["path"].endswith("/chat/completions") and len(self.bodies) == 1:
                clock.sleep(1.5)
            return super().handle(request)

    monkeypatch.setattr(retry, "DEFAULT_DEADLINE", 0.5)
    monkeypatch.setenv("TINYREACT_CALL_DEADLINE", "30")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-0123")
    with SlowFlex(list(REPLIES), busy=0) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        done = agent_py("--replay", trace, *PROBE, "--via", "flex", "--yes", "--answers", str(tmp_path / "f.csv"))
    assert done.returncode == 0, done.stderr
    assert len(server.bodies) == 24  # each call sent once


def test_a_batch_that_answered_a_stranger_keeps_its_own_answers_and_the_run_started_again_ends(agent_py, openai,
                                                                                              batches, trace,
                                                                                              tmp_path):
    expected, _ = synchronous(agent_py, openai, trace, tmp_path)
    server = batches(list(REPLIES), stranger=True)
    first = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes")
    assert first.returncode == 1 and "answered for a call it was not sent (custom_id 'not-sent-here')" in first.stderr
    again = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--answers", str(tmp_path / "a.csv"))
    assert again.returncode == 0, again.stderr  # not the same error at every start: the batch's own lines were read
    assert "0 calls to send" in again.stderr and len(server.batches) == 1
    assert (tmp_path / "a.csv").read_text() == expected


def test_max_cost_is_held_against_the_price_without_caching_the_most_it_may_cost(agent_py, batches, trace, tmp_path,
                                                                                 monkeypatch):
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"models": {"m": {"input": 2.0, "cached_input": 0.2, "output": 8.0, "batch": 0.5,
                                                  "min_cache_tokens": 256, "read": "2026-12-07"}}}))
    monkeypatch.setenv("TINYREACT_PRICES", str(table))
    server = batches(list(REPLIES))
    tokens = 24_934  # as counted here for these 24 calls
    cap = f"{tokens * 2.0 / 1e6 / 2 * 0.9:.4f}"  # above the price with caching at best, below the price without
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--max-cost", cap, "--yes")
    assert f"{tokens:,} input tokens" in done.stderr
    assert done.returncode == 2 and server.requests == [], done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"error: --max-cost {float(cap):g}: sending could cost up to $")


def test_a_batch_made_though_its_answer_was_lost_is_found_not_made_again(agent_py, batches, trace, monkeypatch):
    monkeypatch.setattr(retry, "sleep", lambda seconds: None)
    server = batches(["Answer: 15.5 °C"] * 24, lost_creates=1)
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes")
    assert done.returncode == 0, done.stderr
    assert len(server.batches) == 1  # the first try made it: a second would pay for every call twice


def test_a_batch_whose_answer_was_lost_is_found_past_the_first_page_of_the_list(agent_py, trace, monkeypatch):
    """The list of batches comes newest first, 100 a page (`after` names the last one seen): a batch made before 150
    others, its answer lost, is found on the second page, not made again."""
    class Busy(BatchStandIn):  # 150 other batches are made just after the run's
        def _create(self, body):
            answer = super()._create(body)
            for number in range(150):
                self.batches[f"batch_other_{number}"] = {**self.batches["batch_1"], "id": f"batch_other_{number}",
                                                          "input_file_id": "file-other"}
            return answer

    monkeypatch.setattr(retry, "sleep", lambda seconds: None)
    start = next(_stand_ins(monkeypatch, lambda replies, **knobs: Busy(replies, key="test-key-0123", **knobs),
                            lambda server: {"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": "test-key-0123"}))
    server = start(["Answer: 15.5 °C"] * 24, lost_creates=1)
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes")
    assert done.returncode == 0, done.stderr
    assert [id for id in server.batches if not id.startswith("batch_other")] == ["batch_1"]
    pages = [r["query"].get("after") for r in server.requests if r["path"] == "/v1/batches" and r["method"] == "GET"]
    assert pages[-2:] == [None, "batch_other_50"], pages  # the second page starts after the first page's last


def test_a_gemini_batch_made_though_its_answer_was_lost_is_found_not_made_again(agent_py, gemini_batches, trace,
                                                                               monkeypatch):
    monkeypatch.setattr(retry, "sleep", lambda seconds: None)
    server = gemini_batches(["Answer: 15.5 °C"] * 24, lost_creates=1)
    done = agent_py("--replay", trace, *GEMINI, "--via", "batch", "--yes")
    assert done.returncode == 0, done.stderr
    assert len(server.jobs) == 1 and len(server.sent) == 24


def test_calls_more_than_a_batch_takes_go_in_several_sent_together(agent_py, openai, batches, trace, tmp_path,
                                                                    monkeypatch):
    from models.services.openai_batch import OpenAIBatches

    expected, _ = synchronous(agent_py, openai, trace, tmp_path)
    monkeypatch.setattr(OpenAIBatches, "most_calls", 10, raising=False)
    server = batches(list(REPLIES), most_lines=10)
    done = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes", "--answers", str(tmp_path / "b.csv"))
    assert done.returncode == 0, done.stderr
    assert [len(batch) for batch in _lines_by_batch(server)] == [10, 10, 4]
    assert (tmp_path / "b.csv").read_text() == expected


def test_a_gemini_batch_larger_than_inline_requests_take_goes_in_several(agent_py, gemini_batches, trace,
                                                                         monkeypatch):
    from models.services.gemini_batch import GeminiBatches

    monkeypatch.setattr(GeminiBatches, "most_bytes", 30_000, raising=False)
    server = gemini_batches(["Answer: 15.5 °C"] * 24, most_bytes=50_000)
    done = agent_py("--replay", trace, *GEMINI, "--via", "batch", "--yes")
    assert done.returncode == 0, done.stderr
    assert len(server.jobs) > 1 and len(server.sent) == 24


def test_a_ledger_that_cannot_be_written_midway_is_one_line_and_the_run_started_again_sends_nothing(
        agent_py, batches, trace, monkeypatch):
    import errno

    from experiments.ledger import Ledger

    server = batches(list(REPLIES))
    written, appended = [], Ledger._append

    def append(ledger, record):
        if len(written) == 30:  # the calls, the batch, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(record)
        appended(ledger, record)
    with monkeypatch.context() as patched:
        patched.setattr(Ledger, "_append", append)
        full = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes")
    assert full.returncode == 1 and "Traceback" not in full.stderr
    assert full.stderr.splitlines()[-1].endswith("No space left on device; run the same command again once it can "
                                                  "be written")
    again = agent_py("--replay", trace, *PROBE, "--via", "batch", "--yes")
    assert again.returncode == 0, again.stderr
    assert len(server.batches) == 1
