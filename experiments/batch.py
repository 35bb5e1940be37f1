"""Many one-call questions sent through a provider's own engine (`--via batch`): written as one batch, sent, polled
until it ends, and each reply put back in the place of its question, as if asked one at a time.

A service (models/services/openai_batch.py, gemini_batch.py) builds each call's body, submits a batch under a
name, polls it and reads its outcomes; this module keeps the run's ledger (experiments/ledger.py) and decides what
to send:
- every call is written to the ledger before it is sent, and each batch before it is submitted, so that a run
  killed at any moment and started again finds its batches (by their name, at the service) and sends no call twice;
- a call the batch answered with an error, or with a body that is no reply, is sent once more, in a new batch,
  and the run says so; one that fails again is an error of one line, and the replies that came are kept;
- a batch that fails or expires, and an outcome for a call that is not the run's, are errors of one line;
- calls more or larger than one batch takes (the service's most_calls and most_bytes) go in several, sent together.
The poll interval is DEFAULT_POLL seconds, or TINYREACT_BATCH_POLL's. FirstCall and Prefetched send a loop's
first calls in a batch and let each run go on from there (bench/evaluate.py --via batch). FlexRun asks the calls one
at a time (`--via flex`), as a model does, and keeps each reply in the same kind of ledger as it comes.
"""
import threading
import time
from typing import Callable, Protocol

import settings
from experiments.ledger import Ledger, LedgerError, canonical, kept_reply, run_digest
from models import Message, ModelError, ModelReply, shortened

POLL_VARIABLE = "TINYREACT_BATCH_POLL"
DEFAULT_POLL = 30.0  # seconds; neither OpenAI's nor Gemini's batch guide advises one, and Gemini's example polls
# every 30 s (https://ai.google.dev/gemini-api/docs/batch-mode)
TRIES = 2  # a call that fails inside a batch is sent once more


class BatchService(Protocol):
    """A provider's batch engine, as this module uses it."""
    name: str  # the backend and model, as the ledger names the service
    most_calls: int  # the calls one batch may carry
    most_bytes: int  # and their size at most, each as `size` measures it

    def size(self, id: str, body: dict) -> int: ...  # the bytes a call takes in its batch

    # what one call sends; `planned`: before any setting the server refused was left out, what names the call
    def body(self, messages: list[Message], stop: list[str], planned: bool = False) -> dict: ...

    def submit(self, name: str, calls: list[tuple[str, dict]]) -> tuple[str, dict]: ...  # (batch id, its files)

    def poll(self, batch_id: str): ...  # a Polled: status, ended, done, total, files, problem

    def outcomes(self, polled) -> list: ...  # the Outcomes (id, answer, error, refused) of an ended batch

    def without(self, body: dict, setting: str) -> dict: ...  # the body less a setting the model refused

    def reply(self, answer: dict) -> ModelReply: ...  # a response body read as a call's reply


class BatchFailed(ModelError):
    """A batch failed or expired, a call failed twice, or an outcome named a call that is not the run's. `replies`:
    every call's reply that came, in the order of the calls, None for one that did not."""
    replies: list = []


def call_ids(bodies: list[dict]) -> list[str]:
    """Each call's custom_id: the SHA-256 of its body (experiments.ledger.custom_id); the n-th call of a body already
    asked (a repeat, two policies that show the same context) is the SHA-256 of the body and n, so that each is
    its own call, as when asked one at a time."""
    import hashlib

    seen: dict[str, int] = {}
    ids = []
    for body in bodies:
        data = canonical(body)
        seen[data] = seen.get(data, 0) + 1
        suffix = b"" if seen[data] == 1 else b"\n" + str(seen[data]).encode()
        ids.append(hashlib.sha256(data + suffix).hexdigest())
    return ids


def poll_seconds() -> float:
    """TINYREACT_BATCH_POLL (seconds, 0 or more) or DEFAULT_POLL; ValueError in one line for anything else."""
    return float(settings.from_environment(POLL_VARIABLE, DEFAULT_POLL, 0, 86_400, seconds=True))


