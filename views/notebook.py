"""Runs shown as their pages in Jupyter: a `Result` (one question), an agent (its whole session) and a replay each
show as the page `--html` writes, inline.

The display is registered from this side, as an IPython extension, so the loop and the experiments know nothing
of pages: in a notebook, `%load_ext views.notebook` (docs/teaching.ipynb does). The formatters are registered by
the classes' module and name, so registering imports none of them.
"""
from views.pages import inline, replay_page, run_page


def result_page(result) -> str:
    """A `results.Result`: the run's page, inline."""
    return inline(run_page({"model": result.model, "backend": result.backend}, result.trace))


def session_page(agent) -> str:
    """An `agent.TinyReAct`: the session so far, every question, every call, what the model was shown."""
    model = agent.model
    header = {"model": model.name, "backend": model.backend, "temperature": model.temperature}
    return inline(run_page(header, agent.trace.events, agent.counter, sent=agent.trace.sent))


def replay_page_of(replayed) -> str:
    """An `experiments.replay.Replayed`: its page, every policy side by side."""
    return inline(replay_page(replayed.header, replayed.events, replayed.reports, replayed.counter))


PAGES = {("results", "Result"): result_page, ("agent", "TinyReAct"): session_page,
         ("experiments.replay", "Replayed"): replay_page_of}


def load_ipython_extension(ipython) -> None:
    """Called by `%load_ext views.notebook`: each object above shows as its page from then on."""
    html = ipython.display_formatter.formatters["text/html"]
    for (module, name), page in PAGES.items():
        html.for_type_by_name(module, name, page)
