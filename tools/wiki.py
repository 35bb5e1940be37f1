"""Wikipedia tools, built on the `wikipedia` package.

The package sends its requests without a timeout or a size limit and ignores HTTP errors, so its one request
function is replaced here with one that goes through `tools.web` (a deadline for each request and one for the
whole tool call, a cap on the answer's size), refuses HTTP errors, and reads the endpoint from WIKIPEDIA_API_URL
(a mirror, or a test server). The package's parsing of the MediaWiki answers is kept as it is; before it reads
one, the values the tools relay (an extract, coordinates) are checked, and redirects that go round in a loop,
which the package would follow until Python's recursion limit, are stopped.
"""
import os
import re
import warnings
from html import escape, unescape

from tools import web

WIKIPEDIA_API_URL = "https://en.wikipedia.org/w/api.php"
USER_AGENT = "TinyReAct/0.1 (https://github.com/tinyreact/tinyreact)"
MAX_OPTIONS = 10
# Redirects followed in one tool call. A page is redirected once, to its target (Wikipedia's bots fix double
# redirects), and a summary may look a title up twice (as written, then as search suggests it).
MAX_REDIRECTS = 5
MAX_LISTED = 200  # meanings of a disambiguation page read; a few are shown (MAX_OPTIONS)
LIST_ITEM = re.compile(r"<li\b([^>]*)>", re.I)
LINK = re.compile(r"<a\b[^>]*>(.*?)</a\s*>", re.I | re.S)
TAG = re.compile(r"<[^>]*>")


@web.call_deadline
def search_wikipedia_page(query: str) -> str:
    """Search Wikipedia and return the titles of the best-matching pages, best first (at most 5).

    Use it to find the exact page title to pass to wikipedia_summary or wikipedia_coordinates.
    Example: search_wikipedia_page("Super Bowl LIX") returns "Super Bowl LIX; Super Bowl LVIII; ...".
    """
    wikipedia = _wikipedia()
    try:
        titles = wikipedia.search(query, results=5)
    except Exception as error:  # the package raises many kinds; each becomes a message for the model
        return _failure(error, query)
    return "; ".join(titles) if titles else f"No Wikipedia pages match {query!r}."


@web.call_deadline
def wikipedia_summary(query: str, sentences: int = 10) -> str:
    """Return the first sentences (1 to 10) of the Wikipedia page titled, or best matching, query.

    Example: wikipedia_summary("Caesars Superdome", 2) returns the page's first two sentences.
    An ambiguous title returns the pages it may refer to; pick one and call again.
    """
    wikipedia = _wikipedia()
    sentences = min(max(int(sentences), 1), 10)
    try:
        try:
            return wikipedia.summary(query, sentences=sentences, auto_suggest=False)
        except wikipedia.PageError:
            return wikipedia.summary(query, sentences=sentences, auto_suggest=True)
    except Exception as error:
        return _failure(error, query)


@web.call_deadline
def wikipedia_coordinates(page_title: str) -> str:
    """Return the latitude and longitude of the place a Wikipedia page is about.

    Example: wikipedia_coordinates("Caesars Superdome") returns "latitude 29.9511, longitude -90.0812 (Caesars Superdome)".
    Pages that are not about a place have no coordinates, and say so.
    """  # noqa: E501 (the docstring is the tool's description in the prompt, and recordings hold it as it is)
    wikipedia = _wikipedia()
    try:
        try:
            page = wikipedia.page(page_title, auto_suggest=False)
        except wikipedia.PageError:
            page = wikipedia.page(page_title, auto_suggest=True)
    except Exception as error:
        return _failure(error, page_title)
    try:
        coordinates = page.coordinates
    except KeyError:  # the package raises KeyError when the page exists but has no coordinates
        coordinates = None
    except Exception as error:
        return _failure(error, page_title)
    if coordinates is None:
        return f"Error: the Wikipedia page {page.title!r} has no coordinates."
    latitude, longitude = coordinates
    return f"latitude {float(latitude):.4f}, longitude {float(longitude):.4f} ({page.title})"


def _wikipedia():
    """Import the package on first use (it is slow to import) and route its requests through ours."""
    import wikipedia
    import wikipedia.wikipedia as module
    from bs4 import GuessedAtParserWarning

    warnings.filterwarnings("ignore", category=GuessedAtParserWarning)  # the package's disambiguation parsing
    module._wiki_request = _request
    return wikipedia


class HTTPStatusError(Exception):
    def __init__(self, status: int):
        super().__init__(f"HTTP {status}")
        self.status = status


class BadValue(Exception):
    """The answer holds a value the tools would relay as a fact and that cannot be one; the message says which."""