class BatchRun:
    """The calls of one run through a batch engine: their bodies and ids, and its ledger, opened (or read back) at
    `ledger_path(digest)`, the digest naming the run."""

    def __init__(self, service: BatchService, requests: list[tuple[list[Message], list[str]]],
                 ledger_path: Callable[[str], str]):
        self.service, self.wait = service, poll_seconds()
        self.bodies = [service.body(messages, stop) for messages, stop in requests]
        # named as planned: a setting the server refused earlier in this process (compact's summaries) changes the
        # body sent, not the call, which a run started again (that has not met the refusal) must find by its name
        self.ids = call_ids([service.body(messages, stop, planned=True) for messages, stop in requests])
        self.digest = run_digest(self.ids)
        self.ledger = Ledger(ledger_path(self.digest), self.digest, service.name)

    def unsent(self) -> list[int]:
        """The places of the calls sending would pay for: unanswered, in no batch still running, and sent fewer than
        TRIES times (one that failed in its batch is sent once more)."""
        running = {id for batch in self.ledger.open_batches() for id in batch.ids}
        return [n for n, id in enumerate(self.ids)
                if id not in self.ledger.answers and id not in running and self.ledger.tries(id) < TRIES]

    def replies(self, progress: Callable[[str], None], say: Callable[[str], None]) -> list[ModelReply]:
        """Every call's reply, in the order of the calls: sent in batches, waited for, read back. Raises BatchFailed
        when a batch fails or expires, or a call fails twice; the replies that came are in the ledger, and a run
        started again reads them from there."""
        started = time.monotonic()
        try:
            for id, body in zip(self.ids, self.bodies):
                if id not in self.ledger.calls:
                    self.ledger.record("call", id=id, body=body)
            while True:
                opened = self.ledger.open_batches()
                for batch in opened:  # all sent before any is waited for: they run side by side
                    self._submit(batch)
                for batch in opened:
                    self._finish(batch, started, progress)
                todo = self._to_send(say)
                if not todo:
                    break
                for part in self._parts(todo):
                    name = f"tinyreact-{self.digest[:16]}-{len(self.ledger.batches) + 1}.jsonl"
                    self.ledger.record("submitting", name=name, ids=part)
        except LedgerError as problem:  # what was sent runs on at the service, and is found again from the ledger
            raise self._with_replies(BatchFailed(f"{problem}; run the same command again once it can be written")) \
                from None
        except BatchFailed as failed:
            raise self._with_replies(failed)
        finally:
            self.ledger.close()  # its lock let go: the run has done with it
        return [self.service.reply(self.ledger.answers[id]) for id in self.ids]

    def close(self) -> None:
        """Let go of the ledger (and of its lock); `replies` lets go of it when it ends."""
        self.ledger.close()

    def _with_replies(self, failed: BatchFailed) -> BatchFailed:
        """`failed`, with every call's reply that came (None for one that did not)."""
        failed.replies = [self.service.reply(self.ledger.answers[id]) if id in self.ledger.answers else None
                          for id in self.ids]
        return failed

    def _to_send(self, say: Callable[[str], None]) -> list[str]:
        """The calls still to send: never sent, or failed once (said once); BatchFailed for one failed twice."""
        unanswered = list(dict.fromkeys(id for id in self.ids if id not in self.ledger.answers))
        failed_twice = [id for id in unanswered if self.ledger.tries(id) >= TRIES]
        if failed_twice:
            raise BatchFailed(f"{len(failed_twice)} call(s) failed in two batches, the last time: "
                              f"{self.ledger.failures[failed_twice[0]][-1]}; the answers that came are kept")
        again = [id for id in unanswered if id in self.ledger.failures]
        if again:
            say(f"{len(again)} call(s) failed in their batch ({self.ledger.failures[again[0]][-1]}): sending them "
                "once more, in a new batch")
        return unanswered

    def _parts(self, todo: list[str]) -> list[list[str]]:
        """The calls to send cut into batches the service takes: at most `most_calls` calls and `most_bytes` bytes
        each (OpenAI's input file, Gemini's inline requests)."""
        parts, size = [[]], 0
        for id in todo:
            weight = self.service.size(id, self.ledger.calls[id])
            if parts[-1] and (len(parts[-1]) >= self.service.most_calls or size + weight > self.service.most_bytes):
                parts, size = [*parts, []], 0
            parts[-1].append(id)
            size += weight
        return parts

    def _submit(self, batch) -> None:
        """Submit a batch the ledger began (the service finds it by name if it took it already)."""
        if batch.id is None:
            batch.id, files = self.service.submit(batch.name, [(id, self.ledger.calls[id]) for id in batch.ids])
            self.ledger.record("submitted", name=batch.name, batch=batch.id, files=files)

    def _finish(self, batch, started: float, progress: Callable[[str], None]) -> None:
        """Wait for a submitted batch's end, and record its outcomes."""
        while True:
            polled = self.service.poll(batch.id)
            waited = time.monotonic() - started
            progress(f"batch {batch.id}: {polled.status}, {polled.done} of {polled.total or len(batch.ids)} calls, "
                     f"waited {int(waited // 60)}:{int(waited % 60):02d}")
            if polled.ended:
                break
            time.sleep(self.wait)
        self._record(batch, polled)

    def _record(self, batch, polled) -> None:
        """An ended batch's outcomes into the ledger, and its end; then BatchFailed for a batch that failed, or
        expired, or answered for a call it was not sent (that line not read, the batch's own lines kept, so that the
        run started again goes on from them)."""
        if polled.status == "failed":
            for id in batch.ids:
                self.ledger.record("failed", id=id, batch=batch.id, error=f"the batch failed: {polled.problem}")
            self.ledger.record("ended", batch=batch.id, status=polled.status, files=polled.files)
            raise BatchFailed(f"batch {batch.id} failed: {polled.problem or 'the service gave no reason'}")
        outcomes = self.service.outcomes(polled)
        stranger = next((outcome for outcome in outcomes if outcome.id not in batch.ids), None)
        for outcome in (outcome for outcome in outcomes if outcome.id in batch.ids):
            problem = outcome.error if outcome.answer is None else self._unreadable(outcome.answer)
            if problem is None:
                self.ledger.record("answer", id=outcome.id, batch=batch.id, response=outcome.answer)
                continue
            self.ledger.record("failed", id=outcome.id, batch=batch.id, error=problem)
            body = self.ledger.calls[outcome.id]  # a setting the model does not take, the first the error names
            # that the body still holds: sent again without it, as a call is
            rewritten = next((less for less in (self.service.without(body, setting) for setting in outcome.refused)
                              if less != body), body)
            if rewritten != body:
                self.ledger.record("call", id=outcome.id, body=rewritten)
        unanswered = [id for id in batch.ids if id not in {outcome.id for outcome in outcomes}]
        for id in unanswered:  # a cancelled batch, or one that lists fewer lines than it was sent
            self.ledger.record("failed", id=id, batch=batch.id, error=f"no outcome ({polled.status})")
        self.ledger.record("ended", batch=batch.id, status=polled.status, files=polled.files)
        if stranger is not None:
            raise BatchFailed(f"batch {batch.id} answered for a call it was not sent (custom_id "
                              f"{stranger.id[:40]!r}{': ' + stranger.error if stranger.error else ''}): not read")
        if polled.status in ("expired", "cancelled"):
            answered = sum(id in self.ledger.answers for id in batch.ids)
            raise BatchFailed(f"batch {batch.id} {polled.status} with {answered} of {len(batch.ids)} calls answered "
                              "(kept in the ledger): run the same command again to send the rest")

    def _unreadable(self, answer: dict) -> str | None:
        """Why a response body is no reply (a 200 that carries an error, a body that is no completion), as the call's
        reader says it: such a call failed, and is sent once more; None for a reply."""
        try:
            self.service.reply(answer)
        except ModelError as problem:
            return shortened(str(problem))
        return None


