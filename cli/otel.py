"""--otel: a run's spans sent to an OTLP/HTTP endpoint as it goes (views/otlp.py), one exporter for the run.

It is refused in one line before anything runs when it cannot work: the packages are not installed, or no endpoint
is named. At the end, one line says what was sent, or what was not and why; the run's exit code stays its own.
Message content goes in only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT asks for it, read once.
"""
import contextlib
import os
import sys

from tokens import local_counter
from views.terminal import clean
from cli.loading import load_env_files
from cli.output import UsageError

ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
CONTENT_ON = {"true", "span_only", "span_and_event"}  # the conventions' opt-in; the last two, its newer words


@contextlib.contextmanager
def exporting(args, patient: bool = False):
    """The run's exporter, or None without --otel; closed when the block ends, whatever ends it, waiting at most
    views.otlp.CLOSE_SECONDS for the last spans to leave (`patient`, when sending is all the mode does: longer)."""
    export, ended = _exporter(patient) if args.otel else None, False
    try:
        yield export
        ended = True
    finally:
        if export is not None:
            problem = export.close()
            if ended or export.ended:  # a mode that failed before any span was made has said why itself
                said = f"warning: --otel: {problem}" if problem else f"--otel: {export.sent()}"
                print(clean(said), file=sys.stderr)  # the endpoint is the environment's: a .env can set it


def _exporter(patient: bool):
    from views.otlp import OtlpExport, missing  # the view and the SDK load only when asked for

    problem = missing()
    if problem:
        raise UsageError(problem)
    load_env_files()  # the endpoint and its headers may be in .env, beside the keys
    if not any(os.environ.get(name, "").strip() for name in ENDPOINTS):
        raise UsageError("--otel sends the run's spans to an OTLP/HTTP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT "
                         "(http://localhost:6006 for a local Phoenix; see docs/telemetry.md)")
    content = os.environ.get(CONTENT, "").strip().lower() in CONTENT_ON
    # counted only when a policy drops a part: the counter's vocabulary is read while the model loads
    return OtlpExport(lambda text: local_counter().count(text), content=content, patient=patient)
