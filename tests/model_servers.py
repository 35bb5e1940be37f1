"""Loopback stand-ins for model APIs that behave like the real ones, so the real clients (google-genai,
requests) run in the tests: streamed answers, slow drips, redirects and refusals included.

- GeminiStandIn: `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent?alt=sse`, with
  the per-family rules of today's models for thinking settings and temperature; the one Gemini of the tests,
  the command line's included (tests/conftest.py's `gemini` and `world` start it).
- OpenAIStandIn: `POST /v1/chat/completions` (whole or as server-sent events) and `GET /v1/models`, as
  OpenAI, Ollama and llama.cpp's server answer them; BatchStandIn adds OpenAI's Files and Batch APIs.

Each rule is written from the provider's documentation, cited beside it. Answers come from a queue; an
`Answer` in the queue is sent exactly as given (any status, headers, a body dripped in chunks).
"""
import base64
import json
import re
import threading

from servers import Answer, Loopback  # the one loopback server of the tests; Answer is re-exported from here


def stand_ins(monkeypatch, make, environment):
    """A fixture's body: start(replies, **knobs) starts the stand-in `make(replies, **knobs)` and names it through the
    variables `environment(server)` gives, as a user would; each is stopped at the test's end."""
    started = []

    def start(replies, **knobs):
        server = make(replies, **knobs).__enter__()
        for name, value in environment(server).items():
            monkeypatch.setenv(name, value)
        started.append(server)
        return server
    yield start
    for server in started:
        server.__exit__(None, None, None)


def sse(events: list) -> list[bytes]:
    """Server-sent events, one chunk each: `data: <json>` and a blank line (https://html.spec.whatwg.org/multipage/server-sent-events.html)."""
    return [f"data: {e if isinstance(e, str) else json.dumps(e)}\r\n\r\n".encode() for e in events]


def pieces(text: str, size: int = 5) -> list[str]:
    """A reply as a model streams it: a few characters at a time."""
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def cut_at_stops(text: str, stops: list[str]) -> str:
    """The text a server returns for a request with stop sequences: everything before the first one."""
    for stop in stops:
        text = text.split(stop)[0]
    return text


# ------------------------------------------------------------------ Gemini

# The model that answers a name, as the API names it in `modelVersion`: a -latest alias is the newest model of its
# family ("points to the latest release", https://ai.google.dev/gemini-api/docs/models#model-versions; the newest
# Flash on the deprecations page as read on 2026-11-10 is gemini-3.8-flash), a retired name its successor
# (https://ai.google.dev/gemini-api/docs/deprecations), any other name itself.
SERVED = {"gemini-flash-latest": "gemini-3.8-flash", "gemini-2.5-pro": "gemini-3.8-flash",
          "gemini-2.5-flash": "gemini-3.5-flash-lite"}


def gemini_response(text: str, finish: str = "STOP", prompt_tokens: int = 100, output_tokens: int = 10,
                    thoughts_tokens: int = 0, cached_tokens: int = 0) -> dict:
    """A GenerateContentResponse, https://ai.google.dev/api/generate-content#generatecontentresponse; the prompt's
    count includes the part served from the implicit cache, cachedContentTokenCount (UsageMetadata)."""
    usage = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens,
             "totalTokenCount": prompt_tokens + output_tokens + thoughts_tokens}
    if thoughts_tokens:
        usage["thoughtsTokenCount"] = thoughts_tokens
    if cached_tokens:
        usage["cachedContentTokenCount"] = cached_tokens
    content = {"parts": [{"text": text}] if text else [], "role": "model"}
    return {"candidates": [{"content": content, "finishReason": finish, "index": 0}], "usageMetadata": usage,
            "modelVersion": "stand-in", "responseId": "stand-in"}


def gemini_calls(*calls: tuple[str, dict], text: str | None = None, ids: bool = False) -> dict:
    """A response whose content makes function calls: `functionCall` parts ({name, args}, an id only with `ids`), the
    first of them carrying a thoughtSignature, as Gemini 3 signs parallel calls
    (https://ai.google.dev/gemini-api/docs/thought-signatures: "the first functionCall part" of each step); the
    stand-in signs it with a value of its own, which it then expects back (see signature_error)."""
    answer = gemini_response(text or "")
    parts = [{"functionCall": {"name": name, "args": args, **({"id": f"fc-{n}"} if ids else {})}}
             for n, (name, args) in enumerate(calls, 1)]
    parts[0]["thoughtSignature"] = base64.b64encode(f"signed:{calls[0][0]}".encode()).decode()
    answer["candidates"][0]["content"]["parts"] += parts
    return answer


# Gemini's refusals of a history that does not fit its function calls, in its own words: the missing signature as the
# thought-signatures page and docs.apiyi.com/en/faq/gemini-thought-signature-missing quote it; the other two as
# reported in langchain-ai/langchain#27799 and google-gemini/gemini-cli#4217.
MISSING_SIGNATURE = ("Function call is missing a thought_signature in functionCall parts. This is required for tools "
                     "to work correctly, and missing thought_signature may lead to degraded model performance. "
                     "Additional data, function call `default_api:{name}` , position {position}. Please refer to "
                     "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.")
# A text part that is empty, as reported after a MALFORMED_FUNCTION_CALL reply was sent back in a chat
# (google-gemini/deprecated-generative-ai-python#727, googleapis/google-cloud-go#10309).
EMPTY_TEXT = ("Unable to submit request because it has an empty text parameter. Add a value to the parameter and try "
              "again.")
