"""What every mode prints and how it ends: the exit codes, a usage error in one line, JSON with no secret in it,
the pages, charts and tables a run writes, and a stdout that a closed pipe silences."""
import json
import os
import sys
from typing import Callable

from redaction import redacted
from files import write_whole
from traces import as_text
from views.terminal import clean

EXIT_ANSWERED, EXIT_NO_ANSWER, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_OUTPUT = 74  # stdout could not be written (sysexits.h's EX_IOERR)


class UsageError(Exception):
    """Bad input found after the arguments were read (a file that is not a trace, say): one line, exit 2."""


def fail(message: str) -> int:
    print(f"error: {readable(clean(message))}", file=sys.stderr)  # they may quote a server, a file or the model
    return EXIT_USAGE


def readable(text: str) -> str:
    """A command-line argument as text: bytes that were not UTF-8 (kept by Python as surrogates) become U+FFFD."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte (a JSON escape like \ud800 makes one)
        return as_text(text)


def print_json(data: dict) -> None:
    """One line of JSON on stdout, with no secret in it (redaction.py)."""
    print(redacted(json.dumps(data, ensure_ascii=False)))


def write_output(path: str, text: Callable[[], str]) -> bool:
    """Write a page, a chart or a table the run made; a failure is one warning line, never the loss of the run's own
    output. The text is made and encoded before the file is opened, so a failure there leaves an old file whole."""
    try:
        data = text().encode("utf-8")
        write_whole(path, data)
    except (OSError, UnicodeError) as problem:
        print(f"warning: cannot write {readable(path)}: {getattr(problem, 'strerror', None) or problem}",
              file=sys.stderr)
        return False
    print(f"wrote {readable(path)} ({len(data):,} bytes)", file=sys.stderr)  # stdout stays the run's, or its JSON
    return True


class OutputFailed(Exception):
    """stdout cannot be written (a full disk, a closed descriptor): the run ends, with one line on stderr."""


class PipeGuard:
    """stdout that a closed pipe (`| head -1`) silences instead of breaking: the run goes on and keeps its trace
    and exit code, as a Unix tool's output would simply stop. Any other failure to write (a full disk, stdout
    closed) ends the run: OutputFailed, which `main` turns into one line and EXIT_OUTPUT; the trace file, written
    as the run goes, is kept."""

    def __init__(self, stream):
        self.stream, self.broken = stream, False

    def write(self, text: str) -> int:
        if self.broken:
            return len(text)
        if self.stream is None:  # started with stdout closed (`>&-`)
            raise OutputFailed("cannot write to stdout: it is closed")
        try:
            return self.stream.write(text)
        except UnicodeEncodeError:  # a file name that was not UTF-8, on a strict terminal: shown with U+FFFD
            encoding = self.stream.encoding or "utf-8"
            return self.write(as_text(text).encode(encoding, "replace").decode(encoding))
        except BrokenPipeError:
            self._silence()
        except (OSError, ValueError) as error:  # ValueError: a stream closed under us
            self._silence()
            raise OutputFailed(f"cannot write to stdout: {getattr(error, 'strerror', None) or error}") from None
        return len(text)

    def isatty(self) -> bool:
        """Closed (`>&-`), stdout is no terminal, and its first write says it is closed."""
        return self.stream is not None and self.stream.isatty()

    def flush(self) -> None:
        if self.broken or self.stream is None:
            return
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._silence()
        except (OSError, ValueError) as error:
            self._silence()
            raise OutputFailed(f"cannot write to stdout: {getattr(error, 'strerror', None) or error}") from None

    def _silence(self) -> None:
        self.broken = True
        if self.stream is None:
            return
        try:  # the interpreter flushes stdout once more at exit: point the descriptor at nothing so that it is quiet
            os.dup2(os.open(os.devnull, os.O_WRONLY), self.stream.fileno())
        except (OSError, ValueError):
            pass

    def __getattr__(self, name):
        return getattr(self.stream, name)
