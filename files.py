"""Files given to read and files written, safely: an input is checked to be a regular file of bounded size before
it is read (a FIFO would block, /dev/zero never end); an output replaces its file in one rename, so a file already
there stays whole until its replacement is complete; a trace file is locked for the one run that writes it.
"""
import contextlib
import errno
import json
import os
import stat
from typing import Iterator

MAX_JSON_BYTES = 50_000_000  # a facts file or a conversation script


def read_input(path: str, limit: int, what: str) -> bytes:
    """The bytes of a file given to read, checked first to be a regular file (a FIFO would block, /dev/zero never
    end) of at most `limit` bytes; ValueError, one line, saying why not. OSError when it cannot be read."""
    status = os.stat(path)  # before opening: opening a FIFO blocks until something writes to it
    if not stat.S_ISREG(status.st_mode):
        raise ValueError(f"{path} is not {what}: it is {kind_of(status.st_mode)}, not a regular file")
    if status.st_size > limit:
        raise ValueError(f"{path} is not {what}: {status.st_size:,} bytes, more than {limit:,}")
    with open(path, "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:  # it grew while read
        raise ValueError(f"{path} is not {what}: more than {limit:,} bytes")
    return data


def kind_of(mode: int) -> str:
    """What a file that is not a regular one is, as an error says it."""
    return ("a folder" if stat.S_ISDIR(mode) else "a pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device")


def read_json(path: str, what: str):
    """The JSON value in a file given to a reader; ValueError, one line, saying that `path` is not `what` and why."""
    data = read_input(path, MAX_JSON_BYTES, what)
    try:
        return json.loads(data.decode("utf-8"))
    except json.JSONDecodeError as problem:
        raise ValueError(f"{path} is not {what}: not JSON ({problem.msg}, line {problem.lineno})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not {what}: not JSON in UTF-8") from None
    except RecursionError:
        raise ValueError(f"{path} is not {what}: its JSON is nested too deeply") from None
    except ValueError:  # Python's limit on the digits of an integer it converts
        raise ValueError(f"{path} is not {what}: it holds a number too long to read") from None


def written_into(path: str) -> bool:
    """Whether `path` is written into rather than replaced: a device, a pipe or one of the process's own open files
    (/dev/stdout, /dev/null, a FIFO): it has nothing to keep, and renaming over it would replace it."""
    if path.startswith(("/dev/", "/proc/")) or os.path.realpath(path).startswith(("/dev/", "/proc/")):
        return True
    return os.path.exists(path) and not os.path.isfile(path)


@contextlib.contextmanager
def replacing(path: str) -> Iterator[str]:
    """A new file beside `path` to write instead; moved onto `path` in one rename when the block ends, and removed if
    it raises: a file already at `path` stays whole until its replacement is complete, whatever stops the writing (an
    error, a full disk, Ctrl-C). A symbolic link at `path` is replaced itself, never what it points to (an output
    named after a link cannot overwrite another file). What `written_into` names is written into directly."""
    if written_into(path):
        yield path
        return
    temporary = f"{path}.{os.getpid()}.part"  # in the same folder, so that os.replace is one rename
    try:
        yield temporary
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError) and error.filename == temporary:
            error.filename = path  # the file the user named, not the one beside it
        raise


def open_for_one_run(path: str):
    """A trace file opened for writing by this run alone: a regular file is locked (flock) before it is emptied,
    so a second run given the same file is refused with OSError (EBUSY) and the first run's trace stays whole; a
    symbolic link is refused (ELOOP), never written through; a device or a pipe is written into."""
    import fcntl

    if written_into(path):
        return open(path, "w", encoding="utf-8", errors="backslashreplace")
    if os.path.islink(path):
        raise OSError(errno.ELOOP, "it is a symbolic link: name the file itself", path)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.ftruncate(descriptor, 0)
    except BlockingIOError:
        os.close(descriptor)
        raise OSError(errno.EBUSY, "another run is writing it", path) from None
    except BaseException:
        os.close(descriptor)
        raise
    return open(descriptor, "w", encoding="utf-8", errors="backslashreplace")


def write_whole(path: str, data: bytes) -> None:
    """`data` into `path`, whole or not at all (see `replacing`)."""
    with replacing(path) as temporary, open(temporary, "wb") as file:
        file.write(data)