class FlexRun:
    """The calls of one run asked one at a time through a model (OpenAI's flex tier, `--via flex`), as a model itself:
    each reply is written to the run's ledger as it comes, and a call the ledger answered already is answered from
    there, not asked (and paid for) again. A call is named as a batch names it, by its body as planned: a setting the
    server refuses during a run (`stop` or `temperature`, for a reasoning model) changes the body sent, and a run
    started again, which has not met the refusal yet, must still find the call. A request asked twice (`--repeat`)
    takes its ids in the order asked."""

    def __init__(self, model, requests: list[tuple[list[Message], list[str]]], ledger_path: Callable[[str], str]):
        self.model = model
        asked = [model.batch_body(messages, stop, planned=True) for messages, stop in requests]
        self.ids = call_ids(asked)
        self.digest = run_digest(self.ids)
        self.ledger = Ledger(ledger_path(self.digest), self.digest, f"{model.backend}:{model.name} flex")
        self.planned: dict[bytes, list[str]] = {}  # what is asked -> the ids of its calls not asked yet, in order
        for call, id in zip(asked, self.ids):
            self.planned.setdefault(canonical(call), []).append(id)
        self.lock = threading.Lock()  # calls may be asked from several threads (--jobs)
        self.running, self.closing = 0, False

    def unsent(self) -> list[int]:
        """The places of the calls asking would pay for: those the ledger holds no reply for."""
        return [n for n, id in enumerate(self.ids) if id not in self.ledger.replies]

    def generate(self, messages: list[Message], stop: list[str], **options) -> ModelReply:
        with self.lock:
            waiting = self.planned.get(canonical(self.model.batch_body(messages, stop, planned=True)))
            id = waiting.pop(0) if waiting else None  # None: a call the run did not plan, asked and not kept
            if id in self.ledger.replies:
                return self.ledger.replies[id]
            if self.closing:
                raise ModelError("the run has stopped: no more calls are asked")
            self.running += 1
        try:
            reply = self.model.generate(messages, stop, **options)
            with self.lock:
                if id is not None:
                    self.ledger.record("reply", id=id, reply=kept_reply(reply))
        except LedgerError as problem:  # the reply came, but a run started again would ask it again: stop here
            raise ModelError(f"{problem}; the replies before it are kept in the ledger") from None
        finally:
            with self.lock:
                self.running -= 1
                if self.closing and not self.running:
                    self.ledger.close()
        return reply

    def close(self) -> None:
        """Let go of the ledger (and of its lock) once no call is being asked: a call still running when the run
        stopped (Ctrl-C twice while --jobs calls end) is paid for, so its reply is written first."""
        with self.lock:
            self.closing = True
            if not self.running:
                self.ledger.close()

    def __getattr__(self, name: str):
        return getattr(self.model, name)


