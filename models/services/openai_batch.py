"""OpenAI's Batch API: a batch's calls written as one JSON Lines file, uploaded through the Files API, a batch made
of it, polled, and its output and error files read. Each line of the input is
`{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`, the body the very one a call sends
(openai_request.py); each line of the output or error file is `{"id", "custom_id", "response": {"status_code",
"request_id", "body"}, "error"}`, in any order (https://platform.openai.com/docs/guides/batch).

- POST {base}/files, multipart, purpose "batch" (https://platform.openai.com/docs/api-reference/files/create);
- GET {base}/files?purpose=batch (https://platform.openai.com/docs/api-reference/files/list): a file a run uploaded
  but was killed before it heard of is found by its name, not uploaded again;
- POST {base}/batches, endpoint /v1/chat/completions, completion_window 24h, the only one offered
  (https://platform.openai.com/docs/api-reference/batch/create); a try that fails as another might not is tried
  again only once the batch is not found made of its file (batch_jobs.created);
- GET {base}/batches (https://platform.openai.com/docs/api-reference/batch/list, pages by `after`): a batch a run
  created but was killed before it heard of is found by its input file, not created again;
- GET {base}/batches/{id} (https://platform.openai.com/docs/api-reference/batch/retrieve): its status, validating,
  in_progress, finalizing, completed, failed, expired, cancelling or cancelled
  (https://platform.openai.com/docs/api-reference/batch/object), request_counts, output_file_id, error_file_id;
- GET {base}/files/{id}/content (https://platform.openai.com/docs/api-reference/files/retrieve-contents).
Every request goes through models/services/retry.py, as a call does (the batch's creation through batch_jobs.created).
"""
import json

from models import ModelConfigError, ModelError, Message, ModelReply, shortened
from models.services import retry, wire
from models.services.batch_jobs import ENDED, Outcome, Polled, created, once
from models.services.keys import redact
from models.services.openai_compatible import refused_fields

ENDPOINT = "/v1/chat/completions"
WINDOW = "24h"
WAITING = ("validating", "in_progress", "finalizing", "cancelling")
MAX_FILE_BYTES = 200_000_000  # "up to 200 MB" an input file (the batch guide); an output is no larger
LISTED_PAGES = 20  # of 100 batches each, looked through for one made from a file


