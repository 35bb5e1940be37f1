"""Every test runs offline with no key: real credentials, proxies and OpenTelemetry endpoints in the environment are
removed. The stand-ins several test files start are fixtures here, each named through the environment as a user
names a service: `gemini`, `openai`, and `world` (Gemini, Wikipedia and Open-Meteo: the Super Bowl question's); and
`agent_py`, the command line run in the test's own process where no process boundary is under test."""
import io
import os
import signal
import subprocess
import sys

import pytest

# Two test workers on two cores: OpenBLAS's own threads in each (one a core) spin against the other worker's, and
# the embedded model's tests took twice as long (167 s against 87 s). Each worker's BLAS, and every process it
# starts, gets one thread; this is read before numpy is first imported. A run in one process keeps them all.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from model_servers import GeminiStandIn, OpenAIStandIn, stand_ins  # noqa: E402  (found through the path set above)
from servers import FakeOpenMeteo, FakeWikipedia  # noqa: E402

KEY_VARIABLES = ["GEMINI_API_KEY", "GOOGLE_API_KEY", "GEMINI_MODEL", "GEMINI_TEMPERATURE", "GEMINI_THINKING",
                 "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE",
                 "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_GENAI_API_VERSION",
                 "WIKIPEDIA_API_URL", "OPEN_METEO_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "http_proxy", "https_proxy", "all_proxy", "TINYREACT_MODEL", "TINYREACT_CALL_DEADLINE",
                 "GEMINI_MAX_OUTPUT_TOKENS", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "LLAMACPP_BASE_URL",
                 "TINYREACT_TEMPERATURE", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                 "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_SERVICE_NAME",
                 "OTEL_RESOURCE_ATTRIBUTES", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"]


@pytest.fixture(autouse=True)
def offline_environment(monkeypatch, tmp_path):
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.chdir(tmp_path)  # so no developer's .env in the working folder is read
    import wikipedia
    for cached in (wikipedia.search, wikipedia.summary, wikipedia.suggest):
        cached.clear_cache()


@pytest.fixture
def sigint_reaches_children():
    """For a test that interrupts a process it starts with SIGINT, as Ctrl-C does: skipped, with the reason, when
    that process could not be interrupted, because it inherits SIGINT ignored or blocked from this one (a shell
    without job control starts a background job, `python -m pytest &` in a script, with SIGINT ignored)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        pytest.skip("SIGINT is ignored here (as in a background job started by a script): the agent started from "
                    "here inherits that, and Ctrl-C cannot stop it")
    if signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []):
        pytest.skip("SIGINT is blocked here: the agent started from here inherits that, and Ctrl-C cannot stop it")


@pytest.fixture
def gemini(monkeypatch):
    """start(replies, **options): a GeminiStandIn answering with `replies`, the SDK pointed at it as a user would with
    GOOGLE_GEMINI_BASE_URL, and its key (`key`, else test-key) in GEMINI_API_KEY. Returns the stand-in."""
    yield from stand_ins(monkeypatch, GeminiStandIn,
                         lambda server: {"GOOGLE_GEMINI_BASE_URL": server.url, "GEMINI_API_KEY": server.key})


@pytest.fixture
def openai(monkeypatch):
    """start(replies): an OpenAIStandIn serving the model m (`--model openai:m`), named by OPENAI_BASE_URL, with a key
    in OPENAI_API_KEY. Returns the stand-in."""
    yield from stand_ins(monkeypatch, lambda replies: OpenAIStandIn(replies, models=("m",)),
                         lambda server: {"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": "test-key-0123"})


# The Wikipedia pages the Super Bowl LIX question needs (and one it must not take for them).
SUPER_BOWL_PAGES = {
    "Super Bowl LIX": {"extract": "Super Bowl LIX was an American football game played to determine the champion of "
                                  "the NFL for the 2024 season. The game was played on February 9, 2025, at the "
                                  "Caesars Superdome in New Orleans, Louisiana. The Eagles won.", "coordinates": None},
    "Super Bowl LVIII": {"extract": "Super Bowl LVIII was played at Allegiant Stadium.", "coordinates": None},
    "Caesars Superdome": {"extract": "The Caesars Superdome is a domed stadium in New Orleans.",
                          "coordinates": (29.950833, -90.081111)},
}


@pytest.fixture
def tool_services(monkeypatch):
    """Loopback Wikipedia (SUPER_BOWL_PAGES) and Open-Meteo (15.5 °C at the Superdome), named by WIKIPEDIA_API_URL
    and OPEN_METEO_URL. Gives (wikipedia, open_meteo)."""
    with FakeWikipedia(SUPER_BOWL_PAGES) as wiki, FakeOpenMeteo({(29.95, -90.08): 15.5}) as meteo:
        monkeypatch.setenv("WIKIPEDIA_API_URL", wiki.url + "/w/api.php")
        monkeypatch.setenv("OPEN_METEO_URL", meteo.url + "/v1/forecast")
        yield wiki, meteo


@pytest.fixture
def world(gemini, tool_services):
    """start(replies, **options): the `gemini` stand-in (its key sk-test-SECRET-4242, unless `key` is given) beside
    the tool services: a whole run on loopback, wired in through the environment as a user would. Returns the
    Gemini stand-in."""
    return lambda replies, **options: gemini(replies, **{"key": "sk-test-SECRET-4242", **options})


@pytest.fixture
def agent_py(capsys, monkeypatch):
    """agent_py(*argv, stdin=""): `python agent.py ARGV` with `stdin` as its input (not a terminal), run in this
    process: cli.main's exit code (or the SystemExit argparse raises for a usage error), stdout and stderr, as
    subprocess.run gives them; stdout and stderr are capsys's, strict UTF-8. The environment and the working folder
    are the test's (offline_environment's). What needs a process of its own stays one: signals, a closed stdout, a
    terminal, the interpreter's start and its decoding of argv and stdin, .env files."""
    import cli

    def run(*argv: str, stdin: str = "") -> subprocess.CompletedProcess:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()  # what was written before this run is not its output
        try:
            code = cli.main(list(argv))
        except SystemExit as stop:
            code = stop.code
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["agent.py", *argv], code, out, err)
    return run