class RedirectLoop(Exception):
    def __init__(self, titles: list):
        super().__init__(" → ".join(web.cut(str(title)) for title in titles))


def _request(params: dict) -> dict:
    """The package's request function: one MediaWiki query, its answer checked before the package reads it."""
    params = {**params, "format": "json", "action": params.get("action", "query")}
    url = os.environ.get("WIKIPEDIA_API_URL") or WIKIPEDIA_API_URL
    response = web.get(url, params=params, headers={"User-Agent": USER_AGENT})
    if response.status != 200:
        raise HTTPStatusError(response.status)
    answer = response.json()
    query = answer.get("query") if isinstance(answer, dict) else None
    if isinstance(query, dict):  # any other shape is the package's to refuse
        _check_redirects(query.get("redirects"))
        pages = query.get("pages")
        for page in pages.values() if isinstance(pages, dict) else ():
            if isinstance(page, dict):
                _check_page(page)
                _plain_revisions(page)
    return answer


def _plain_revisions(page: dict) -> None:
    """A disambiguation page's HTML (the one answer the package parses as HTML, with BeautifulSoup) replaced by a
    plain list of what it reads from it: the text of the first link of each list item, at most MAX_LISTED. Tags
    left open, nested thousands deep, take html.parser minutes (a 100 KB page, 111 s); a pass of regular
    expressions over the text takes milliseconds, so the tool call keeps its deadline."""
    revisions = page.get("revisions")
    if not (isinstance(revisions, list) and revisions and isinstance(revisions[0], dict)
            and isinstance(revisions[0].get("*"), str)):
        return
    html, items = revisions[0]["*"], []
    starts = [match for match in LIST_ITEM.finditer(html) if "tocsection" not in match.group(1)]
    for match, after in zip(starts, [*starts[1:], None]):
        link = LINK.search(html, match.end(), after.start() if after else len(html))
        if link:
            items.append(escape(unescape(TAG.sub("", link.group(1))).strip()))
        if len(items) == MAX_LISTED:
            break
    revisions[0]["*"] = "<ul>" + "".join(f"<li><a>{item}</a></li>" for item in items) + "</ul>"


def _check_redirects(redirects) -> None:
    """Raise RedirectLoop when this answer's redirect leads to a title the call was already redirected from, or
    past MAX_REDIRECTS in the call: the package follows every redirect by calling itself again."""
    if not isinstance(redirects, list) or not redirects or not isinstance(redirects[0], dict):
        return
    call = web.current_call()
    followed = call.kept.setdefault("redirected from", []) if call else []  # outside a tool call: this answer alone
    source, target = redirects[0].get("from"), redirects[0].get("to")  # the package follows the first
    followed.append(source)
    if target in followed or len(followed) > MAX_REDIRECTS:
        raise RedirectLoop(followed + [target])


def _check_page(page: dict) -> None:
    """Raise BadValue when a page's extract or coordinates, as the package would relay them, cannot be true."""
    if "extract" in page:
        problem = web.text_problem(page["extract"], web.MAX_BYTES)
        if problem:
            raise BadValue(f"an extract that {problem}: {web.shown(page['extract'])}")
    places = page.get("coordinates")
    if isinstance(places, list) and places and isinstance(places[0], dict):  # the package reads the first
        for name, limit in (("lat", 90), ("lon", 180)):
            value = places[0].get(name)
            problem = web.number_problem(value, -limit, limit)
            if problem:
                what = "latitude" if name == "lat" else "longitude"
                raise BadValue(f"a {what} that {problem}: {web.shown(value)}")


def _failure(error: Exception, query: str) -> str:
    import requests
    import wikipedia

    if isinstance(error, wikipedia.DisambiguationError):
        options = "; ".join(error.options[:MAX_OPTIONS])
        return f"Error: {query!r} is ambiguous. It may refer to: {options}."
    if isinstance(error, wikipedia.PageError):
        return f"Error: no Wikipedia page matches {query!r}. Try search_wikipedia_page first."
    if isinstance(error, requests.Timeout):
        return f"Error: Wikipedia did not answer within {web.DEADLINE_SECONDS:g} seconds."
    if isinstance(error, BadValue):
        return f"Error: Wikipedia sent {error}."
    if isinstance(error, RedirectLoop):
        return f"Error: the Wikipedia page {query!r} redirects in a loop ({error}); try another title."
    if isinstance(error, HTTPStatusError):
        return f"Error: Wikipedia answered HTTP {error.status}."
    if isinstance(error, web.TooLarge):
        return f"Error: Wikipedia's {error}."
    if isinstance(error, requests.RequestException):
        return f"Error: could not reach Wikipedia ({type(error).__name__})."
    return f"Error: unexpected answer from Wikipedia ({type(error).__name__}: {error})."
