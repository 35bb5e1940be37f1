"""An MCP server's tool listings, sifted before the MCP SDK reads them (tools/mcp.py reads a server through this).

The SDK checks a tools/list answer whole against the protocol's schema and refuses it whole: one tool whose input
schema is not an object of type object, or that lacks a name, and none of the server's tools could be offered. Here
each tool of the answer is checked alone, as the SDK checks the answer, before the SDK sees it: one that does not fit
is taken out and said in a note, and the others are offered.
"""
import contextlib
from typing import Callable

FALLBACK_VERSION = "2025-11-25"  # what the SDK checks an answer against before a version is agreed (session.py)


@contextlib.asynccontextmanager
async def sifted(transport, version: Callable[[], str | None], left_out: Callable[[str, str], None]):
    """`transport` (the SDK's stdio or Streamable HTTP client: a pair of streams), its answers read through Sifted."""
    async with transport as (read, write):
        yield Sifted(read, version, left_out), write


class Sifted:
    """A server's messages as the SDK reads them, each tools/list answer sifted on the way. `version` gives the
    protocol version agreed; `left_out(name, why)` is told of each tool taken out."""

    def __init__(self, stream, version: Callable[[], str | None], left_out: Callable[[str, str], None]):
        self.stream, self.version, self.left_out = stream, version, left_out

    async def __aenter__(self) -> "Sifted":
        await self.stream.__aenter__()
        return self

    async def __aexit__(self, *failure):
        return await self.stream.__aexit__(*failure)

    def __aiter__(self) -> "Sifted":
        return self

    async def __anext__(self):
        item = await self.stream.__anext__()
        answer = getattr(getattr(item, "message", None), "result", None)  # a JSON-RPC answer's result, as sent
        if isinstance(answer, dict) and isinstance(answer.get("tools"), list):  # only tools/list answers hold tools
            answer["tools"] = [tool for tool in answer["tools"] if self._fits(answer, tool)]
        return item

    def __getattr__(self, name: str):
        return getattr(self.stream, name)  # the rest of the stream as it is (stdio's tells its sender's context)

    def _fits(self, answer: dict, tool) -> bool:
        """Whether the SDK would take the answer holding this tool alone; if not, `left_out` is told why."""
        from mcp.types import methods  # the SDK loads only when a server is used
        from pydantic import ValidationError

        try:
            version = self.version() or FALLBACK_VERSION
            methods.validate_server_result("tools/list", version, {**answer, "tools": [tool]})
        except ValidationError as problem:
            error = problem.errors()[0]
            where = ".".join(str(part) for part in error["loc"][2:])  # within the tool, past ("tools", 0)
            self.left_out(tool.get("name") if isinstance(tool, dict) else None,
                          f"{where}: {error['msg']}" if where else error["msg"])
            return False
        return True
