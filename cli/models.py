"""The modes that look at the models and exit: `--models` (what can run here, and why others cannot),
`--verify-cache` (are the unpacked embedded models whole) and `--show-prompt` (what a model is told)."""
import importlib
import json
import os

from models import BACKENDS, DEFAULT_MODEL, OFFLINE_MODEL, ModelConfigError, resolved_spec
from policies import Policy
from protocols import make_protocol
from tools import DEFAULT_TOOLS
from traces import Trace
from views.terminal import clean
from cli.approval import approval_for
from cli.loading import load_env_files, mcp_servers
from cli.output import EXIT_ANSWERED, EXIT_NO_ANSWER, fail


def show_models(args, policy: Policy, specs: list[str]) -> int:
    """`agent.py --models`: one line a model, and which .env files were read."""
    read = load_env_files()
    print(clean(describe_models(available_models(read))))
    return EXIT_ANSWERED


def available_models(env_files: list[str], probe_seconds: float = 1.0) -> list[dict]:
    """What can run here, for `--models`: the rows of every backend in models.BACKENDS (each module's
    `available`), so a new backend is listed with no change here; the first row's `note` says which model runs
    with no --model and which .env files were read, so the user knows where settings came from."""
    rows = []
    for backend, record in BACKENDS.items():
        rows += importlib.import_module(record.module).available(backend, probe_seconds)
    read = ", ".join(env_files) if env_files else "none"
    rows[0]["note"] = f"{_default_said()}; .env read: {read}"
    return rows


def _default_said() -> str:
    """Which model runs when --model names none, and what set it, as --models says it."""
    for variable in ("TINYREACT_MODEL", "GEMINI_MODEL"):
        if os.environ.get(variable, "").strip():
            return f"with no --model: {os.environ[variable].strip()} (set by {variable})"
    return f"with no --model: gemini:{DEFAULT_MODEL} with a key, else {OFFLINE_MODEL}"


def describe_models(rows: list[dict]) -> str:
    """The `--models` listing as text: one line per row, ready ones marked with ✓."""
    lines = []
    for row in rows:
        mark = "✓" if row["ready"] else "✗"
        where = f"  ({row['url']})" if row.get("url") else ""
        why = f" — {row['why']}" if row["why"] else ""
        lines.append(f"{mark} {row['spec']}{where}{why}")
    notes = [row["note"] for row in rows if row.get("note")]
    return "\n".join(lines + notes)


def verify_cache(args, policy: Policy, specs: list[str]) -> int:
    """`agent.py --verify-cache`: every model folder in the cache read back and checked; exit 1 if one is damaged."""
    from models.embedded.cache import cache_root, verify_caches  # numpy: only for this

    try:
        results, root = verify_caches(), cache_root()
    except ModelConfigError as problem:  # a TINYREACT_CACHE_DIR whose home folder cannot be found
        return fail(str(problem))
    if not results:
        print(f"no unpacked model in {root}")
    for folder, damaged in results.items():
        if damaged:
            print(f"✗ {folder}: damaged: {', '.join(damaged)} — clear it with: rm -rf {folder}")
        else:
            print(f"✓ {folder}")
    return EXIT_NO_ANSWER if any(results.values()) else EXIT_ANSWERED


def show_prompt(args, policy: Policy, specs: list[str]) -> int:
    """`agent.py --show-prompt [--policy NAME] [--model SPEC]`: the instructions the model would be given."""
    load_env_files()
    try:  # the prompt the model of this run would be given: a model may have its own (prompts.PROFILES)
        name = resolved_spec(args.model)[1] if args.given_model is None else args.given_model.name
    except ModelConfigError as problem:
        return fail(str(problem))
    protocol = make_protocol((args.protocol or ["text"])[0])
    with mcp_servers(args, DEFAULT_TOOLS) as servers:
        tools = DEFAULT_TOOLS + servers.tools + policy.tools(Trace())
        offer = protocol.offer(tools, name)
        print(clean(offer.instructions))
    if offer.schemas is not None:  # native: the tools go beside the instructions, as the service's tool schemas
        print(f"\nTools, sent beside the messages as {len(offer.schemas)} tool schemas:\n")
        print(clean(json.dumps(offer.schemas, indent=2, ensure_ascii=False)))
    return EXIT_ANSWERED


# characters of a tool's name --tools shows: the longest a service takes (an MCP tool's name is cut shorter where it
# is made, tools.mcp_functions.MAX_NAME_CHARS); a server's own name of 20,000 characters would pad every row
NAME_COLUMN = 64


def list_tools(args, policy: Policy, specs: list[str]) -> int:
    """`agent.py --tools [--mcp SERVER] [--policy NAME] [--confirm|--yes]`: every tool a run would offer, where it
    comes from, and which would ask for a person's yes before it runs."""
    load_env_files()
    approval = approval_for(args)
    with mcp_servers(args, DEFAULT_TOOLS) as servers:
        rows = [(tool, "built in") for tool in DEFAULT_TOOLS] + [(tool, _served(tool)) for tool in servers.tools]
        rows += [(tool, f"the policy {policy.name}") for tool in policy.tools(Trace())]
    names = [name if len(name) <= NAME_COLUMN else name[:NAME_COLUMN - 1] + "…"
             for name in (tool.__name__ for tool, _ in rows)]
    width = max(map(len, names))
    for name, (tool, source) in zip(names, rows):
        why = approval.why(tool)
        asks = ("" if not why else f"  · runs without asking (--yes): {why}" if approval.yes
                else f"  · asks first: {why}")
        print(clean(f"{name:<{width}}  {source}{asks}"))
    return EXIT_ANSWERED


def _served(tool) -> str:
    """Where an MCP server's tool comes from, as --tools says it: its server, and its own name if it was respelled."""
    name = tool.mcp["name"]
    shown = name if len(name) <= NAME_COLUMN else f"{name[:NAME_COLUMN - 1]}… ({len(name):,} characters)"
    renamed = f" (its name: {clean(shown)})" if name != tool.__name__ else ""
    return f"MCP server {tool.mcp['server']}{renamed}"
