"""A real Arize Phoenix shows a TinyReAct run: a benchmark script, not a test (it needs Phoenix, installed apart).

    python3 -m venv /work/venv-phoenix && /work/venv-phoenix/bin/pip install arize-phoenix
    .venv/bin/python bench/phoenix.py --phoenix /work/venv-phoenix/bin/phoenix [--embedded] [--screenshots docs]

It starts `phoenix serve` on loopback ports, with a working folder of its own and its telemetry off (it needs no
network), and runs `python agent.py QUESTION --otel` against it, as a user would:

1. the Gemini backend against the tests' loopback Gemini (tests/model_servers.py), with scripted replies and usage
   numbers (cached tokens among them) and the model that answers named `gemini-3.8-flash`, which Phoenix has a price
   for; under `--policy window:1` and with message content asked for, so that Phoenix shows what the model was shown;
2. with `--embedded`, the embedded Qwen 0.5B answering for real on this machine: tokens, and no price (Phoenix has
   none for it).

Then it reads the spans back through Phoenix's REST API and its GraphQL API, checks that each run is one trace (its
agent span, its model calls and tool calls under it) with the tokens of every call, and that the cost Phoenix worked
out from its own price table is the cost TinyReAct works out from models/prices.json; and with `--screenshots
FOLDER`, it takes two screenshots of the trace in Phoenix's UI with headless Chromium (tests/browser.py):
phoenix-trace.png (the model call and what it was shown) and phoenix-attributes.png (its attributes).
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from repository import ROOT, add_tests_to_path

add_tests_to_path()
from model_servers import GeminiStandIn, gemini_response  # noqa: E402

QUESTION = "What is (2 + 3) * 4?"
KEY = "AIza-bench-phoenix-0000"  # the loopback Gemini's; it must not reach Phoenix


def usage(text: str, prompt: int, cached: int = 0) -> dict:
    return gemini_response(text, prompt_tokens=prompt, output_tokens=len(text) // 4, cached_tokens=cached)


# The replies of the scripted run, with usage numbers of the size a Gemini call of this prompt reports
REPLIES = [usage("Thought: 2 + 3 first.\nAction: add_numbers(2, 3)", 1_130),
           usage("Thought: then times 4.\nAction: multiply_numbers(5, 4)", 1_160, cached=1_024),
           usage("Thought: that is the result.\nAnswer: (2 + 3) * 4 = 20", 1_190, cached=1_024)]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(url: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode() if body else None,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def start_phoenix(command: str, folder: str) -> tuple[subprocess.Popen, str]:
    """`phoenix serve` on free loopback ports; its URL once it answers (it takes 10 to 20 s to start here)."""
    port = free_port()
    environment = dict(os.environ, PHOENIX_WORKING_DIR=folder, PHOENIX_HOST="127.0.0.1", PHOENIX_PORT=str(port),
                       PHOENIX_GRPC_PORT=str(free_port()), PHOENIX_TELEMETRY_ENABLED="false")
    log = open(os.path.join(folder, "phoenix.log"), "w")
    server = subprocess.Popen([command, "serve"], env=environment, stdout=log, stderr=subprocess.STDOUT)
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"phoenix serve ended with {server.returncode}: see {log.name}")
        try:
            get(url + "/v1/projects")
            return server, url
        except OSError:
            time.sleep(0.5)
    server.terminate()
    raise SystemExit(f"phoenix serve did not answer within 180 s: see {log.name}")


def run(phoenix: str, arguments: list[str], environment: dict) -> tuple[float, str]:
    """`python agent.py QUESTION --otel ...` against Phoenix; its time and what it said on stderr."""
    environment = dict(environment, OTEL_EXPORTER_OTLP_ENDPOINT=phoenix, NO_PROXY="127.0.0.1,localhost")
    started = time.monotonic()
    done = subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), QUESTION, "-q", "--otel", *arguments],
                          capture_output=True, text=True, env=environment, timeout=900)
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"agent.py exited {done.returncode}: {done.stderr.strip()}")
    print(f"  answer {done.stdout.strip()!r} in {seconds:.1f} s; {done.stderr.strip().splitlines()[-1]}")
    return seconds, done.stderr


def spans_of(phoenix: str, traces: int) -> list[dict]:
    """The spans Phoenix holds, once it holds those of `traces` traces (it stores them a moment after they come)."""
    deadline = time.monotonic() + 30
    while True:
        spans = get(f"{phoenix}/v1/projects/default/spans?limit=1000")["data"]
        roots = [span for span in spans if span["span_kind"] == "AGENT"]
        if len(roots) >= traces or time.monotonic() > deadline:
            return spans
        time.sleep(0.2)


def trace_cost(phoenix: str, trace_id: str) -> dict:
    """Phoenix's cost of one trace, worked out on its side from the spans' model names and token counts."""
    query = ('{ projects { edges { node { trace(traceId: "%s") { numSpans costSummary { total { cost tokens } '
             'prompt { cost tokens } completion { cost tokens } } } } } } }' % trace_id)
    return get(f"{phoenix}/graphql", {"query": query})["data"]["projects"]["edges"][0]["node"]["trace"]


def check_trace(phoenix: str, spans: list[dict], trace_id: str, replies: list | None) -> dict:
    """One run's trace as Phoenix holds it: its spans under its agent span, the tokens of each call, the cost."""
    mine = [span for span in spans if span["context"]["trace_id"] == trace_id]
    [root] = [span for span in mine if span["span_kind"] == "AGENT"]
    calls = sorted((span for span in mine if span["span_kind"] == "LLM"), key=lambda span: span["start_time"])
    tools = [span for span in mine if span["span_kind"] == "TOOL"]
    assert all(span["parent_id"] == root["context"]["span_id"] for span in calls + tools), "a span is not under its run"
    assert len(mine) == 1 + len(calls) + len(tools)
    for call in calls:
        assert call["attributes"]["llm.token_count.prompt"] == call["attributes"]["gen_ai.usage.input_tokens"] > 0
    if replies is not None:  # the scripted run: the tokens are the loopback Gemini's, to the token
        assert [call["attributes"]["llm.token_count.prompt"] for call in calls] == [
            reply["usageMetadata"]["promptTokenCount"] for reply in replies]
        assert [call["attributes"].get("llm.token_count.prompt_details.cache_read") for call in calls] == [
            reply["usageMetadata"].get("cachedContentTokenCount") for reply in replies]
    cost = trace_cost(phoenix, trace_id)
    own = root["attributes"].get("tinyreact.cost.usd")
    found = {"spans": len(mine), "model calls": len(calls), "tool calls": len(tools),
             "tokens in": [call["attributes"]["llm.token_count.prompt"] for call in calls],
             "cached": [call["attributes"].get("llm.token_count.prompt_details.cache_read") for call in calls],
             "tokens out": [call["attributes"]["llm.token_count.completion"] for call in calls],
             "dropped by the policy": [call["attributes"].get("tinyreact.context.dropped") for call in calls],
             "phoenix cost": cost["costSummary"]["total"]["cost"], "tinyreact cost": own}
    if replies is not None:
        assert cost["numSpans"] == len(mine)
        assert own and abs(cost["costSummary"]["total"]["cost"] - own) < 1e-9, (cost, own)
    return found


