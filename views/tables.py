"""The terminal's tables, fitted to the width they are printed at: a terminal's, or 80 columns in a pipe.

Every table the terminal view prints (display.py: the comparison, the replay, the probes) is a `Fitted`: its
columns, its rows of text, and the columns it can do without, least needed first. Where it fits whole, it is printed
as it is. Narrower, it makes room in this order, and no word of a cell is ever cut, so neither is a policy's name
or a number:
1. the columns empty in every row go (they say nothing);
2. headers wrap between words, and so do cells but names and marks (a Column's `wrap`); free text (an answer, a
   fact) folds down to TEXT_FLOOR;
3. the cells lose their padding;
4. the columns the table can do without go, least needed first, named in a line under the table;
5. still too wide, the table is printed in parts, each starting with its first column (the names) again.
--json, and the replay's --csv, keep every column whatever the width.
"""
from dataclasses import dataclass
from typing import Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from views.terminal import clean

TEXT_FLOOR = 12  # a free-text column folds no narrower than this (or its header's longest word)


@dataclass(frozen=True)
class Column:
    header: str
    justify: str = "right"
    # How its cells may wrap: "words", between words (a number and its range); "never", a name or a row of marks,
    # whose parts mean something side by side; "text", free text, between words and inside one longer than the room.
    wrap: str = "words"


class Fitted:
    """A table laid out for the width it is printed at (rich asks for it with that width)."""

    def __init__(self, title: str, columns: Sequence[Column], rows: Sequence[Sequence[object]],
                 least_needed: Sequence[str] = ()):
        self.title, self.columns, self.least_needed = clean(title), list(columns), list(least_needed)
        self.rows = [[clean(cell) for cell in row] for row in rows]
        self.natural, self.least = zip(*(_sizes(column, [row[index] for row in self.rows])
                                         for index, column in enumerate(self.columns)))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        shown = list(range(len(self.columns)))
        if self._span(shown, self.natural, 1) <= width:
            yield self._table(shown, 1, None, self.title)  # whole, as rich lays it out
            return
        shown, dropped = self._fewest_dropped(width)
        parts = [shown] if self._span(shown, self.least, 0) <= width else self._parts(shown, width)
        for number, part in enumerate(parts):
            padding = 1 if self._span(part, self.least, 1) <= width else 0
            yield self._table(part, padding, self._widths(part, padding, width),
                              self.title if number == 0 else "(continued)")
        if dropped:
            names = ", ".join(self.columns[index].header for index in dropped)
            yield Text(f"not shown at {width} columns: {names} (a wider terminal shows them, --json holds them)",
                       style="dim")

    def _fewest_dropped(self, width: int) -> tuple[list[int], list[int]]:
        """The columns shown and those dropped: the empty ones, then as few of the least needed as make it fit."""
        shown = [index for index in range(len(self.columns))
                 if index == 0 or not self.rows or any(row[index].strip() for row in self.rows)]
        droppable = [index for name in self.least_needed for index in shown if self.columns[index].header == name]
        dropped = []
        while self._span(shown, self.least, 0) > width and droppable:
            dropped.append(droppable.pop(0))
            shown.remove(dropped[-1])
        return shown, dropped

    def _parts(self, shown: list[int], width: int) -> list[list[int]]:
        """The columns in parts that fit side by side with the first column, each part with it again."""
        parts = [[shown[0]]]
        for index in shown[1:]:
            if len(parts[-1]) > 1 and self._span([*parts[-1], index], self.least, 1) > width:
                parts.append([shown[0]])
            parts[-1].append(index)
        return parts

    def _widths(self, part: list[int], padding: int, width: int) -> dict[int, int]:
        """Each column's width: the widest narrowed first, a step at a time, down to its least, until it fits."""
        widths = {index: self.natural[index] for index in part}
        for _ in range(self._span(part, widths, padding) - width):
            narrower = [index for index in part if widths[index] > self.least[index]]
            if not narrower:
                break  # the names alone are wider than the width: printed whole, wider than asked
            widths[max(narrower, key=widths.get)] -= 1
        return widths

    @staticmethod
    def _span(part: list[int], widths, padding: int) -> int:
        """The width of a table of these columns: theirs, their padding, a border between each and at each edge."""
        return sum(widths[index] for index in part) + (2 * padding + 1) * len(part) + 1

    def _table(self, part: list[int], padding: int, widths: dict[int, int] | None, title: str) -> Table:
        table = Table(title=Text(title), title_justify="left", padding=(0, padding))
        for index in part:
            column = self.columns[index]
            table.add_column(Text(column.header), justify=column.justify, overflow="fold",
                             width=widths[index] if widths else None)
        for row in self.rows:
            table.add_row(*(Text(row[index]) for index in part))
        return table


def _sizes(column: Column, cells: list[str]) -> tuple[int, int]:
    """A column's width unwrapped, and the narrowest it can be with no word cut: its header's longest word, and
    its cells' (a name or a row of marks whole, free text down to TEXT_FLOOR)."""
    natural = max(cell_len(line) for cell in [column.header, *cells] for line in cell.splitlines() or [""])
    header = max((cell_len(word) for word in column.header.split()), default=0)
    if column.wrap == "never":
        return natural, max([header, *(cell_len(line) for cell in cells for line in cell.splitlines())])
    if column.wrap == "text":
        return natural, max(header, min(natural, TEXT_FLOOR))
    return natural, max([header, *(cell_len(word) for cell in cells for word in cell.split())])
