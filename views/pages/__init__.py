"""See inside: one self-contained HTML page of a run or a chat, a comparison of policies, or a replay.

Three pure functions turn data into one HTML string that needs no network and no framework, opens from
`file://` and prints:

    run_page(header, events, counter)              a trace: what the model was shown at every call, and why
    compare_page(traces, counter, expect)          one trace per policy, side by side, call by call
    replay_page(header, events, reports, counter)  a replay: context sizes, fact states, probe answers

Each call shows what the model was shown as a bar stacked by bucket (the counts are the trace's own `context`
events), the full context folded, and what changed since the call before. The context is rebuilt with the
policy the trace names, from the events before that call's `context` event: the very call that made it.

Where each lives: one module a page (`run.py`, `compare.py`, `replay.py`); `calls.py` reads a trace into the
calls and changes the pages show; `parts.py` holds what every page is built from (the store of texts, escaping,
folds, bars, tables, the document, `inline` for a notebook), and inlines `style.css` and `script.js` into each.
Pages import the shared modules, never each other.
"""
from views.pages.compare import compare_page
from views.pages.parts import inert_json, inline
from views.pages.replay import replay_page
from views.pages.run import run_page

__all__ = ["compare_page", "inert_json", "inline", "replay_page", "run_page"]
