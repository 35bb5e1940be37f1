"""Gemini's batch mode through google-genai's `client.batches`: a batch's calls sent inline, each the contents and
config a call sends (gemini.py's `batch_body`) with its custom_id as the request's metadata `key`, polled until its
state ends, and its inlined responses read back by that key (https://ai.google.dev/gemini-api/docs/batch-mode).

- `client.batches.create(model=..., src=[InlinedRequest...], config={"display_name": name})`: POST
  models/{model}:batchGenerateContent;
- `client.batches.list(config={"page_size": ...})`: GET batches: a batch a run created but was killed before it
  heard of (or whose answer was lost: batch_jobs.created) is found by its display name, not created again;
- `client.batches.get(name=...)`: GET batches/{id}; its state JOB_STATE_PENDING, JOB_STATE_RUNNING, then
  JOB_STATE_SUCCEEDED, JOB_STATE_FAILED, JOB_STATE_CANCELLED or JOB_STATE_EXPIRED (a batch not done in 48 hours),
  read here as experiments/batch.py's words (batch_jobs.py); its `dest.inlined_responses`, each a response or an
  error, with the metadata it was sent with.
Every request goes through models/services/retry.py, as a call does, its failures explained as a call's are.
"""
import json
from itertools import islice

from models import Message, ModelError, ModelReply, shortened
from models.services import retry
from models.services.batch_jobs import Outcome, Polled, created, once

CONFIG_KEYS = {"thinking": "thinking_config"}  # a refused setting's key in a request's config, where it differs

# Gemini's states in the words the batch reader uses (JobState, https://ai.google.dev/api/batch-mode)
STATES = {"JOB_STATE_PENDING": "pending", "JOB_STATE_QUEUED": "pending", "JOB_STATE_RUNNING": "running",
          "JOB_STATE_SUCCEEDED": "completed", "JOB_STATE_FAILED": "failed", "JOB_STATE_CANCELLED": "cancelled",
          "JOB_STATE_CANCELLING": "running", "JOB_STATE_EXPIRED": "expired"}
LISTED = 1000  # batches looked through for one of a name (100 a page)
# Inline requests suit "smaller batches that keep the total request size under 20MB" (the batch-mode guide); the
# request's own wrapping is kept a megabyte for.
MOST_INLINE_BYTES = 19_000_000


class GeminiBatches:
    """The batch mode of the Gemini API a `gemini:` model calls (GOOGLE_GEMINI_BASE_URL), with its key."""
    most_calls = 1_000_000  # no count is given: the size decides
    most_bytes = MOST_INLINE_BYTES

    def __init__(self, model):
        self.model = model
        self.name = f"{model.backend}:{model.name}"

    def body(self, messages: list[Message], stop: list[str], planned: bool = False) -> dict:
        return self.model.batch_body(messages, stop, planned)

    def without(self, body: dict, setting: str) -> dict:
        """The body with a setting the model refused (temperature, thinking) left out of its config."""
        config = {k: v for k, v in body["config"].items() if k != CONFIG_KEYS.get(setting, setting)}
        return {**body, "config": config}

    def reply(self, answer: dict) -> ModelReply:
        return self.model.reply_of(answer)

    def size(self, id: str, body: dict) -> int:
        """About the bytes of the call's inline request: its body as JSON, its key and their wrapping."""
        return len(json.dumps(body, ensure_ascii=False).encode()) + len(id) + 100

    def submit(self, name: str, calls: list[tuple[str, dict]]) -> tuple[str, dict]:
        """The batch of `calls` ((custom_id, body) pairs) under the display name `name`: its name and no files (its
        requests go inline). A batch of that name already made is not made again."""
        from google.genai import types

        found = self._named(name)
        if found:
            return found, {}
        requests = [types.InlinedRequest(contents=body["contents"], config=body["config"], metadata={"key": id})
                    for id, body in calls]
        return created(lambda: self._sdk(lambda batches: batches.create(
            model=self.model.name, src=requests, config={"display_name": name}), "create", retried=False).name,
            lambda: self._named(name), f"batches create at {self.model.url}"), {}

    def _named(self, name: str) -> str | None:
        """The batch of that display name, if one was made."""
        return self._sdk(lambda batches: next((job.name for job in islice(batches.list(config={"page_size": 100}),
                                                                           LISTED)
                                               if job.display_name == name), None), "list")

    def poll(self, batch_id: str) -> Polled:
        job = self._sdk(lambda batches: batches.get(name=batch_id), "get")
        state = getattr(job.state, "value", job.state)
        if state not in STATES:
            raise ModelError(f"{self._where()} answered a batch in the state {str(state)[:40]!r}, which batch mode "
                             "does not have")
        listed = (job.dest.inlined_responses or []) if job.dest else []
        outcomes = [_outcome(response, self.model.refused_settings) for response in listed]
        problem = shortened(str(job.error.message)) if getattr(job, "error", None) else ""
        return Polled(STATES[state], len(outcomes), 0, {}, problem, outcomes)

    def outcomes(self, polled: Polled) -> list[Outcome]:
        return polled.inline

    def _sdk(self, work, what: str, retried: bool = True):
        """One request of `client.batches`, retried as a call is (retry.py), or, not `retried`, a failure another try
        might fix raised as Lost; its failure explained as a call's."""
        def attempt(channel: retry.Channel):
            try:
                return work(self.model.client().batches)
            except Exception as error:
                raise self.model.explained(error) from None
        return retry.run(attempt if retried else once(attempt), backend=self.model.backend,
                         where=f"batches {what} at {self.model.url}")

    def _where(self) -> str:
        return f"Gemini's batch mode at {self.model.url}"


def _outcome(response, refused_settings) -> Outcome:
    """One inlined response: its GenerateContentResponse as JSON, or its error in words; the call by its key. An
    INVALID_ARGUMENT (google.rpc.Code 3, a call's 400) naming a setting the model does not take says which."""
    key = (response.metadata or {}).get("key", "")
    if response.response is not None and response.error is None:
        return Outcome(key, response.response.model_dump(mode="json", exclude_none=True), None)
    message, code = getattr(response.error, "message", None), getattr(response.error, "code", None)
    refused = refused_settings(str(message or "")) if code == 3 else ()
    return Outcome(key, None, shortened(f"{code or 'error'}: {message or 'no message'}"), refused)
