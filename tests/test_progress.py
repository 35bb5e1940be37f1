"""A first run's progress (joining and unpacking an embedded model, minutes on a new cache) is seen also when stderr
is not a terminal: a line at each stage and one every few seconds within it, not a spinner nobody sees."""
from views import display
from views.display import spinner


def test_progress_on_a_stderr_that_is_no_terminal_is_a_line_a_stage(capsys, monkeypatch):
    monkeypatch.setattr(display, "QUIET_SECONDS", 0)
    with spinner("loading…", start=False, lines=True) as update:
        for number in range(1, 101):
            update(f"unpacking the weights to float32, once ({number}/100)")
        update("loading Qwen2.5 Coder 0.5B")
    assert capsys.readouterr().err.splitlines() == ["unpacking the weights to float32, once (1/100)",
                                                    "loading Qwen2.5 Coder 0.5B"]


def test_a_long_stage_is_said_again_every_few_seconds(capsys, monkeypatch):
    monkeypatch.setattr(display, "QUIET_SECONDS", 0)
    monkeypatch.setattr(display, "PROGRESS_SECONDS", 0)
    with spinner("loading…", start=False, lines=True) as update:
        for number in range(1, 4):
            update(f"joining the model file from its packages, once ({number}/3)")
    assert len(capsys.readouterr().err.splitlines()) == 3


def test_a_short_wait_says_nothing(capsys):
    with spinner("loading…", start=False, lines=True) as update:
        update("loading Qwen2.5-Coder 0.5B")
    assert capsys.readouterr().err == ""
