"""Every test runs offline with no key: real credentials, proxies and OpenTelemetry endpoints in the environment are
removed."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

KEY_VARIABLES = ["GEMINI_API_KEY", "GOOGLE_API_KEY", "GEMINI_MODEL", "GEMINI_TEMPERATURE", "GEMINI_THINKING",
                 "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE",
                 "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_GENAI_API_VERSION",
                 "WIKIPEDIA_API_URL", "OPEN_METEO_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "http_proxy", "https_proxy", "all_proxy", "TINYREACT_MODEL", "TINYREACT_CALL_DEADLINE",
                 "GEMINI_MAX_OUTPUT_TOKENS", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "LLAMACPP_BASE_URL",
                 "TINYREACT_TEMPERATURE", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                 "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_SERVICE_NAME",
                 "OTEL_RESOURCE_ATTRIBUTES", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"]


@pytest.fixture(autouse=True)
def offline_environment(monkeypatch, tmp_path):
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.chdir(tmp_path)  # so no developer's .env in the working folder is read
    import wikipedia
    for cached in (wikipedia.search, wikipedia.summary, wikipedia.suggest):
        cached.clear_cache()