def service_for(model) -> BatchService:
    """The batch engine of the service `model` calls: OpenAI's Batch API for `openai:`, Gemini's batch mode for
    `gemini:`."""
    if model.backend == "openai":
        from models.services.openai_batch import OpenAIBatches
        return OpenAIBatches(model)
    if model.backend == "gemini":
        from models.services.gemini_batch import GeminiBatches
        return GeminiBatches(model)
    raise ValueError(f"{model.backend}:{model.name} has no batch engine here")


class FirstCall:
    """A model that records the messages of the first call a run makes, then stops the run there (a ModelError, as
    a failing model stops it): what a loop's first call would send, learned by running the loop itself."""

    def __init__(self, model):
        self.model, self.asked = model, []

    def generate(self, messages: list[Message], stop: list[str], **options) -> ModelReply:
        self.asked.append((messages, stop))
        raise ModelError("the first call is recorded, not made")

    def __getattr__(self, name: str):
        return getattr(self.model, name)


class Prefetched:
    """A model whose calls already answered in a batch are answered from it, each reply once, and any other call
    asked of the model itself: a loop whose first calls went in a batch goes on, call by call, from there."""

    def __init__(self, model, service: BatchService, requests: list[tuple[list[Message], list[str]]],
                 replies: list[ModelReply]):
        self.model, self.service = model, service
        self.waiting: dict[bytes, list[ModelReply]] = {}
        for (messages, stop), reply in zip(requests, replies):  # by the body as planned: a later call may have
            # learned to leave out a setting the model refuses (stop), which changes the body but not the call
            self.waiting.setdefault(canonical(service.body(messages, stop, planned=True)), []).append(reply)

    def generate(self, messages: list[Message], stop: list[str], **options) -> ModelReply:
        if not options.get("tools"):
            waiting = self.waiting.get(canonical(self.service.body(messages, stop, planned=True)))
            if waiting:
                return waiting.pop(0)
        return self.model.generate(messages, stop, **options)

    def __getattr__(self, name: str):
        return getattr(self.model, name)
