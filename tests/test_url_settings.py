"""A base URL setting that cannot be used is one line naming the variable, never a traceback, wherever it is read:
a question, the model listing, and for each service's variable."""
import pytest

import cli

BAD = ["http://localhost:99999/v1", "http://localhost:abc/v1", "http://local host:8080/v1", "https:", "http://:8080/v1",
       "http://[::1/v1", "http://user:hunter2@localhost:0/v1", "ftp://example.org/v1", "http://exa\x07mple.org/v1"]
VARIABLES = {"OPENAI_BASE_URL": "openai:x", "LLAMACPP_BASE_URL": "llamacpp:x", "OLLAMA_HOST": "ollama:x",
             "GOOGLE_GEMINI_BASE_URL": "gemini:gemini-2.5-flash"}


@pytest.mark.parametrize("variable", VARIABLES)
@pytest.mark.parametrize("value", BAD)
def test_a_url_that_cannot_be_used_is_one_line_naming_its_variable(monkeypatch, capsys, variable, value):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv(variable, value)
    assert cli.main(["What is 2 + 2?", "--model", VARIABLES[variable], "--no-stream"]) == 2
    err = capsys.readouterr().err
    [line] = err.strip().splitlines()
    assert line.startswith("error: ") and variable in line and "hunter2" not in line


@pytest.mark.parametrize("value", ["localhost:99999", "local host", "user:hunter2@localhost:abc"])
def test_ollama_host_forms_without_a_scheme_are_checked_too(monkeypatch, capsys, value):
    monkeypatch.setenv("OLLAMA_HOST", value)
    assert cli.main(["What is 2 + 2?", "--model", "ollama:x", "--no-stream"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "OLLAMA_HOST" in line and "hunter2" not in line


def test_the_model_listing_says_which_setting_is_wrong_and_lists_the_rest(monkeypatch, capsys):
    monkeypatch.setenv("LLAMACPP_BASE_URL", "http://localhost:99999/v1")
    monkeypatch.setenv("OPENAI_BASE_URL", "https:")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert cli.main(["--models"]) == 0
    out = capsys.readouterr().out
    assert "✗ llamacpp:MODEL — LLAMACPP_BASE_URL is not a URL" in out and "✗ openai:MODEL — OPENAI_BASE_URL" in out
    assert "local:qwen2.5-coder-0.5b" in out
