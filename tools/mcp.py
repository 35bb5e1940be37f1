"""Tools from MCP servers: each server's tools become plain functions beside the built-in ones, with a signature and
a docstring made from the tool's input schema, so they render into the text protocol's prompt and (the schema
itself, unchanged) into the native protocol's tool schemas, and calls are bound and checked as any tool's are.

    with McpServers(["python tests/mcp_server.py", "http://127.0.0.1:8000/mcp"]) as servers:
        tools = servers.start()  # every server started and its tools listed, or McpError in one line
        ...                      # TinyReAct(model, tools=DEFAULT_TOOLS + tools)
                                 # the servers' processes end with the block

The client is the official `mcp` SDK (its `Client`, over stdio or Streamable HTTP): no JSON-RPC is written here.
The SDK is asynchronous; the loop is not, so the servers live on one event loop in a thread of their own. A server
is given TINYREACT_MCP_DEADLINE seconds to start, and each call as long. What a server says is bounded: at most
MAX_TOOLS tools from one server, a schema of at most MAX_SCHEMA_CHARS, a result of at most MAX_RESULT_CHARS, a
name and a description cut (tools/mcp_functions.py, which makes each tool a function); control characters are
dropped from all of it; a tool the SDK cannot read is left out alone (tools/mcp_listing.py). A description is shown
indented under its tool, and a result as an Observation's text: whatever they hold is data, never a line of the
protocol.
"""
import asyncio
import base64
import binascii
import concurrent.futures
import json
import logging
import os
import re
import select
import shlex
import threading
from typing import Callable

import settings
from redaction import shown_url
from tools.mcp_functions import DEADLINE_VARIABLE, clean, mcp_tool, python_name
from tools.mcp_listing import sifted

MAX_TOOLS = 128  # of one server: a server that lists more is cut here, in one line
MAX_PAGES = 20  # of tools/list: a server that pages forever is stopped here
MAX_SCHEMA_CHARS = 20_000  # of a tool's input schema as JSON
MAX_RESULT_CHARS = 200_000  # of a result's text, before the loop's own cap on what the model sees
DEFAULT_CALL_SECONDS = 60.0  # for a server to start and list its tools, and for each call
CLOSE_SECONDS = 5.0
TAIL_BYTES = 8192  # of a stdio server's stderr, kept for its last line
SERVERS_VARIABLE = "TINYREACT_MCP"  # several servers separated by ";"
REQUEST_TIMEOUT, CONNECTION_CLOSED = -32001, -32000  # the SDK's error codes (mcp_types/jsonrpc.py)


class McpError(Exception):
    """A server that cannot be used: said in one line, before the run or as a tool's failure."""


def call_seconds() -> float:
    """TINYREACT_MCP_DEADLINE: how long a server is given to start, and a call to be answered (default
    DEFAULT_CALL_SECONDS)."""
    try:
        return float(settings.from_environment(DEADLINE_VARIABLE, DEFAULT_CALL_SECONDS, 0, 3600, above=True,
                                               seconds=True))
    except ValueError as problem:
        raise McpError(str(problem)) from None


def specs_from_environment() -> list[str]:
    """The servers TINYREACT_MCP names, separated by ";"."""
    return [spec.strip() for spec in os.environ.get(SERVERS_VARIABLE, "").split(";") if spec.strip()]