RESPONSE_AFTER_CALL = ("Please ensure that function response turn comes immediately after a function call turn.")
RESPONSE_COUNT = ("Please ensure that the number of function response parts is equal to the number of function call "
                  "parts of the function call turn.")


def function_history_error(contents: list[dict], model: str) -> str | None:
    """What Gemini answers 400 for in a request with function calls: a response that follows no call, a response count
    that is not the call count, and, for Gemini 3 and later, a call of the current turn (since the last user text)
    whose first functionCall part lacks the signature it came with."""
    if any(part.get("text") == "" and "thoughtSignature" not in part for content in contents
           for part in content.get("parts", [])):
        return EMPTY_TEXT
    for before, content in zip([None] + contents, contents):
        responses = [p for p in content.get("parts", []) if "functionResponse" in p]
        if responses:
            calls = [p for p in (before or {}).get("parts", []) if "functionCall" in p]
            if not calls:
                return RESPONSE_AFTER_CALL
            if len(calls) != len(responses):
                return RESPONSE_COUNT
    if not re.match(r"gemini-([3-9]|\d\d)|.*-latest$", model):
        return None
    turn = max((n for n, c in enumerate(contents) if c.get("role") == "user"
                and any("text" in p for p in c.get("parts", []))), default=0)
    position = 0
    for content in contents[turn:]:
        calls = [p for p in content.get("parts", []) if "functionCall" in p]
        signed = f"signed:{calls[0]['functionCall']['name']}".encode() if calls else b""
        sent = base64.b64decode(calls[0].get("thoughtSignature", "")) if calls else b""
        if calls and content.get("role") == "model" and sent != signed:
            return MISSING_SIGNATURE.format(name=calls[0]["functionCall"]["name"], position=position + 1)
        position += len(content.get("parts", []))
    return None


def gemini_error(code: int, status: str, message: str, *details: dict, headers: dict | None = None) -> Answer:
    """An error as the API sends it: google.rpc.Status in JSON, https://cloud.google.com/apis/design/errors#http_mapping"""
    error = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    answer = Answer.json(code, {"error": error})
    answer.headers.update(headers or {})
    return answer


def retry_info(delay: str) -> dict:
    return {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}


def quota_failure(quota_id: str) -> dict:
    """How a spent quota is named in a 429 (ids seen in the wild: GenerateRequestsPerDayPerProjectPerModel-FreeTier,
    GenerateRequestsPerMinutePerProjectPerModel-FreeTier), https://ai.google.dev/gemini-api/docs/rate-limits"""
    return {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                            "quotaId": quota_id}]}


def thinking_rule(model: str, generation: dict) -> str | None:
    """Why today's API refuses a generationConfig for this model, or None. The rules, from
    https://ai.google.dev/gemini-api/docs/thinking and https://ai.google.dev/gemini-api/docs/gemini-3:
    - Gemini 3+ takes thinkingLevel; Pro takes LOW or HIGH; Flash from 3.7 on and the -latest aliases take
      LOW, MEDIUM or HIGH (MINIMAL was accepted by early 3.x Flash only); temperature is refused by 3.7+ Flash
      (Google advises leaving it at its default for Gemini 3).
    - Gemini 2.5 takes thinkingBudget and refuses thinkingLevel; 2.5 Pro cannot turn thinking off and takes
      128 to 32768; 2.5 Flash takes 0 to 24576.
    - thinkingLevel and thinkingBudget together are refused.
    Field names are accepted in both spellings, as proto3 JSON parsers do (https://protobuf.dev/programming-guides/json/):
    the SDK sends `thinking_level` inside thinkingConfig, the REST docs write `thinkingLevel`."""
    thinking = generation.get("thinkingConfig") or generation.get("thinking_config") or {}
    level = thinking.get("thinkingLevel", thinking.get("thinking_level"))
    budget = thinking.get("thinkingBudget", thinking.get("thinking_budget"))
    if level is not None and budget is not None:
        return "You can only set one of thinking level and thinking budget."
    new_flash = re.fullmatch(r"gemini-(3\.[7-9]|[4-9](\.\d+)?)-flash.*|gemini-flash-latest", model)
    pro3 = re.fullmatch(r"gemini-([3-9](\.\d+)?)-pro.*|gemini-pro-latest", model)
    if model.startswith("gemini-2.5"):
        if level is not None:
            return "Thinking level is not supported for this model."
        low = 128 if "pro" in model else 0
        high = 32768 if "pro" in model else 24576
        if budget is not None and budget != -1 and not low <= budget <= high:
            return f"The thinking budget {budget} is invalid. Please choose a value between {low} and {high}."
    elif new_flash or pro3:
        allowed = ("LOW", "HIGH") if pro3 else ("LOW", "MEDIUM", "HIGH")
        if level is not None and str(level).upper() not in allowed:
            return f"Thinking level {level} is not supported for this model. Supported levels: {', '.join(allowed)}."
        if new_flash and "temperature" in generation:
            return "temperature is not supported for this model; leave it unset."
    return None