def screenshots(phoenix: str, span_id: str, folder: str) -> list[str]:
    """The trace in Phoenix's UI, its last model call selected: what it was shown, then its attributes."""
    from browser import chromium
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    os.makedirs(folder, exist_ok=True)
    paths = [os.path.join(folder, "phoenix-trace.png"), os.path.join(folder, "phoenix-attributes.png")]
    with chromium(1400, 900) as driver:
        driver.get(f"{phoenix}/redirects/spans/{span_id}")
        wait = WebDriverWait(driver, 60)
        wait.until(expected_conditions.presence_of_element_located((By.XPATH, "//*[text()='invoke_agent TinyReAct']")))
        wait.until(expected_conditions.presence_of_element_located((By.XPATH, "//*[text()='system']")))
        time.sleep(1)  # the trace tree's costs come in a request of their own
        assert driver.save_screenshot(paths[0]), f"could not write {paths[0]}"
        driver.find_element(By.XPATH, "//*[@role='tab' and text()='Attributes']").click()
        # the keys break at their dots (<wbr>): matched by their whole text
        first = wait.until(expected_conditions.presence_of_element_located(
            (By.XPATH, "//span[.='tinyreact.context.dropped']")))
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", first)  # what the policy did
        time.sleep(1)
        assert driver.save_screenshot(paths[1]), f"could not write {paths[1]}"
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--phoenix", default=shutil.which("phoenix") or "/work/venv-phoenix/bin/phoenix",
                        help="the phoenix command, from the venv Phoenix was installed into")
    parser.add_argument("--embedded", action="store_true", help="also a run of the embedded Qwen 0.5B")
    parser.add_argument("--screenshots", metavar="FOLDER", help="write phoenix-trace.png and phoenix-attributes.png")
    args = parser.parse_args()
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith(("OTEL_", "GEMINI", "GOOGLE", "OPENAI", "TINYREACT_MODEL"))}
    with tempfile.TemporaryDirectory() as folder:
        server, phoenix = start_phoenix(args.phoenix, folder)
        try:
            with urllib.request.urlopen(phoenix + "/arize_phoenix_version", timeout=30) as answer:
                print(f"Phoenix {answer.read().decode().strip()} at {phoenix}")
            with GeminiStandIn(list(REPLIES), key=KEY) as gemini:
                print("1. the Gemini backend, scripted replies from a loopback Gemini, window:1, content on")
                run(phoenix, ["--policy", "window:1"], dict(environment, GEMINI_API_KEY=KEY,
                                                            GOOGLE_GEMINI_BASE_URL=gemini.url,
                                                            OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true"))
            spans = spans_of(phoenix, 1)
            scripted = spans[0]["context"]["trace_id"]
            print("  ", json.dumps(check_trace(phoenix, spans, scripted, REPLIES)))
            assert KEY not in json.dumps(spans), "the key reached Phoenix"
            if args.embedded:
                print("2. the embedded Qwen 0.5B, answering on this machine")
                run(phoenix, ["--model", "local:qwen2.5-coder-0.5b"], environment)
                spans = spans_of(phoenix, 2)
                embedded = next(span["context"]["trace_id"] for span in spans
                                if span["context"]["trace_id"] != scripted)
                print("  ", json.dumps(check_trace(phoenix, spans, embedded, None)))
            if args.screenshots:
                last = max((span for span in spans if span["context"]["trace_id"] == scripted
                            and span["span_kind"] == "LLM"), key=lambda span: span["start_time"])
                for path in screenshots(phoenix, last["context"]["span_id"], args.screenshots):
                    print("wrote", path)
        finally:
            server.terminate()
            server.wait(30)


if __name__ == "__main__":
    main()
