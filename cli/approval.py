"""A person's yes on the terminal before a tool runs: when one is needed is tools/approval.py's; the question is
asked here, on stderr, and answered on the terminal that stdin is. With no terminal there, nobody is asked (the call
is declined), so a piped or scheduled run never waits for an answer."""
import os
import sys

from tools.approval import CHOICES, Approval, choice, shown
from views.terminal import clean
from cli.output import UsageError

PROMPT = "  " + ", ".join(f"{key} {what}" for key, what in CHOICES.items()) + "? "


def approval_for(args, display=None) -> Approval:
    """The Approval of a run or a chat: --confirm asks before every call, --yes (or TINYREACT_YES=1) before none, and
    otherwise before the MCP tools that may be destructive; asked on the terminal, if stdin is one (with a
    `display` to pause: without one, as for --tools, nobody is asked)."""
    ask = terminal_asker(display) if display is not None and sys.stdin.isatty() else None
    return Approval(ask, confirm=args.confirm, yes=args.yes or (not args.confirm and yes_from_environment()))


def yes_from_environment() -> bool:
    """TINYREACT_YES: 1 (or true, yes) says yes to every tool call; unset, empty, 0 (false, no) does not."""
    value = os.environ.get("TINYREACT_YES", "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise UsageError(f"TINYREACT_YES is {clean(value[:40])!r}: set it to 1 to run every tool call without asking, or "
                     "leave it unset")


def terminal_asker(display):
    """A function that asks the person about one call (tools.approval.Ask): what the tool is, where it comes from,
    why it asks and the arguments, then one letter; `e` offers the arguments as JSON to edit."""
    def ask(tool, arguments: dict, why: str, problem: str | None) -> tuple[str, str | None]:
        display.close()  # the spinner stops and a streamed reply ends before the question is printed
        current = shown(arguments)
        if problem is None:
            discard_typed_ahead()
            where = f"from the MCP server {tool.mcp['server']}" if hasattr(tool, "mcp") else "built in"
            say(f"Run {tool.__name__} ({where})? A yes is needed: {why}.")
            say(f"  arguments: {current}")
        else:
            say(f"  those arguments were not taken: {problem}")
        chosen = None
        while chosen is None:
            chosen = choice(answer(PROMPT))
        if chosen == "e":
            return chosen, answer("  arguments as JSON (Enter keeps them): ", current) or current
        return chosen, None
    return ask


def discard_typed_ahead() -> None:
    """Drop what was typed on the terminal before the question is shown (a `y` typed while a reply streamed would
    otherwise answer a question no one has read)."""
    if sys.stdin.isatty():
        import termios  # POSIX's, as fcntl is: imported where it is used

        try:
            termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
        except (termios.error, OSError, ValueError):
            pass  # not a terminal after all: nothing was typed ahead on it


def say(text: str) -> None:
    print(clean(text), file=sys.stderr, flush=True)


def answer(prompt: str, prefill: str = "") -> str:
    """A line typed on the terminal, `prefill` already on it to edit where readline can; the prompt goes to stderr,
    so that stdout (a --json object) holds only what it should. EOFError at Ctrl-D."""
    print(prompt, end="", file=sys.stderr, flush=True)
    try:
        import readline
    except ImportError:  # not on every platform: the line is then typed whole
        readline = None
    if readline and prefill:
        readline.set_startup_hook(lambda: readline.insert_text(prefill))
    try:
        return input()
    finally:
        if readline:
            readline.set_startup_hook()