class GeminiStandIn(Loopback):
    """generateContent and streamGenerateContent from a queue of replies: a text (stopped at the request's
    stop sequences, as the API does), a response dict, or an Answer sent as it is.
    `pause` spaces the events of a streamed reply; `delay` is seconds the model "thinks" before each answer (it may
    be set on a running stand-in; closing it ends the wait)."""

    def __init__(self, replies: list, key: str = "test-key", pause: float = 0.0, delay: float = 0.0):
        super().__init__()
        self.replies, self.key, self.pause, self.delay = list(replies), key, pause, delay

    @property
    def bodies(self) -> list[dict]:
        return [r["body"] for r in self.requests if r["method"] == "POST"]

    def handle(self, request):
        match = re.fullmatch(r"/v1beta/models/([^/:]+):(generateContent|streamGenerateContent)", request["path"])
        if not match:
            return gemini_error(404, "NOT_FOUND", f"no route {request['path']}")
        model, method = match.groups()
        if request["headers"].get("x-goog-api-key") != self.key:
            # An invalid key is a 400, https://ai.google.dev/gemini-api/docs/troubleshooting
            return gemini_error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
                                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"})
        generation = request["body"].get("generationConfig") or {}
        # Retired names answer from their successor, under its rules (https://ai.google.dev/gemini-api/docs/deprecations,
        # as read on 2026-11-10): gemini-2.5-pro by gemini-3.8-flash, gemini-2.5-flash by gemini-3.5-flash-lite.
        model = {name: SERVED[name] for name in ("gemini-2.5-pro", "gemini-2.5-flash")}.get(model, model)
        refusal = thinking_rule(model, generation) or function_history_error(request["body"].get("contents") or [],
                                                                             model)
        if refusal:
            return gemini_error(400, "INVALID_ARGUMENT", refusal)
        if self.delay and self.closing.wait(self.delay):
            return gemini_error(503, "UNAVAILABLE", "the stand-in is closing")  # the test is over; nobody reads this
        if not self.replies:
            return gemini_error(500, "INTERNAL", "the stand-in has no replies left")
        reply = self.replies.pop(0)
        if isinstance(reply, Answer):
            return reply
        if isinstance(reply, str):
            reply = gemini_response(cut_at_stops(reply, generation.get("stopSequences") or []))
        if reply.get("modelVersion"):
            reply = {**reply, "modelVersion": SERVED.get(match.group(1), model)}
        if method == "generateContent":
            return Answer.json(200, reply)
        # Streamed: each event is a GenerateContentResponse with the next piece of text; the last carries the
        # finish reason and the usage, https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent
        candidate = (reply.get("candidates") or [{}])[0]
        text = "".join(p.get("text", "") for p in (candidate.get("content") or {}).get("parts", []))
        events = [{"candidates": [{"content": {"parts": [{"text": piece}], "role": "model"}, "index": 0}]}
                  for piece in pieces(text)]
        called = [p for p in (candidate.get("content") or {}).get("parts", []) if "functionCall" in p]
        if called:  # function calls come whole, in the last event (with the finish reason and the usage)
            events.append({"candidates": [{"content": {"parts": called, "role": "model"}, "index": 0}]})
        last = json.loads(json.dumps(reply))
        if "candidates" in last:
            events[-1] = {**last, "candidates": [{**last["candidates"][0],
                                                  "content": events[-1]["candidates"][0]["content"]}]}
        else:
            events = [last]
        return Answer(200, sse(events), {"Content-Type": "text/event-stream"}, self.pause)


# ------------------------------------------------------------------ OpenAI-compatible

def completion(text: str, finish: str = "stop", usage: bool = True, reasoning: str | None = None,
               model: str = "m") -> dict:
    """A chat.completion object, https://platform.openai.com/docs/api-reference/chat/object"""
    message = {"role": "assistant", "content": text}
    if reasoning:
        message["reasoning_content"] = reasoning
    answer = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
              "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    if usage:
        answer["usage"] = {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132}
    return answer


def tool_completion(*calls: tuple[str, object], text: str | None = None, ids: bool = True) -> dict:
    """A chat.completion whose message calls tools: content null (or `text`) beside tool_calls, finish_reason
    tool_calls (https://platform.openai.com/docs/guides/function-calling). Arguments are JSON text as OpenAI sends
    them; an object given here is sent as an object, as Ollama does (docs.ollama.com/capabilities/tool-calling)."""
    answer = completion("", finish="tool_calls")
    answer["choices"][0]["message"] = {"role": "assistant", "content": text, "tool_calls": [
        {**({"id": f"call_{n}"} if ids else {}), "type": "function", "function": {"name": name, "arguments": args}}
        for n, (name, args) in enumerate(calls, 1)]}
    return answer


def ollama_answer(text: str = "", *calls: tuple[str, dict], model: str = "qwen3:8b", reason: str = "stop") -> dict:
    """An answer of Ollama's /api/chat: the message (its tool calls with their arguments as an object, and no id),
    done_reason and the counts (https://docs.ollama.com/api/chat)."""
    message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [{"function": {"name": name, "arguments": arguments}} for name, arguments in calls]
    return {"model": model, "created_at": "2026-12-03T10:00:00Z", "message": message, "done": True,
            "done_reason": reason, "prompt_eval_count": 120, "eval_count": 12}


