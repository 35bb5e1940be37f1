"""The pages say what the code does, where a check is cheap: their tables are tables, every policy has its row in
docs/policies.md, every top-level module its row in docs/layout.md, and .env.example lists every variable of
docs/models.md's settings table, as that page says it does."""
import glob
import os
import re

from policies import POLICIES
from test_layers import LAYER

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ["README.md", *sorted(glob.glob("docs/*.md", root_dir=ROOT)), "bench/README.md", "conversations/README.md"]


def read(name: str) -> str:
    with open(os.path.join(ROOT, name), encoding="utf-8") as file:
        return file.read()


def cells(row: str) -> int:
    """The cells of a Markdown table's row, as GitHub splits them: at each | not escaped as \\|."""
    return len(re.split(r"(?<!\\)\|", row.strip().strip("|")))


def tables(text: str):
    """(line number, its rows) of each table: a header row, then a row of --- cells, then rows starting with |."""
    lines, number = text.split("\n"), 0
    while number < len(lines) - 1:
        if lines[number].startswith("|") and re.fullmatch(r"\|( *:?-{3,}:? *\|)+", lines[number + 1].strip()):
            end = number + 2
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            yield number + 1, lines[number:end]
            number = end
        else:
            number += 1


def test_every_table_has_as_many_cells_in_each_row_as_in_its_header():
    wrong = [f"{page}:{start + at}: {cells(row)} cells, the header has {cells(rows[0])}"
             for page in PAGES for start, rows in tables(read(page))
             for at, row in enumerate(rows) if cells(row) != cells(rows[0])]
    assert wrong == []


def test_the_table_check_sees_a_row_pasted_into_the_wrong_table():
    page = "| spec | what runs | configured by |\n| --- | --- | --- |\n| `a` | b | `X` | seconds | default |\n"
    assert [cells(row) for _, rows in tables(page) for row in rows] == [3, 3, 5]


def test_every_policy_has_its_row_in_the_policies_page():
    rows = [line for line in read("docs/policies.md").split("\n") if line.startswith("| `")]
    assert [name for name in POLICIES if not any(row.startswith(f"| `{name}") for row in rows)] == []


def test_every_top_level_module_has_its_row_in_the_layout_page():
    rows = " ".join(line.split("|")[1] for line in read("docs/layout.md").split("\n") if line.startswith("| `"))
    assert [unit for unit in LAYER if f"`{unit}.py`" not in rows and f"`{unit}/`" not in rows] == []


def test_the_example_settings_file_lists_every_variable_of_the_settings_table():
    page = read("docs/models.md")
    table = page[page.index("## Settings: the environment and .env"):]
    rows = next(rows for _, rows in tables(table))
    named = {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row)}
    listed = set(re.findall(r"^(?:# )?([A-Z][A-Z0-9_]+)=", read(".env.example"), re.MULTILINE))  # set, or shown
    assert named and sorted(named - listed) == []
