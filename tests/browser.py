"""Headless Chromium for the page tests, the demonstration pages, and the screenshots in docs/.

    python tests/browser.py docs      # writes docs/page-run.png, page-chat.png, page-compare.png, page-replay.png

Chromium and its driver are Debian packages (`apt-get install chromium chromium-driver`); selenium, which drives
them, is a development dependency (requirements-dev.txt). `missing()` names whatever is absent, so that a test
can skip with that message instead of failing on a machine without a browser.
"""
import contextlib
import os
import shutil
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "conversations"))

from agent import TinyReAct  # noqa: E402
from experiments.live import compare_live  # noqa: E402
from experiments.replay import replay  # noqa: E402
from models.scripted import ScriptedModel  # noqa: E402
from policies import make_policy  # noqa: E402
from tokens import local_counter  # noqa: E402
from traces import read_trace_file  # noqa: E402
from views.pages import compare_page, replay_page, run_page  # noqa: E402

BROWSERS = ["chromium", "chromium-browser", "google-chrome"]
INSTALL = "apt-get install chromium chromium-driver"
REPLAY_POLICIES = ["full", "window:2", "user-only:4", "elide:2", "pinned", "compact:8000"]


def missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install -r requirements-dev.txt"
    if not any(shutil.which(name) for name in BROWSERS):
        return f"Chromium is not installed: {INSTALL}"
    if not shutil.which("chromedriver"):
        return f"chromedriver is not installed: {INSTALL}"
    return None


@contextlib.contextmanager
def chromium(width: int = 1200, height: int = 900):
    """A headless Chromium driven by selenium, recording the page's console messages."""
    from selenium import webdriver  # a development dependency: imported only when a browser is wanted
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = next(shutil.which(name) for name in BROWSERS if shutil.which(name))
    for argument in ["--headless=new", "--disable-gpu", "--disable-dev-shm-usage", f"--window-size={width},{height}",
                     "--hide-scrollbars", "--force-device-scale-factor=1"]:
        options.add_argument(argument)
    if os.geteuid() == 0:  # Chromium refuses to start as root with its sandbox on
        options.add_argument("--no-sandbox")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    try:
        yield driver
    finally:
        driver.quit()


def superbowl_replies(answer: str) -> list[str]:
    """The Super Bowl run's replies, as conversations/build.py scripts them, ending with `answer`."""
    import build

    (_, steps, (thought, _)), = build.SUPER_BOWL
    replies = [f"Thought{n}: {step_thought}\nAction{n}: {action}" for n, (step_thought, action) in enumerate(steps, 1)]
    return replies + [f"Thought{len(steps) + 1}: {thought}\nAnswer: {answer}"]


def compare_traces(folder: str, specs=("full", "window:1", "elide:1")) -> list[tuple[dict, list[dict]]]:
    """The Super Bowl question run once per policy with `--compare --trace`'s file names: the same scripted replies
    each time (the last one answers without the stadium), the network tools answering from build.py's texts."""
    import build

    answers = {"full": "It is 59.9 °F (15.5 °C) at the Caesars Superdome in New Orleans."}
    model = ScriptedModel([reply for spec in specs for reply in superbowl_replies(answers.get(spec, "It is 59.9 °F."))])
    paths = {spec: os.path.join(folder, f"compare.{spec.replace(':', '-')}.jsonl") for spec in specs}
    runs = compare_live(build.SUPER_BOWL_QUESTION, list(specs), model, build.stand_ins(build.SUPER_BOWL_CANNED),
                        counter=local_counter(), trace_path=lambda spec, attempt: paths[spec])
    for _ in runs:
        pass
    return [read_trace_file(paths[spec]) for spec in specs]


def chat_events() -> list[dict]:
    """A short chat: the Super Bowl question under elide:1, then the policy switched to window:1 for a follow-up."""
    import build

    replies = superbowl_replies("It is 59.9 °F (15.5 °C) at the Caesars Superdome.")
    replies += ["Thought1: 59.9 °F minus 32, then divided by 1.8.\nAction1: subtract_numbers(59.9, 32)",
                "Thought2: Now divide.\nAction2: divide_numbers(27.9, 1.8)",
                "Thought3: Back where we began.\nAnswer: 15.5 °C"]
    agent = TinyReAct(ScriptedModel(replies), tools=build.stand_ins(build.SUPER_BOWL_CANNED),
                      policy=make_policy("elide:1"), counter=local_counter())
    agent.query(build.SUPER_BOWL_QUESTION)
    agent.use_policy(make_policy("window:1"))
    agent.query("And converted back to Celsius?")
    return list(agent.trace.events)


def demo_pages(folder: str) -> dict[str, str]:
    """The three page kinds for the shipped conversations, written into `folder`: {kind: path}."""
    counter = local_counter()
    pages = {}
    header, events = read_trace_file(os.path.join(ROOT, "conversations", "superbowl.jsonl"))
    pages["run"] = run_page(header, events, counter)
    pages["chat"] = run_page({"title": "A chat: elide:1, then window:1"}, chat_events(), counter)
    pages["compare"] = compare_page(compare_traces(folder), counter, expect="59.9")
    header, events = read_trace_file(os.path.join(ROOT, "conversations", "long.jsonl"))
    pages["replay"] = replay_page(header, events, replay(header, events, REPLAY_POLICIES, counter), counter)
    paths = {}
    for kind, text in pages.items():
        paths[kind] = os.path.join(folder, f"page-{kind}.html")
        with open(paths[kind], "w", encoding="utf-8") as file:
            file.write(text)
    return paths


def screenshots(folder: str) -> None:
    """A PNG of each page kind as a reader first sees it; the chat from where its policy changes."""
    import tempfile

    with tempfile.TemporaryDirectory() as scratch, chromium(1100, 1500) as driver:
        for kind, path in demo_pages(scratch).items():
            driver.get("file://" + path)
            if kind == "chat":
                driver.execute_script("document.querySelectorAll('h2.question')[1].scrollIntoView()")
            target = os.path.join(folder, f"page-{kind}.png")
            driver.save_screenshot(target)
            print(target)


if __name__ == "__main__":
    problem = missing()
    if problem:
        sys.exit(f"error: {problem}")
    screenshots(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs"))