# A function's name as OpenAI accepts it: https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools
FUNCTION_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def tool_history_error(messages: list[dict], tools) -> str | None:
    """What OpenAI answers 400 for in a request with tools, in its own words (quoted in many issues, as
    github.com/FoundationAgents/OpenManus/issues/744 and microsoft/promptflow#3130): a `tool` message that answers
    no call of the assistant message before it, an assistant message with tool_calls not followed by a `tool` message
    for each id, and a tool that is not a function with a valid name."""
    for tool in tools or []:
        function = tool.get("function") or {}
        if tool.get("type") != "function" or not FUNCTION_NAME.fullmatch(str(function.get("name", ""))):
            return f"Invalid 'tools': {json.dumps(tool)[:80]} is not a function with a valid name."
        if function.get("parameters", {}).get("type") != "object":
            return "Invalid schema for function: schema must be a JSON Schema of 'type: \"object\"'."
    waiting, answered = [], []
    for message in messages:
        if message["role"] == "tool":
            if message.get("tool_call_id") not in waiting:
                return "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
            answered.append(message["tool_call_id"])
            continue
        if set(answered) != set(waiting):
            missing = ", ".join(sorted(set(waiting) - set(answered)))
            return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                    f"'tool_call_id'. The following tool_call_ids did not have response messages: {missing}")
        waiting, answered = [call["id"] for call in message.get("tool_calls") or []], []
    if set(answered) != set(waiting):
        return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                "'tool_call_id'.")
    return None


def openai_error(status: int, message: str, type: str = "invalid_request_error", code: str | None = None,
                 param: str | None = None, headers: dict | None = None) -> Answer:
    """An error object, https://platform.openai.com/docs/guides/error-codes"""
    answer = Answer.json(status, {"error": {"message": message, "type": type, "param": param, "code": code}})
    answer.headers.update(headers or {})
    return answer


