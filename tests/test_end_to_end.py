"""The Super Bowl question end to end through the OpenAI-compatible backends, as a user runs them: the real
`requests` client against a loopback chat/completions server, the real tools against loopback MediaWiki and
Open-Meteo. Streamed and whole replies must leave the same trace."""
import json

import cli
from agent import TinyReAct
from models import load_model
from model_servers import OpenAIStandIn
from test_cli import SUPER_BOWL_QUESTION, SUPER_BOWL_REPLIES

ANSWER = "It is 59.9 °F (15.5 °C) at the Caesars Superdome in New Orleans."


def test_openai_compatible_server_answers_the_super_bowl_question(tool_services, monkeypatch, capsys):
    with OpenAIStandIn(SUPER_BOWL_REPLIES, key="sk-test", models=("gpt-test",)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        code = cli.main([SUPER_BOWL_QUESTION, "--model", "openai:gpt-test", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["answer"] == ANSWER
    assert (result["model"], result["backend"], result["steps"], result["model_calls"]) == ("gpt-test", "openai", 6, 7)
    assert server.bodies[0]["stop"] == ["\nObservation"] and server.bodies[0]["model"] == "gpt-test"
    assert server.bodies[-1]["messages"][-1]["content"].endswith("Observation6: 59.9")


def test_ollama_with_its_host_overridden_answers_without_a_key(tool_services, monkeypatch, capsys):
    with OpenAIStandIn(SUPER_BOWL_REPLIES, models=("qwen3:8b",)) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        code = cli.main([SUPER_BOWL_QUESTION, "--model", "ollama:qwen3:8b", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["answer"] == ANSWER and result["backend"] == "ollama"
    assert all("Authorization" not in request["headers"] for request in server.requests)


def without_times(events):
    return [{k: v for k, v in event.items() if k != "t"} for event in events]


def test_streamed_and_whole_replies_leave_the_same_trace(tool_services, monkeypatch):
    traces, shown = [], []
    for stream in (False, True):
        with OpenAIStandIn(SUPER_BOWL_REPLIES, key="sk-test", models=("gpt-test",)) as server:
            monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
            agent = TinyReAct(load_model("openai:gpt-test"), on_text=shown.append if stream else None)
            result = agent.query(SUPER_BOWL_QUESTION)
        assert result.answer == ANSWER
        traces.append(without_times(agent.trace.events))
    assert traces[0] == traces[1]
    assert "".join(shown).startswith("Thought1: I need to find out where Super Bowl LIX was played.")
    assert "Observation" not in "".join(shown)  # the stream was closed at the cut, never shown past it