class McpServer:
    """One server: a command run over stdio, or a URL spoken to over Streamable HTTP."""

    def __init__(self, spec: str, deadline: float):
        self.spec, self.deadline = spec.strip(), deadline
        self.url = self.spec if re.match(r"https?://", self.spec) else None
        if self.url is None:
            try:
                self.command = shlex.split(self.spec)
            except ValueError as problem:
                raise McpError(f"--mcp {self.spec!r}: {problem}") from None
            if not self.command:
                raise McpError("--mcp needs a command to run, or an http:// or https:// URL")
        # named without a user and password a URL may hold: the label is in messages, the trace and --tools
        self.label = shown_url(self.url) if self.url else self.command[0].rsplit("/", 1)[-1] + " " + " ".join(
            self.command[1:])
        self.label = clean(self.label.strip(), 80)
        self.client = self.gone = self._closing = self._held = self._loop = self._task = None
        self._finished = threading.Event()  # set when the connection has ended, whatever ended it
        self.notes: list[str] = []  # what was cut or refused of its tools, a line each
        self._stderr = None

    def start(self, loop: asyncio.AbstractEventLoop) -> list:
        """Connect and list the tools, within the deadline: the SDK's Tool objects, or McpError."""
        ready, self._loop = concurrent.futures.Future(), loop
        self._held = asyncio.run_coroutine_threadsafe(self._hold(ready), loop)
        try:
            return ready.result(timeout=self.deadline)
        except concurrent.futures.TimeoutError:
            raise McpError(f"MCP server {self.label} did not start within {self.deadline:g} s ({DEADLINE_VARIABLE})"
                           f"{self._last_words()}") from None

    async def _hold(self, ready: concurrent.futures.Future) -> None:
        """The connection, held open until close(): the SDK's Client is entered and left in this one task."""
        self._closing, self._task = asyncio.Event(), asyncio.current_task()
        try:
            from mcp import Client, StdioServerParameters
            from mcp.client.stdio import stdio_client
            from mcp.client.streamable_http import streamable_http_client

            if self.url is None:
                self._stderr = StderrTail()
                transport = stdio_client(StdioServerParameters(command=self.command[0], args=self.command[1:]),
                                         errlog=self._stderr.file)
            else:
                transport = streamable_http_client(self.url)
            # a tool the SDK cannot read is taken out of the listing, or the SDK would refuse the whole server
            transport = sifted(transport, lambda: self.client and self.client.protocol_version, self._left_out)
            async with Client(transport, read_timeout_seconds=self.deadline) as client:
                self.client = client
                listed = await self._list(client)
                ready.set_result(listed)
                await self._closing.wait()
        except BaseException as failure:  # the SDK raises groups of them, from its task groups
            said = _said(failure)
            if not ready.done():
                ready.set_exception(McpError(f"MCP server {self.label} could not start: {said}{self._last_words()}"))
            else:
                self.gone = said
            if isinstance(failure, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            self._finished.set()

    async def _list(self, client) -> list:
        tools, cursor = [], None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor or len(tools) > MAX_TOOLS:
                break
        if len(tools) > MAX_TOOLS:
            self.notes.append(f"MCP server {self.label} lists {len(tools):,}{'+' if cursor else ''} tools: only the "
                              f"first {MAX_TOOLS} are offered")
        return tools[:MAX_TOOLS]

    def _left_out(self, name, why: str) -> None:
        shown = f"its tool {clean(name, 80)!r}" if isinstance(name, str) else "a tool without a name"
        self.notes.append(f"MCP server {self.label}: {shown} is not offered: its listing does not fit the MCP schema "
                          f"({clean(why, 200)})")

    def call(self, name: str, arguments: dict, seconds: float | None = None) -> str:
        """The tool's result as an Observation's text, within `seconds` (what is left of the call's deadline, by
        default all of it); McpError when the server cannot answer."""
        if self.gone is not None or self.client is None:
            raise McpError(f"MCP server {self.label} is no longer running ({self.gone}){self._last_words()}")
        seconds = self.deadline if seconds is None else max(seconds, 0.001)
        asked = self.client.call_tool(name, arguments, read_timeout_seconds=seconds)
        future = asyncio.run_coroutine_threadsafe(asked, self._loop)
        late = McpError(f"MCP server {self.label} did not answer within {self.deadline:g} s ({DEADLINE_VARIABLE})")
        try:
            result = future.result(timeout=seconds + 1)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise late from None
        except Exception as failure:
            from mcp import MCPError

            code = failure.code if isinstance(failure, MCPError) else None
            if code == REQUEST_TIMEOUT:
                raise late from None
            # a JSON-RPC error is the server's answer; anything else (the connection closed) is news of its end
            raise McpError(f"MCP server {self.label}: {_said(failure)}"
                           f"{self._last_words() if code in (None, CONNECTION_CLOSED) else ''}") from None
        return observation(result)

    def close(self) -> None:
        """The connection closed and the server's process ended: asked to close, and, when it is still starting or
        does not close within CLOSE_SECONDS, cancelled (the SDK then ends the process)."""
        if self._held is not None and not self._finished.is_set():
            if self.client is not None:
                self._loop.call_soon_threadsafe(self._closing.set)
            if (self.client is None or not self._finished.wait(CLOSE_SECONDS)) and self._task is not None:
                self._loop.call_soon_threadsafe(self._task.cancel)
                self._finished.wait(CLOSE_SECONDS)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _last_words(self) -> str:
        """The last line the server wrote to its stderr, if any, as `; its stderr ends: ...`."""
        lines = self._stderr.lines() if self._stderr is not None else []
        return f"; its stderr ends: {clean(lines[-1], 300)}" if lines else ""


class StderrTail:
    """A stdio server's stderr, read from a pipe as it is written and only its last TAIL_BYTES kept: a server that
    writes without end fills neither the disk nor the memory, and never blocks on a full pipe."""

    def __init__(self):
        self._read, write = os.pipe()
        os.set_blocking(self._read, False)
        self.file = os.fdopen(write, "w")  # the server's stderr (the SDK passes it on to the process)
        self._kept, self._lock = b"", threading.Lock()
        self._thread = threading.Thread(target=self._drain, name="mcp server stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        """The thread: takes what is written as it comes, until the server's end of the pipe is closed."""
        try:
            while self._take():
                select.select([self._read], [], [], 1.0)
        except (OSError, ValueError, TypeError):  # the reading end closed under it, at close()
            return

    def _take(self) -> bool:
        """What the pipe holds now, read into the tail (a bounded amount, so that a server writing without pause never
        holds the lock); False once every writer has closed it."""
        with self._lock:
            if self._read is None:
                return False
            for _ in range(64):
                try:
                    chunk = os.read(self._read, 65536)
                except BlockingIOError:
                    return True
                if not chunk:
                    return False
                self._kept = (self._kept + chunk)[-TAIL_BYTES:]
            return True

    def lines(self) -> list[str]:
        """The lines of its tail that are not blank, what is still in the pipe read first."""
        self._take()
        with self._lock:
            return [line.strip() for line in self._kept.decode(errors="replace").splitlines() if line.strip()]

    def close(self) -> None:
        self.file.close()
        self._thread.join(timeout=1)
        with self._lock:
            os.close(self._read)
            self._read = None


def _said(failure: BaseException) -> str:
    """A failure in one line: the first of a group; a JSON-RPC error's code and message, else its type and message."""
    from mcp import MCPError

    while isinstance(failure, BaseExceptionGroup) and failure.exceptions:
        failure = failure.exceptions[0]
    if isinstance(failure, MCPError):
        return clean(" ".join(f"error {failure.code}: {failure.error.message}".split()), 300)
    return clean(f"{type(failure).__name__}: {' '.join(str(failure).split()) or type(failure).__name__}", 300)


def observation(result) -> str:
    """A CallToolResult as text: its text content whole, any other content described by type and size, the
    structured content as JSON when there is no text; an error result said to be one."""
    pieces = []
    for block in result.content:
        kind = getattr(block, "type", "?")
        if kind == "text":
            pieces.append(block.text)
        elif kind in ("image", "audio"):
            pieces.append(f"[{kind} {block.mime_type}, {_decoded_size(block.data):,} bytes: not shown]")
        elif kind == "resource_link":
            pieces.append(f"[a link to the resource {block.uri} ({block.name})]")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            pieces.append(f"[the resource {resource.uri}]\n{text}" if text is not None else
                          f"[the resource {resource.uri}, {resource.mime_type or 'binary'}, "
                          f"{_decoded_size(resource.blob):,} bytes: not shown]")
        else:
            pieces.append(f"[content of type {clean(str(kind), 40)}: not shown]")
    if not pieces and result.structured_content is not None:
        pieces.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = clean("\n".join(pieces), MAX_RESULT_CHARS) or "(the tool returned nothing)"
    return f"Error: the tool reported an error: {text}" if result.is_error else text


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


class SdkLog(logging.Handler):
    """What the MCP SDK logs while the servers run (a message a server sent that it could not read, with a pydantic
    traceback), kept from the terminal: counted, and the first said in the run's own words (McpServers.unread)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count, self.first = 0, None

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if self.first is None:
            problem = record.exc_info[1] if record.exc_info else None
            said = " ".join(str(problem).split()) if problem is not None else record.getMessage()
            self.first = clean(said, 200)


class McpServers:
    """The MCP servers of a run (none, or several): started together, their tools offered beside the built-in ones,
    closed together, as a `with` block ends, Ctrl-C included."""

    def __init__(self, specs: list[str], taken: dict[str, str] | None = None):
        """`taken`: the names already offered, each with where it comes from (a built-in tool)."""
        deadline = call_seconds()
        self.servers = [McpServer(spec, deadline) for spec in specs]
        self.taken = dict(taken or {})
        self.tools: list[Callable] = []
        self._loop = self._thread = None
        self._log, self._logger = SdkLog(), logging.getLogger("mcp")
        self._propagated = self._logger.propagate

    @property
    def unread(self) -> str | None:
        """What the servers sent that the SDK could not read and skipped, in one line; None for nothing."""
        if not self._log.count:
            return None
        count = f"{self._log.count:,} message{'s' * (self._log.count != 1)}"
        return f"an MCP server sent {count} the MCP SDK could not read, skipped: {self._log.first}"

    @property
    def notes(self) -> list[str]:
        """What was cut or left out of the servers' tools, a line each."""
        return [note for server in self.servers for note in server.notes]

    def start(self) -> list[Callable]:
        """Every server's tools, as functions (kept as `.tools`); McpError, with every server closed, when one cannot
        be used."""
        if not self.servers:
            return self.tools
        try:
            import jsonschema  # noqa: F401
            import mcp  # noqa: F401
        except ImportError as missing:  # an environment made before requirements.txt named them
            raise McpError(f"--mcp needs the package {missing.name}, which is not installed here: "
                           "pip install -r requirements.txt") from None
        self._logger.addHandler(self._log)  # the SDK's log, with its tracebacks, kept from the terminal
        self._logger.propagate = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp servers", daemon=True)
        self._thread.start()
        try:
            for server in self.servers:
                made = [self._tool(server, tool) for tool in server.start(self._loop)]
                self.tools += [tool for tool in made if tool is not None]
        except BaseException:
            self.close()
            raise
        return self.tools

    def _tool(self, server: McpServer, tool) -> Callable | None:
        """The tool as a function, None (and a note) for one whose schema cannot be used; McpError for a name taken."""
        shown = clean(str(tool.name), 80)
        size = len(json.dumps(tool.input_schema, default=str))
        if size > MAX_SCHEMA_CHARS or tool.input_schema.get("type") != "object":
            server.notes.append(f"MCP server {server.label}: its tool {shown!r} is not offered: its input schema is "
                              + (f"{size:,} characters long" if size > MAX_SCHEMA_CHARS else "not of type object"))
            return None
        name = python_name(tool.name)
        if name in self.taken:
            spelled = "" if name == tool.name else f" (written {name})"
            raise McpError(f"MCP server {server.label} offers a tool {shown!r}{spelled}, but {self.taken[name]} has "
                           "that name: the tools of a run need names of their own")
        try:
            made = mcp_tool(server, tool, name)
        except Exception as problem:  # a schema jsonschema cannot read
            server.notes.append(f"MCP server {server.label}: its tool {shown!r} is not offered: {_said(problem)}")
            return None
        self.taken[name] = f"MCP server {server.label}"
        return made

    def close(self) -> None:
        """Every server closed (its process ended), then the loop stopped; safe to call more than once."""
        for server in self.servers:
            server.close()
        if self._loop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=CLOSE_SECONDS)
        self._loop = None
        self._logger.removeHandler(self._log)
        self._logger.propagate = self._propagated

    def __enter__(self) -> "McpServers":
        return self

    def __exit__(self, *failure) -> None:
        self.close()
