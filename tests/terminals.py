"""agent.py on a pseudo-terminal, as a person runs it: what it shows, read until a marker, keys typed, Ctrl-C
delivered by the terminal itself."""
import os
import select
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AGENT = os.path.join(ROOT, "agent.py")


def controlled_by_stdin() -> None:
    """In the child, after it starts a session of its own: its stdin (the pseudo-terminal) becomes its controlling
    terminal, so that Ctrl-C typed there is SIGINT to its foreground processes, the agent and the servers it starts;
    SIGINT is as a shell leaves it (not ignored, not blocked), whatever the test process did with it."""
    import fcntl
    import signal
    import termios
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Terminal:
    """agent.py on a pseudo-terminal: what it shows, read until a marker, and keys typed."""

    def __init__(self, argv: list[str], env: dict):
        import pty
        self.leader, follower = pty.openpty()
        self.process = subprocess.Popen([sys.executable, AGENT, *argv], stdin=follower, stdout=follower,
                                        stderr=follower, env={**os.environ, **env, "TERM": "dumb",
                                                              "PYTHONFAULTHANDLER": "1"},
                                        start_new_session=True, preexec_fn=controlled_by_stdin)
        os.close(follower)
        self.shown = b""

    def wait_for(self, marker: str) -> str:
        """What was shown up to and including `marker`, which is then read past."""
        while marker.encode() not in self.shown:
            assert select.select([self.leader], [], [], 30)[0], f"no {marker!r} on the terminal: {self.shown[-600:]!r}"
            try:
                self.shown += os.read(self.leader, 65536)
            except OSError:  # the process ended and closed the terminal
                raise AssertionError(f"no {marker!r}; the terminal closed after {self.shown[-600:]!r}") from None
        before, _, self.shown = self.shown.partition(marker.encode())
        return before.decode(errors="replace") + marker

    def type(self, keys: str) -> None:
        os.write(self.leader, keys.encode())

    def interrupt(self, then: str | None = None) -> None:
        """Ctrl-C, then wait for `then` (None: for the agent to exit). CPython's readline checks for a signal only when
        its select() is interrupted: a Ctrl-C that lands between the prompt being drawn and that select() (a loaded
        machine can pause the agent there) is seen only at the next key. So if nothing happens within 3 s, Enter is
        that key; a person never types fast enough to meet the race."""
        self.type("\x03")
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            if then is None and self.process.poll() is not None:
                return
            if then is not None and then.encode() in self.shown:
                break
            if select.select([self.leader], [], [], 0.1)[0]:
                try:
                    self.shown += os.read(self.leader, 65536)
                except OSError:
                    pass
        else:
            self.type("\r")
        if then is not None:
            self.wait_for(then)

    def exit_code(self) -> int:
        """How the agent exited; if it has not within 30 s, every thread's stack (faulthandler, on SIGABRT) in the
        failure, to show where it waits."""
        import signal
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGABRT)
            self.process.wait(timeout=10)
            while select.select([self.leader], [], [], 1)[0]:
                try:
                    self.shown += os.read(self.leader, 65536)
                except OSError:
                    break
            raise AssertionError("the agent did not exit: " + self.shown.decode(errors="replace")[-6000:]) from None

    def close(self) -> None:
        self.process.kill()
        os.close(self.leader)