class OpenAIBatches:
    """The Batch API of the server an `openai:` model calls (OPENAI_BASE_URL), with its key."""
    most_calls = 50_000  # "The file can contain up to 50,000 requests" (api-reference/batch/create)
    most_bytes = MAX_FILE_BYTES  # "and can be up to 200 MB in size"

    def __init__(self, model):
        self.model = model
        self.name = f"{model.backend}:{model.name}"
        self._url, self._headers = model.connection()
        self._key = self._headers.get("Authorization", "").removeprefix("Bearer ") or None
        self._session = None

    def body(self, messages: list[Message], stop: list[str], planned: bool = False) -> dict:
        return self.model.batch_body(messages, stop, planned)

    def without(self, body: dict, setting: str) -> dict:
        """The body with a setting the model refused (stop, temperature) left out."""
        return {k: v for k, v in body.items() if k != setting}

    def reply(self, answer: dict) -> ModelReply:
        """A response body read as a call's reply; ModelError for one that is none (an error in a 200 answer, which
        a call would try again, included)."""
        try:
            return self.model.reply_of(answer)
        except retry.Retryable as problem:
            raise ModelError(f"{self._where()} answered a call 200 with an error: {problem}") from None

    def size(self, id: str, body: dict) -> int:
        """The bytes of the call's line in the input file."""
        return len(_line(id, body))

    def submit(self, name: str, calls: list[tuple[str, dict]]) -> tuple[str, dict]:
        """The batch of `calls` ((custom_id, body) pairs) under `name`: its id and {"input": its file's id}. A file
        of that name already uploaded is not uploaded again, nor a batch already made of it made again."""
        file = self._found_file(name)
        if file is None:
            data = b"".join(_line(id, body) for id, body in calls)
            file = self._json("POST", "/files", data={"purpose": "batch"},
                              files={"file": (name, data, "application/jsonl")})["id"]
        batch = self._found_batch(file) or created(
            lambda: self._json("POST", "/batches", retried=False, json={
                "input_file_id": file, "endpoint": ENDPOINT, "completion_window": WINDOW}),
            lambda: self._found_batch(file), f"POST /batches at {self.model.url}")
        return batch["id"], {"input": file}

    def poll(self, batch_id: str) -> Polled:
        batch = self._json("GET", f"/batches/{batch_id}")
        counts = batch.get("request_counts") if isinstance(batch.get("request_counts"), dict) else {}
        errors = (batch.get("errors") or {}).get("data") if isinstance(batch.get("errors"), dict) else None
        problem = "; ".join(shortened(str(error.get("message", error))) for error in errors or [])
        status = batch.get("status")
        if status not in WAITING + ENDED:
            raise ModelError(f"{self._where()} answered a batch with the status {str(status)[:40]!r}, which the "
                             "Batch API does not have")
        return Polled(status, int(counts.get("completed") or 0) + int(counts.get("failed") or 0),
                      int(counts.get("total") or 0),
                      {"output": batch.get("output_file_id"), "error": batch.get("error_file_id")}, problem)

    def outcomes(self, polled: Polled) -> list[Outcome]:
        """Every line of an ended batch's output and error files."""
        return [_outcome(line) for kind in ("output", "error") if polled.files.get(kind)
                for line in self._lines(polled.files[kind])]

    def _lines(self, file_id: str) -> list[dict]:
        data = self._request("GET", f"/files/{file_id}/content")
        try:
            return [wire.json_value(line) for line in data.splitlines() if line.strip()]
        except wire.Malformed as problem:
            raise ModelError(f"{self._where()} sent a batch file ({file_id}) with {problem}") from None

    def _found_file(self, name: str) -> str | None:
        listed = self._json("GET", "/files", params={"purpose": "batch"}).get("data") or []
        return next((file["id"] for file in listed if file.get("filename") == name
                     and file.get("status") not in ("error", "deleted")), None)

    def _found_batch(self, file_id: str) -> dict | None:
        after = None
        for _ in range(LISTED_PAGES):
            page = self._json("GET", "/batches", params={"limit": 100, **({"after": after} if after else {})})
            listed = page.get("data") or []
            found = next((batch for batch in listed if batch.get("input_file_id") == file_id), None)
            if found or not page.get("has_more") or not listed:
                return found
            after = listed[-1].get("id")
        return None

    def _json(self, method: str, path: str, retried: bool = True, **options) -> dict:
        try:
            answer = wire.json_value(self._request(method, path, retried, **options))
        except wire.Malformed as problem:
            raise ModelError(f"{self._where()} answered {method} {path} with {problem}") from None
        if not isinstance(answer, dict):
            raise ModelError(f"{self._where()} answered {method} {path} with {wire.kind(answer)}, not an object")
        return answer

    def _request(self, method: str, path: str, retried: bool = True, **options) -> bytes:
        """One request to the Files or Batches API, retried as a call is (retry.py), or, not `retried`, a failure
        another try might fix raised as Lost; its body."""
        import requests

        if self._session is None:
            self._session = requests.Session()

        def attempt(channel: retry.Channel) -> bytes:
            try:
                response = self._session.request(method, self._url + path, headers=self._headers,
                                                 allow_redirects=False, timeout=(10, retry.read_timeout(120)),
                                                 **options)
            except requests.ConnectionError as error:
                raise retry.Retryable(None, "connection failed", redact(str(error), self._key)) from None
            except requests.Timeout:
                raise retry.Retryable(None, "timed out", f"no answer from {self.model.url}") from None
            if response.status_code == 200:
                if len(response.content) > MAX_FILE_BYTES:
                    raise ModelError(f"{self._where()} sent more than {MAX_FILE_BYTES:,} bytes for {path}")
                return response.content
            raise self._explain(method, path, response)

        return retry.run(attempt if retried else once(attempt), backend=self.model.backend,
                         where=f"{method} {path} at {self.model.url}")

    def _explain(self, method: str, path: str, response) -> Exception:
        try:
            error = wire.json_value(response.content).get("error") or {}
        except (wire.Malformed, AttributeError):
            error = {}
        message = redact(shortened(str(error.get("message") if isinstance(error, dict) else error)
                                   or response.text[:200] or response.reason or ""), self._key)
        if response.status_code in retry.RETRY_STATUSES:
            return retry.Retryable(response.status_code, response.reason or "", message,
                                   retry.retry_after(response.headers.get("retry-after")))
        if response.status_code in (401, 403):
            return ModelConfigError(f"{self._where()} rejected the API key ({response.status_code}): check "
                                    f"OPENAI_API_KEY. {message}")
        if response.status_code == 404 and path in ("/files", "/batches"):
            return ModelConfigError(f"{self._where()} has no {path} ({method} answered 404): --via batch needs "
                                    "OpenAI's Batch API there")
        return ModelError(f"{self._where()} answered {method} {path} with {response.status_code}: {message}")

    def _where(self) -> str:
        return f"the Batch API at {self.model.url}"


def _line(id: str, body: dict) -> bytes:
    """A call's line of the input file."""
    line = {"custom_id": id, "method": "POST", "url": ENDPOINT, "body": body}
    return json.dumps(line, ensure_ascii=False).encode() + b"\n"


def _outcome(line) -> Outcome:
    """A line of an output or error file: its response body when its status is 200, else its error in words."""
    if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
        return Outcome("", None, f"a line with no custom_id: {shortened(json.dumps(line))[:80]}")
    response = line.get("response") if isinstance(line.get("response"), dict) else {}
    body = response.get("body")
    if response.get("status_code") == 200 and isinstance(body, dict):
        return Outcome(line["custom_id"], body, None)
    error = line.get("error") if isinstance(line.get("error"), dict) else \
        (body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), dict) else {})
    code = error.get("code") or response.get("status_code") or "no status"
    refused = refused_fields(error.get("param"), str(error.get("message"))) if response.get("status_code") == 400 \
        else ()  # as a call's 400 is read: the call is sent again without it
    return Outcome(line["custom_id"], None, shortened(f"{code}: {error.get('message') or 'no message'}"), refused)