class OpenAIStandIn(Loopback):
    """chat/completions from a queue of replies: a text (stopped at the request's stop sequences), a
    chat.completion dict, or an Answer. `key`: the bearer token required (None: any). `models`: the ids
    listed at /v1/models; another model is a 404 model_not_found. `usage`: whether answers carry usage.
    `reasoning`: text sent apart as `reasoning_content`, as llama.cpp does. `echo_key`: a careless server
    that quotes the key it was sent in its 401."""

    def __init__(self, replies: list, key: str | None = None, models: tuple = ("qwen3:8b",), usage: bool = True,
                 reasoning: str | None = None, echo_key: bool = False, pause: float = 0.0, refuse_stop: bool = False,
                 refuse_temperature: bool = False, ollama_context: int | None = None):
        super().__init__()
        # As Ollama: /api/ps lists the loaded model with its context_length, and a prompt longer than that is cut
        # from its start, instructions first, with no error (docs/context-length.mdx; ollama issues #10980, #17427).
        # Tokens are reckoned at 4 characters each; `cut` counts the messages each request lost.
        self.ollama_context, self.cut = ollama_context, []
        self.replies, self.key, self.models, self.usage = list(replies), key, list(models), usage
        self.reasoning, self.echo_key, self.pause, self.refuse_stop = reasoning, echo_key, pause, refuse_stop
        self.refuse_temperature = refuse_temperature

    @property
    def bodies(self) -> list[dict]:
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def handle(self, request):
        sent_key = request["headers"].get("Authorization", "").removeprefix("Bearer ")
        if self.key is not None and sent_key != self.key:
            shown = sent_key if self.echo_key else sent_key[:3] + "****"
            return openai_error(401, f"Incorrect API key provided: {shown}.", code="invalid_api_key")
        other = self._other_path(request)
        if other is not None:
            return other
        body = request["body"]
        if body["model"] not in self.models:
            # Ollama: `model "x" not found, try pulling it first`; OpenAI: code model_not_found.
            return openai_error(404, f"The model `{body['model']}` does not exist or you do not have access to it.",
                                code="model_not_found")
        if self.refuse_stop and "stop" in body:
            # Reasoning models refuse stop sequences: https://platform.openai.com/docs/guides/reasoning
            return openai_error(400, "Unsupported parameter: 'stop' is not supported with this model.",
                                code="unsupported_parameter", param="stop")
        if self.refuse_temperature and body.get("temperature", 1) != 1:
            # Reasoning models take only the default temperature, as OpenAI answers them (reported verbatim in
            # github.com/leafo/lua-openai/issues/12; https://platform.openai.com/docs/guides/reasoning).
            return openai_error(400, f"Unsupported value: 'temperature' does not support {body['temperature']} with "
                                "this model. Only the default (1) value is supported.", code="unsupported_value",
                                param="temperature")
        problem = tool_history_error(body["messages"], body.get("tools"))
        if problem:
            return openai_error(400, problem)
        if self.ollama_context:
            messages = list(body["messages"])
            while len(messages) > 1 and sum(len(m["content"] or "") for m in messages) / 4 > self.ollama_context:
                messages.pop(0)
            self.cut.append(len(body["messages"]) - len(messages))
        if not self.replies:
            return openai_error(500, "the stand-in has no replies left", type="server_error")
        reply = self.replies.pop(0)
        if isinstance(reply, Answer):
            return reply
        if isinstance(reply, str):
            stop = body.get("stop") or []
            reply = completion(cut_at_stops(reply, [stop] if isinstance(stop, str) else stop), usage=self.usage,
                               reasoning=self.reasoning, model=body["model"])
        if not body.get("stream"):
            return Answer.json(200, reply)
        return Answer(200, sse(self._chunks(reply, body)), {"Content-Type": "text/event-stream"}, self.pause)

    def _other_path(self, request) -> Answer | None:
        """The answer to a request for anything but /v1/chat/completions: Ollama's /api/ps and /api/chat, the
        model list; None for chat/completions."""
        if request["method"] == "GET" and request["path"] == "/api/ps" and self.ollama_context:
            return Answer.json(200, {"models": [{"name": m, "model": m, "size": 1,
                                                 "context_length": self.ollama_context}
                                                for m in self.models]})
        if request["method"] == "GET" and request["path"] == "/v1/models":
            return Answer.json(200, {"object": "list", "data": [{"id": m, "object": "model", "created": 0,
                                                                 "owned_by": "library"} for m in self.models]})
        if request["path"] == "/api/chat":
            return self._api_chat(request["body"])
        if request["path"] != "/v1/chat/completions":
            return Answer(404, [b"404 page not found"], {"Content-Type": "text/plain"})
        return None

    def _api_chat(self, body: dict) -> Answer:
        """Ollama's own /api/chat (https://docs.ollama.com/api/chat; docs.ollama.com/capabilities/tool-calling): a
        reply from the queue as one object, or (the default, "stream" true) as a JSON object a line, whose last says
        "done": true with the counts."""
        if body["model"] not in self.models:
            return Answer.json(404, {"error": f'model "{body["model"]}" not found, try pulling it first'})
        for message in body["messages"]:
            # Ollama decodes the request into Go structs; these are its answers to what users' clients sent
            # (BerriAI/litellm#11273: content as a list; aliasrobotics/cai#76, neuron-core/neuron-ai#219: arguments
            # sent as JSON text, as OpenAI's API takes them).
            if not isinstance(message.get("content", ""), str):
                return Answer.json(400, {"error": "json: cannot unmarshal array into Go struct field "
                                                  "ChatRequest.messages.content of type string"})
            for call in message.get("tool_calls") or []:
                if not isinstance(call["function"].get("arguments", {}), dict):
                    return Answer.json(400, {"error": "json: cannot unmarshal string into Go struct field "
                                                      "ChatRequest.messages.tool_calls.function.arguments of type "
                                                      "api.ToolCallFunctionArguments"})
        if not self.replies:
            return Answer.json(500, {"error": "the stand-in has no replies left"})
        reply = self.replies.pop(0)
        if isinstance(reply, Answer):
            return reply
        if isinstance(reply, str):
            stop = (body.get("options") or {}).get("stop") or []
            reply = ollama_answer(cut_at_stops(reply, stop), model=body["model"])
        if body.get("stream") is False:
            return Answer.json(200, reply)
        lines = [{"model": reply["model"], "created_at": reply["created_at"],
                  "message": {"role": "assistant", "content": piece}, "done": False}
                 for piece in pieces(reply["message"].get("content") or "")]
        if reply["message"].get("tool_calls"):  # streamed whole, in one line (ollama.com/blog/streaming-tool)
            calls = reply["message"]["tool_calls"]
            lines.append({"model": reply["model"], "created_at": reply["created_at"], "done": False,
                          "message": {"role": "assistant", "content": "", "tool_calls": calls}})
        lines.append({**reply, "message": {"role": "assistant", "content": ""}})
        return Answer(200, [json.dumps(line).encode() + b"\n" for line in lines],
                      {"Content-Type": "application/x-ndjson"}, self.pause)

    def _chunks(self, reply: dict, body: dict) -> list:
        """A completion as chat.completion.chunk events: reasoning and content deltas, the finish reason, then
        (with stream_options.include_usage) a last chunk with empty choices and the usage, then [DONE]:
        https://platform.openai.com/docs/api-reference/chat/streaming"""
        choice = reply["choices"][0]
        base = {"id": reply["id"], "object": "chat.completion.chunk", "created": 0, "model": reply["model"]}
        deltas = [{"reasoning_content": piece} for piece in pieces(choice["message"].get("reasoning_content") or "")
                  if piece] + [{"content": piece} for piece in pieces(choice["message"].get("content") or "")]
        for index, call in enumerate(choice["message"].get("tool_calls") or []):
            # The first delta of a call brings its id, type and name; its arguments follow in pieces
            # (https://platform.openai.com/docs/guides/function-calling#streaming).
            function = call["function"]
            deltas.append({"tool_calls": [{"index": index, **{k: call[k] for k in ("id", "type") if k in call},
                                           "function": {"name": function["name"], "arguments": ""}}]})
            arguments = function["arguments"]
            deltas += [{"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                       for piece in (pieces(arguments, 7) if isinstance(arguments, str) else [arguments])]
        events = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas]
        events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
        if (body.get("stream_options") or {}).get("include_usage") and reply.get("usage"):
            events.append({**base, "choices": [], "usage": reply["usage"]})
        return events + ["[DONE]"]


# ------------------------------------------------------------------ OpenAI's Files and Batch APIs

def multipart(request) -> dict:
    """The fields of a multipart/form-data body: name -> (filename or None, bytes)."""
    from email import policy
    from email.parser import BytesParser

    head = f"Content-Type: {request['headers'].get('Content-Type', '')}\r\n\r\n".encode()
    message = BytesParser(policy=policy.HTTP).parsebytes(head + request["body"])
    return {part.get_param("name", header="content-disposition"): (part.get_filename(),
                                                                  part.get_payload(decode=True))
            for part in message.iter_parts()}


class BatchStandIn(OpenAIStandIn):
    """OpenAI's Files and Batch APIs over the chat completions of OpenAIStandIn, each line of a batch answered from
    the same queue of replies, in the order of its input, as the synchronous calls would be. Each rule is from
    https://platform.openai.com/docs/guides/batch and the API reference, read on 2026-12-07:
    - POST /v1/files takes a multipart form with `purpose` and `file`, and answers a File object {id, object "file",
      bytes, created_at, filename, purpose} (api-reference/files/create); GET /v1/files?purpose= lists them in
      {"object": "list", "data"} (api-reference/files/list); GET /v1/files/{id}/content answers the file's bytes
      (api-reference/files/retrieve-contents).
    - POST /v1/batches takes input_file_id, endpoint and completion_window, of which only "24h" is supported, and
      answers a Batch object, status "validating" (api-reference/batch/create); a file not uploaded with purpose
      "batch", or a line whose url is not the batch's endpoint, fails the batch in validation, its reasons in
      errors.data (the batch guide: "The file can contain up to 50,000 requests"; "url" must match).
    - GET /v1/batches/{id} (api-reference/batch/retrieve): each poll here moves it one state on, validating,
      in_progress, finalizing, completed, with request_counts {total, completed, failed}; output_file_id and
      error_file_id once completed (api-reference/batch/object). GET /v1/batches?limit=&after= lists the newest
      first with has_more (api-reference/batch/list).
    - Output lines {id, custom_id, response: {status_code, request_id, body}, error: null} come "in any order": the
      guide says the output line order may not match the input order; here they come reversed. A request that
      failed has its line in the error file, with its status_code and error body.
    - A batch that does not complete in its window is "expired": the requests done are in the output file, the
      others in the error file with error {"code": "batch_expired"} (the guide's "Batch expiration").
    - A batch cancelled (at OpenAI's dashboard, or POST /v1/batches/{id}/cancel) is "cancelling", then "cancelled"
      with the requests done in its output file (https://platform.openai.com/docs/api-reference/batch/cancel).
    Knobs: `fail_first` lines of the first batch fail with a 500 in the error file (partial failure), saying
    `fail_message`; `outcome` "failed", "expired" or "cancelled" for every batch; `stranger`: an output line for a
    custom_id that was not sent; `stall`: "upload", "create" or "poll" (the second poll of a batch), where the
    stand-in does the work, sets `stalled` and never answers (a run killed there); `lost_creates`: that many batches
    are made but answered 503, as when the answer is lost on its way; `most_lines`: the requests a file may hold
    (the reference's 50,000), a batch of more failing in validation; `uploaded` keeps every line uploaded, `polls`
    counts the polls."""

    def __init__(self, replies: list, **options):
        self.fail_first = options.pop("fail_first", 0)
        self.outcome, self.stranger = options.pop("outcome", "completed"), options.pop("stranger", False)
        self.stall, self.lost_creates = options.pop("stall", None), options.pop("lost_creates", 0)
        self.most_lines = options.pop("most_lines", 50_000)
        self.fail_message = options.pop("fail_message", "The server had an error processing your request.")
        super().__init__(replies, models=("m",), **options)
        self.files, self.batches, self.uploaded, self.polls = {}, {}, [], 0
        self.stalled = threading.Event()

    def handle(self, request):
        path, method = request["path"], request["method"]
        if request["headers"].get("Authorization", "") != f"Bearer {self.key}" and self.key is not None:
            return openai_error(401, "Incorrect API key provided.", code="invalid_api_key")
        if path == "/v1/files" and method == "POST":
            return self._upload(multipart(request))
        if path == "/v1/files":
            purpose = request["query"].get("purpose")
            return Answer.json(200, {"object": "list", "data": [
                {k: v for k, v in file.items() if k != "data"} for file in self.files.values()
                if purpose in (None, file["purpose"])]})
        match = re.fullmatch(r"/v1/files/([^/]+)/content", path)
        if match:
            file = self.files.get(match.group(1))
            return Answer(200, [file["data"]], {"Content-Type": "application/octet-stream"}) if file else \
                openai_error(404, f"No such File object: {match.group(1)}")
        if path == "/v1/batches" and method == "POST":
            return self._create(request["body"])
        if path == "/v1/batches":
            listed = list(reversed(self.batches.values()))  # the newest first
            after = request["query"].get("after")
            if after:
                listed = listed[[b["id"] for b in listed].index(after) + 1:]
            limit = int(request["query"].get("limit", 20))
            return Answer.json(200, {"object": "list", "data": listed[:limit], "has_more": len(listed) > limit})
        match = re.fullmatch(r"/v1/batches/([^/]+)", path)
        if match:
            return self._poll(match.group(1))
        return super().handle(request)

    def _held(self, step: str, answer: Answer) -> Answer:
        """The answer, or, at the step the stand-in stalls at, none: the work done, the client left waiting."""
        if self.stall == step:
            self.stalled.set()
            self.closing.wait()
        return answer

    def _upload(self, form: dict) -> Answer:
        name, data = form["file"]
        lines = [json.loads(line) for line in data.splitlines() if line.strip()]
        self.uploaded += lines
        file = {"id": f"file-{len(self.files) + 1}", "object": "file", "bytes": len(data), "created_at": 0,
                "filename": name, "purpose": form["purpose"][1].decode(), "data": data}
        self.files[file["id"]] = file
        return self._held("upload", Answer.json(200, {k: v for k, v in file.items() if k != "data"}))

    def _create(self, body: dict) -> Answer:
        file = self.files.get(body.get("input_file_id"))
        if file is None:
            return openai_error(400, f"Invalid input_file_id: {body.get('input_file_id')}")
        if body.get("completion_window") != "24h":
            return openai_error(400, "Invalid completion_window: only '24h' is supported.",
                                param="completion_window")
        batch = {"id": f"batch_{len(self.batches) + 1}", "object": "batch", "endpoint": body.get("endpoint"),
                 "errors": None, "input_file_id": file["id"], "completion_window": "24h", "status": "validating",
                 "output_file_id": None, "error_file_id": None, "created_at": 0,
                 "request_counts": {"total": 0, "completed": 0, "failed": 0}}
        self.batches[batch["id"]] = batch
        if self.lost_creates > 0:
            self.lost_creates -= 1
            return openai_error(503, "The engine is currently overloaded, please try again later.", type="server_error")
        return self._held("create", Answer.json(200, batch))

    def _poll(self, batch_id: str) -> Answer:
        batch = self.batches.get(batch_id)
        if batch is None:
            return openai_error(404, f"No batch found with id '{batch_id}'.")
        self.polls += 1
        lines = [json.loads(line) for line in self.files[batch["input_file_id"]]["data"].splitlines()]
        steps = {"validating": "in_progress", "in_progress": "finalizing", "finalizing": "completed"}
        if batch["status"] == "validating" and len(lines) > self.most_lines:
            batch["status"], batch["errors"] = "failed", {"object": "list", "data": [
                {"code": "invalid_request", "message": f"The file holds {len(lines)} requests; at most "
                 f"{self.most_lines} are allowed.", "line": None}]}
        elif batch["status"] == "validating" and (self.outcome == "failed" or self.files[batch["input_file_id"]][
                "purpose"] != "batch" or any(line.get("url") != batch["endpoint"] for line in lines)):
            batch["status"], batch["errors"] = "failed", {"object": "list", "data": [
                {"code": "invalid_request", "message": "The url of line 1 does not match the batch's endpoint.",
                 "line": 1}]}
        elif batch["status"] == "in_progress" and self.outcome == "expired":
            self._answer(batch, lines, expired=True)
        elif batch["status"] == "in_progress" and self.outcome == "cancelled":
            batch["status"] = "cancelling"
        elif batch["status"] == "cancelling":
            self._answer(batch, lines, cancelled=True)
        elif batch["status"] in steps:
            batch["status"] = steps[batch["status"]]
            if batch["status"] == "completed":
                self._answer(batch, lines)
        batch["request_counts"]["total"] = len(lines)
        held = self.stall == "poll" and self.polls == 2
        return self._held("poll", Answer.json(200, batch)) if held else Answer.json(200, batch)

    def _answer(self, batch: dict, lines: list[dict], expired: bool = False, cancelled: bool = False) -> None:
        """Each line answered as chat/completions would answer it (OpenAIStandIn), in the order of the input; the
        output and error files written, the output reversed. Cancelled, the second half of the lines is not done and
        has no line at all (the cancel reference: "partial results (if any) available in the output file")."""
        output, errors = [], []
        first = batch["id"] == "batch_1"
        for number, line in enumerate(lines):
            if cancelled and number >= len(lines) // 2:
                continue
            result = {"id": f"batch_req_{number}", "custom_id": line["custom_id"], "error": None}
            if expired and number >= len(lines) // 2:
                errors.append({**result, "response": None, "error": {
                    "code": "batch_expired",
                    "message": "This request could not be executed before the completion window expired."}})
                continue
            if first and number < self.fail_first:
                errors.append({**result, "response": {"status_code": 500, "request_id": f"req_{number}", "body": {
                    "error": {"message": self.fail_message, "type": "server_error",
                              "param": None, "code": None}}}})
                continue
            answer = super().handle({"method": "POST", "path": "/v1/chat/completions", "headers": {
                "Authorization": f"Bearer {self.key}"}, "query": {}, "body": line["body"]})
            body = json.loads(b"".join(answer.chunks))
            result["response"] = {"status_code": answer.status, "request_id": f"req_{number}", "body": body}
            (output if answer.status == 200 else errors).append(result)
        if self.stranger:
            output.append({**output[0], "custom_id": "not-sent-here"})
        batch["status"] = "expired" if expired else "cancelled" if cancelled else "completed"
        batch["request_counts"] = {"total": len(lines), "completed": len(output), "failed": len(errors)}
        for kind, results in (("output_file_id", list(reversed(output))), ("error_file_id", errors)):
            if results:
                data = b"".join(json.dumps(result).encode() + b"\n" for result in results)
                file = {"id": f"file-{len(self.files) + 1}", "object": "file", "bytes": len(data), "created_at": 0,
                        "filename": f"{batch['id']}_{kind[:-8]}.jsonl", "purpose": "batch_output", "data": data}
                self.files[file["id"]] = file
                batch[kind] = file["id"]


# ------------------------------------------------------------------ Gemini's batch mode

# google.rpc.Code's numbers for the statuses an error names (https://github.com/googleapis/googleapis/blob/master/google/
# rpc/code.proto): an inlined response's error is a google.rpc.Status (https://ai.google.dev/api/batch-mode)
RPC_CODES = {"INVALID_ARGUMENT": 3, "NOT_FOUND": 5, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8, "INTERNAL": 13,
             "UNAVAILABLE": 14}


class GeminiBatchStandIn(GeminiStandIn):
    """Gemini's batch mode over GeminiStandIn's generateContent, each inline request answered from the same queue of
    replies in the order sent, as the calls would be. The rules, from https://ai.google.dev/gemini-api/docs/batch-mode
    and https://ai.google.dev/api/batch-mode, read on 2026-12-07, in the shapes google-genai 3.6 reads
    (google/genai/batches.py: _BatchJob_from_mldev, _InlinedResponse_from_mldev):
    - POST /v1beta/models/{model}:batchGenerateContent takes {"batch": {"displayName", "inputConfig": {"requests":
      {"requests": [{"request": a GenerateContentRequest, "metadata": {...}}]}}}} and answers an operation
      {"name": "batches/{id}", "metadata": {"@type", "model", "displayName", "state": "BATCH_STATE_PENDING",
      "createTime"}};
    - GET /v1beta/batches/{id}: here each poll moves it on, BATCH_STATE_PENDING, BATCH_STATE_RUNNING, then
      BATCH_STATE_SUCCEEDED, whose metadata.output holds {"inlinedResponses": {"inlinedResponses": [{"response",
      "metadata"} or {"error", "metadata"}]}}, in the order of the requests, each with the metadata it was sent
      with; a request generateContent refuses (a setting the model does not take) has its error there, a
      google.rpc.Status whose code is gRPC's (3 for INVALID_ARGUMENT; the job still SUCCEEDED, as
      github.com/googleapis/python-genai/issues/2693 reports, where the message names no field: the run then tries the
      call twice unchanged); BATCH_STATE_FAILED, or BATCH_STATE_EXPIRED for a job not done in 48 hours;
    - GET /v1beta/batches?pageSize=&pageToken= lists them as {"operations": [...], "nextPageToken"}.
    Knobs: `fail_first` requests of the first batch answer an error (code 13, INTERNAL); `outcome` "failed" or
    "expired"; `stall`: "create" or "poll" (the second), where the stand-in does the work, sets `stalled` and never
    answers (a run killed there); `lost_creates`: that many batches are made but answered 503 UNAVAILABLE;
    `most_bytes`: the size of a batch of inline requests above which it is refused (the guide's 20 MB); `sent` keeps
    every inline request."""

    def __init__(self, replies: list, **options):
        self.fail_first, self.outcome = options.pop("fail_first", 0), options.pop("outcome", "succeeded")
        self.stall, self.stalled, self.polls = options.pop("stall", None), threading.Event(), 0
        self.lost_creates, self.most_bytes = options.pop("lost_creates", 0), options.pop("most_bytes", 20_000_000)
        super().__init__(replies, **options)
        self.jobs, self.sent = {}, []

    def _held(self, step: str, answer: Answer) -> Answer:
        if self.stall == step and (step != "poll" or self.polls == 2):
            self.stalled.set()
            self.closing.wait()
        return answer

    def handle(self, request):
        if request["headers"].get("x-goog-api-key") != self.key:
            return gemini_error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")
        match = re.fullmatch(r"/v1beta/models/([^/:]+):batchGenerateContent", request["path"])
        if match and request["method"] == "POST":
            return self._create(match.group(1), request["body"]["batch"])
        if request["path"] == "/v1beta/batches":
            return Answer.json(200, {"operations": list(self.jobs.values())})
        match = re.fullmatch(r"/v1beta/batches/([^/]+)", request["path"])
        if match:
            job = self.jobs.get(f"batches/{match.group(1)}")
            return self._poll(job) if job else gemini_error(404, "NOT_FOUND", "Requested entity was not found.")
        return super().handle(request)

    def _create(self, model: str, batch: dict) -> Answer:
        if len(json.dumps(batch)) > self.most_bytes:
            return gemini_error(400, "INVALID_ARGUMENT", f"Request payload size exceeds the limit: {self.most_bytes} "
                                "bytes.")
        requests = batch["inputConfig"]["requests"]["requests"]
        self.sent += requests
        name = f"batches/{len(self.jobs) + 1}"
        self.jobs[name] = {"name": name, "metadata": {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
            "model": f"models/{model}", "displayName": batch.get("displayName", ""), "state": "BATCH_STATE_PENDING",
            "createTime": "2026-12-07T01:00:00Z"}, "_requests": requests}
        if self.lost_creates > 0:
            self.lost_creates -= 1
            return gemini_error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
        return self._held("create", Answer.json(200, self._shown(self.jobs[name])))

    def _shown(self, job: dict) -> dict:
        return {key: value for key, value in job.items() if not key.startswith("_")}

    def _poll(self, job: dict) -> Answer:
        self.polls += 1
        metadata = job["metadata"]
        if metadata["state"] == "BATCH_STATE_PENDING":
            metadata["state"] = "BATCH_STATE_RUNNING"
        elif metadata["state"] == "BATCH_STATE_RUNNING" and self.outcome in ("failed", "expired"):
            metadata["state"] = f"BATCH_STATE_{self.outcome.upper()}"
            job["done"] = True
        elif metadata["state"] == "BATCH_STATE_RUNNING":
            metadata["output"] = {"inlinedResponses": {"inlinedResponses": self._answers(job)}}
            metadata["state"], job["done"] = "BATCH_STATE_SUCCEEDED", True
        return self._held("poll", Answer.json(200, self._shown(job)))

    def _answers(self, job: dict) -> list[dict]:
        answers = []
        model = job["metadata"]["model"].removeprefix("models/")
        for number, inline in enumerate(job["_requests"]):
            if job["name"] == "batches/1" and number < self.fail_first:
                answers.append({"error": {"code": 13, "message": "Internal error encountered."},
                                "metadata": inline.get("metadata", {})})
                continue
            answer = super().handle({"method": "POST", "path": f"/v1beta/models/{model}:generateContent",
                                     "headers": {"x-goog-api-key": self.key}, "query": {},
                                     "body": inline["request"]})
            body = json.loads(b"".join(answer.chunks))
            if answer.status != 200:  # the request's error, a google.rpc.Status whose code is gRPC's
                error = body.get("error", {})
                answers.append({"error": {"code": RPC_CODES.get(error.get("status"), 2), "message": error.get(
                    "message", "")}, "metadata": inline.get("metadata", {})})
                continue
            answers.append({"response": body, "metadata": inline.get("metadata", {})})
        return answers
