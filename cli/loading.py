"""What a mode reads before it runs: the .env files, the model (a spinner on stderr while it loads) and a saved
trace. What cannot be read is a UsageError: one line, exit 2."""
import contextlib
import sys
from pathlib import Path
from typing import Iterator

from models import Model, ModelConfigError, load_model, resolved_spec
from models.prices import prices
from tokens import read_vocabulary_elsewhere
from tools.mcp import McpError, McpServers, specs_from_environment
from traces import TraceFile, load_trace
from cli.output import UsageError

ENV_BESIDE_AGENT = Path(__file__).resolve().parent.parent / ".env"  # this module is in cli/, beside agent.py

def load_env_files() -> list[str]:
    """Read ./.env and the .env beside agent.py, never a folder above them; the real environment wins.
    Returns the files read."""
    from dotenv import load_dotenv  # only when a model is about to be loaded: --help stays fast

    read = []
    for path in dict.fromkeys([Path.cwd() / ".env", ENV_BESIDE_AGENT]):
        if path.is_file():
            try:
                load_dotenv(path, override=False)
            except UnicodeDecodeError:
                raise UsageError(f"{path} is not UTF-8 text: save it as UTF-8 (KEY=value lines)") from None
            except ValueError as problem:  # a NUL byte, or a name with "=" in it: no environment variable holds one
                raise UsageError(f"{path} holds a line the environment cannot take ({problem}): each line is "
                                 "KEY=value, with no NUL byte, and no = in the KEY") from None
            except OSError as problem:
                raise UsageError(f"cannot read {path}: {problem.strerror or problem}") from None
            read.append(str(path))
    return read


def model_for_a_run(args) -> Model:
    """The model a question, a chat or a comparison runs (chosen_model's), with .env read first; a UsageError when it
    cannot load, or when the price file TINYREACT_PRICES names cannot be read."""
    load_env_files()
    read_vocabulary_elsewhere()  # the first run's token counter is made ready while the model loads
    try:
        prices()  # a TINYREACT_PRICES file that cannot be read is one line before the run, not a missing cost after it
        return chosen_model(args)
    except (ModelConfigError, ValueError) as problem:
        raise UsageError(str(problem)) from None


def chosen_model(args) -> Model:
    """The model main() was given (`main(argv, model=...)`, see cli/__init__.py), else the one --model names, loaded
    by load_model with its notice on stderr and a spinner there while a local model loads."""
    if args.given_model is not None:
        return args.given_model
    from views.display import spinner  # rich: only when showing a run (see cli/__init__.py)

    with spinner("loading…", start=False, lines=True) as update:
        return load_model(args.model, progress=lambda text: update(text + "…"),
                          notice=lambda text: print(text, file=sys.stderr))


class ModelWhenAsked:
    """The model a spec names, loaded at its first call: a replay whose summaries are all cached loads none. Its name
    is known before (the summaries' cache is keyed by it); a spec that names no model is a UsageError at once."""
    backend = "when asked"

    def __init__(self, spec: str):
        try:
            self.name = resolved_spec(spec)[1]
        except ModelConfigError as problem:
            raise UsageError(f"--summarizer: {problem}") from None
        self.spec, self._model = spec, None

    def generate(self, messages, stop, **options):
        if self._model is None:
            self._model = load_model(self.spec, notice=lambda text: print(text, file=sys.stderr))
        return self._model.generate(messages, stop, **options)


def open_trace(path: str) -> TraceFile:
    """A saved trace, its cut last line (if any) said in one warning; UsageError for a file that is not one."""
    try:
        recorded = load_trace(path)
    except ValueError as problem:
        raise UsageError(str(problem)) from None
    except OSError as problem:
        raise UsageError(f"{problem.strerror}: {problem.filename}") from None
    if recorded.warning:
        print(f"warning: {path}: {recorded.warning}", file=sys.stderr)
    return recorded


@contextlib.contextmanager
def mcp_servers(args, offered: list) -> Iterator[McpServers]:
    """The MCP servers --mcp (else TINYREACT_MCP) names, none or several, started and their tools listed (as
    `.tools`), beside the tools `offered` already; a UsageError in one line when one cannot be used. What was cut or
    left out of a server's tools is said on stderr, a line each, and at the end what a server sent that could not be
    read. A `with` block, which ends their processes."""
    try:
        servers = McpServers(args.mcp or specs_from_environment(),
                             {tool.__name__: f"the built-in tool {tool.__name__}" for tool in offered})
        servers.start()
    except McpError as problem:
        raise UsageError(str(problem)) from None
    for note in servers.notes:
        print(f"warning: {note}", file=sys.stderr)
    try:
        with servers:
            yield servers
    finally:
        if servers.unread:
            print(f"warning: {servers.unread}", file=sys.stderr)
