"""The numbers a user sets in the environment are read alike (settings.py): within their bounds, or refused in one
line that names the setting and quotes at most 40 characters of what it holds, through each reader's own error."""
import pytest

import cli
from experiments.batch import poll_seconds
from models import ModelConfigError
from models.services.endpoints import temperature_for
from models.services.gemini import GeminiModel
from models.services.retry import call_deadline
from tools.mcp import McpError, call_seconds

DIGITS = "9" * 5_000  # more digits than Python turns into an int (4,300)
READERS = [  # (variable, how it is read, the error it raises)
    ("TINYREACT_CALL_DEADLINE", call_deadline, ModelConfigError),
    ("TINYREACT_MCP_DEADLINE", call_seconds, McpError),
    ("TINYREACT_BATCH_POLL", poll_seconds, ValueError),
    ("TINYREACT_TEMPERATURE", lambda: temperature_for("ollama", "x"), ModelConfigError),
    ("GEMINI_TEMPERATURE", lambda: GeminiModel("gemini-2.5-flash"), ModelConfigError),
    ("GEMINI_MAX_OUTPUT_TOKENS", lambda: GeminiModel("gemini-2.5-flash"), ModelConfigError),
]


@pytest.mark.parametrize("variable, read, error", READERS)
@pytest.mark.parametrize("value", [DIGITS, "9" * 400, "x" * 3_000, "nan", "-inf", "-1"])  # 400: past a float
def test_a_setting_out_of_bounds_is_one_short_line_naming_it(monkeypatch, variable, read, error, value):
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv(variable, value)
    with pytest.raises(error) as refused:
        read()
    message = str(refused.value)
    assert message.startswith(f"{variable} must be ") and "\n" not in message and len(message) < 200
    assert f"got {value[:40]!r}"[:-1] in message  # the value's start, quoted


def test_a_deadline_says_that_zero_is_refused(monkeypatch):
    monkeypatch.setenv("TINYREACT_MCP_DEADLINE", "0")
    with pytest.raises(McpError, match=r"TINYREACT_MCP_DEADLINE must be a number of seconds above 0 and at most 3,600, "
                                       r"got '0'"):
        call_seconds()
    monkeypatch.setenv("TINYREACT_MCP_DEADLINE", "0.5")
    assert call_seconds() == 0.5


def test_settings_within_bounds_are_read_as_numbers(monkeypatch):
    for variable, value in [("TINYREACT_CALL_DEADLINE", "1e3"), ("TINYREACT_BATCH_POLL", "0"),
                            ("GEMINI_MAX_OUTPUT_TOKENS", " 2048 "), ("GEMINI_TEMPERATURE", "0.5")]:
        monkeypatch.setenv(variable, value)
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    model = GeminiModel("gemini-2.5-flash")
    assert (call_deadline(), poll_seconds(), model.max_output_tokens) == (1000.0, 0.0, 2048)


def test_an_output_limit_of_thousands_of_digits_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("GEMINI_MAX_OUTPUT_TOKENS", DIGITS)
    assert cli.main(["What is 2 + 2?", "--model", "gemini"]) == 2
    assert capsys.readouterr().err == (
        f"error: GEMINI_MAX_OUTPUT_TOKENS must be a whole number from 1 to 2,147,483,647, got '{DIGITS[:40]}...'\n")


def test_options_and_policy_parameters_quote_at_most_40_characters_and_refuse_nan(capsys):
    with pytest.raises(SystemExit) as stopped:  # argparse's usage error
        cli.main(["--ttl", DIGITS, "What is 2 + 2?"])
    assert stopped.value.code == 2
    said = capsys.readouterr().err
    assert said == f"error: argument --ttl: expected a whole number, got '{DIGITS[:40]}...' (see --help)\n"
    assert cli.main(["--show-prompt", "--policy", f"window:{DIGITS}"]) == 2
    assert f"takes a whole number, as in window:4; got '{DIGITS[:40]}...'\n" in capsys.readouterr().err
    assert cli.main(["--show-prompt", "--policy", "claude-code:idle_minutes=nan"]) == 2  # never cleared, silently
    assert "error: policy 'claude-code': idle_minutes takes a number, got 'nan';" in capsys.readouterr().err
    assert cli.main(["--show-prompt", "--policy", "claude-code:idle_minutes=inf"]) == 0  # never cleared, as asked


def test_a_thinking_budget_of_thousands_of_digits_is_one_line_naming_the_variable(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("GEMINI_THINKING", DIGITS)
    with pytest.raises(ModelConfigError, match=r"^GEMINI_THINKING must be none, .* got '9{40}\.\.\.'$"):
        GeminiModel("gemini-2.5-flash")


def test_a_cache_folder_in_a_home_that_cannot_be_found_is_one_line(monkeypatch, capsys):
    monkeypatch.setenv("TINYREACT_CACHE_DIR", "~no-such-user-here/models")
    assert cli.main(["--verify-cache"]) == 2
    assert capsys.readouterr().err == (
        "error: the model cache's folder (TINYREACT_CACHE_DIR='~no-such-user-here/models') cannot be found (Could not "
        "determine home directory); set TINYREACT_CACHE_DIR to a folder\n")
