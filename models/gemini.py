"""Gemini through the official google-genai SDK.

Configuration, each a constructor argument or else an environment variable (also read from `.env`):
GEMINI_API_KEY (or GOOGLE_API_KEY), GEMINI_MODEL, GEMINI_TEMPERATURE (default 0), GEMINI_THINKING
(default "minimal"; "none" sends no thinking setting, for models that do not take one), and the SDK's
own GOOGLE_GEMINI_BASE_URL for a proxy or a test server, which is left for the SDK to apply.
"""
import os

from models import DEFAULT_MODEL, Message, ModelConfigError, ModelError, ModelReply

API_VERSION = "v1beta"  # the -latest aliases are served on v1beta
RETRY_STATUS = [429, 500, 503]
RETRY_ATTEMPTS = 4  # the first try and three retries: about 1 + 2 + 4 s of backoff, plus jitter
TIMEOUT_SECONDS = 60
MAX_OUTPUT_TOKENS = 2048
THINKING_LEVELS = ("none", "minimal", "low", "medium", "high")


class GeminiModel:
    usage_source = "billed, from the API"
    def __init__(
        self,
        name: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        thinking: str | None = None,
        retry_delay: float = 1.0,
    ):
        self.name = name or os.environ.get("GEMINI_MODEL") or DEFAULT_MODEL
        self._api_key = (api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY") or "").strip()
        if not self._api_key:
            raise ModelConfigError("no Gemini API key: set GEMINI_API_KEY in the environment or in .env (see .env.example)")
        self.temperature = temperature if temperature is not None else _float_env("GEMINI_TEMPERATURE", 0.0)
        self.thinking = (thinking or os.environ.get("GEMINI_THINKING") or "minimal").lower()
        if self.thinking not in THINKING_LEVELS:
            raise ModelConfigError(f"GEMINI_THINKING must be one of {', '.join(THINKING_LEVELS)}, got {self.thinking!r}")
        self._retry_delay = retry_delay
        self._client = None

    def __repr__(self) -> str:  # never show the key
        return f"GeminiModel({self.name!r})"

    def generate(self, messages: list[Message], stop: list[str]) -> ModelReply:
        from google.genai import errors, types

        system = "\n\n".join(m.text for m in messages if m.role == "system") or None
        contents = [types.Content(role=m.role, parts=[types.Part(text=m.text)]) for m in messages if m.role != "system"]
        config = types.GenerateContentConfig(
            system_instruction=system,
            temperature=self.temperature,
            stop_sequences=stop[:5] or None,  # the API takes at most five
            max_output_tokens=MAX_OUTPUT_TOKENS,
            thinking_config=None if self.thinking == "none" else types.ThinkingConfig(thinking_level=self.thinking.upper()),
        )
        try:
            response = self._connect().models.generate_content(model=self.name, contents=contents, config=config)
        except errors.APIError as error:
            raise self._explain(error) from None
        except Exception as error:  # the SDK's transport raises httpx errors once its retries are used up
            raise ModelError(f"could not reach Gemini: {type(error).__name__}: {error}") from None
        return _reply(response)

    def _connect(self):
        if self._client is None:
            from google import genai
            from google.genai import types

            retry = types.HttpRetryOptions(
                attempts=RETRY_ATTEMPTS, initial_delay=self._retry_delay, max_delay=8 * self._retry_delay,
                jitter=self._retry_delay,
                http_status_codes=RETRY_STATUS,
            )
            options = types.HttpOptions(api_version=API_VERSION, timeout=TIMEOUT_SECONDS * 1000, retry_options=retry)
            self._client = genai.Client(api_key=self._api_key, vertexai=False, http_options=options)
        return self._client

    def _explain(self, error) -> ModelError:
        message = (error.message or str(error)).replace(self._api_key, "***")
        if error.code in (401, 403) or (error.code == 400 and "API key" in message):
            return ModelConfigError(f"Gemini rejected the API key ({error.code}): check GEMINI_API_KEY. {message}")
        if error.code == 404:
            return ModelConfigError(f"Gemini has no model {self.name!r} ({message}): check --model or GEMINI_MODEL")
        return ModelError(f"Gemini answered {error.code} {error.status or ''}: {message}")


def _reply(response) -> ModelReply:
    """Text and usage from a GenerateContentResponse; no text and a reason when it was blocked."""
    usage = response.usage_metadata
    prompt = (usage.prompt_token_count or 0) if usage else 0
    output = (usage.candidates_token_count or 0) if usage else 0
    thoughts = (usage.thoughts_token_count or 0) if usage else 0
    counts = dict(input_tokens=prompt, output_tokens=output + thoughts, thoughts_tokens=thoughts)
    if not response.candidates:
        feedback = response.prompt_feedback
        reason = feedback.block_reason if feedback and feedback.block_reason else "no candidates"
        return ModelReply("", blocked=f"prompt blocked: {getattr(reason, 'value', reason)}", **counts)
    candidate = response.candidates[0]
    parts = candidate.content.parts if candidate.content and candidate.content.parts else []
    text = "".join(part.text for part in parts if part.text and not part.thought)
    finish = getattr(candidate.finish_reason, "value", candidate.finish_reason)
    blocked = None if text or finish in (None, "STOP", "MAX_TOKENS") else f"finish reason {finish}"
    return ModelReply(text, blocked=blocked, **counts)


def _float_env(name: str, default: float) -> float:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return float(value)
    except ValueError:
        raise ModelConfigError(f"{name} must be a number, got {value!r}") from None
