"""OpenTelemetry spans for model calls and compactions, linked back to the ledger.

Optional: needs the ``otel`` extra (``pip install 'registre[otel]'``); the caller configures
its own ``TracerProvider`` and exporter (registre opens no connection).

Two ways in:

* live, around the provider call: ``with model_call_span(thread, projection, entry,
  provider="openai") as span: response = client.chat.completions.create(...)``; the span is
  a GenAI inference span (kind CLIENT, name ``chat MODEL``) that the caller may enrich with
  the response (``gen_ai.usage.output_tokens``, ``gen_ai.response.id``, ...);
* after the fact: :func:`emit_thread` replays a thread's ``model.call`` and
  ``context.compaction`` entries as spans timed at their entries' times, for a trace backend
  that never saw the run.

Attributes (OpenTelemetry GenAI semantic conventions, Development status, as of v1.37+):
``gen_ai.operation.name`` (``chat``), ``gen_ai.request.model``, ``gen_ai.provider.name``
(when given), ``gen_ai.conversation.id`` (the thread id); and
``gen_ai.conversation.compacted`` (true on the first call after a compaction: the context
was consolidated since the previous call), which the issue tracker of the conventions
discusses but the registry does not define yet. registre's own: ``registre.thread``,
``registre.origin``, ``registre.seq`` (the ``model.call`` entry), ``registre.at_seq``,
``registre.projection.sha256``, ``registre.context.tokens`` (counted by
``registre.token_counter``), ``registre.context.budget_tokens``,
``registre.checkpoint.size`` (the newest signed checkpoint when the span is made, so the
entry can be proved against it), and, on compaction spans, ``registre.compaction.from``,
``.to``, ``.tokens_before``, ``.tokens_after`` and ``.summarizer``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from registre.errors import RefusedError

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from registre.attest.entries import Entry
    from registre.context import Projection
    from registre.ledger import Thread

__all__ = ["TelemetryUnavailableError", "emit_thread", "model_call_span"]

_TRACER: Final = "registre"


class TelemetryUnavailableError(RefusedError):
    """The OpenTelemetry API is not installed: telemetry needs the ``otel`` extra."""

    hint = "pip install 'registre[otel]'"


def _tracer(provider: TracerProvider | None) -> Tracer:
    try:
        from opentelemetry import trace
    except ImportError:
        raise TelemetryUnavailableError(
            "registre telemetry needs the opentelemetry-api package, which is not installed"
        ) from None
    if provider is None:
        return trace.get_tracer(_TRACER)
    return provider.get_tracer(_TRACER)


def _call_attributes(
    thread: Thread, entry: Entry, provider: str | None, compacted: bool
) -> dict[str, Any]:
    body = entry.body
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": str(body["model"]),
        "gen_ai.conversation.id": thread.id,
        "gen_ai.conversation.compacted": compacted,
        "registre.thread": thread.id,
        "registre.origin": thread.origin,
        "registre.seq": entry.seq,
        "registre.at_seq": int(body["at_seq"]),
        "registre.projection.sha256": str(body["projection_sha256"]),
        "registre.context.budget_tokens": int(body["budget_tokens"]),
        "registre.token_counter": str(body["token_counter"]),
    }
    if provider is not None:
        attributes["gen_ai.provider.name"] = provider
    latest = thread.latest_checkpoint()
    if latest is not None:
        attributes["registre.checkpoint.size"] = latest.size
    return attributes


def _compacted_since_previous_call(thread: Thread, call_seq: int) -> bool:
    for seq in range(call_seq - 1, -1, -1):
        kind = thread.entry(seq).kind
        if kind == "model.call":
            return False
        if kind == "context.compaction":
            return True
    return False


@contextmanager
def model_call_span(
    thread: Thread,
    projection: Projection,
    entry: Entry,
    *,
    provider: str | None = None,
    tracer_provider: TracerProvider | None = None,
) -> Iterator[Span]:
    """A GenAI CLIENT span for the ``model.call`` ``entry`` (as returned, with
    ``projection``, by ``thread.model_call``), open while the caller sends the request.
    ValueError if ``entry`` is not a model call; TelemetryUnavailableError without the
    OpenTelemetry API."""
    if entry.kind != "model.call":
        raise ValueError(f"entry {entry.seq} is a {entry.kind}, not a model.call")
    from opentelemetry.trace import SpanKind

    tracer = _tracer(tracer_provider)
    attributes = _call_attributes(
        thread, entry, provider, _compacted_since_previous_call(thread, entry.seq)
    )
    attributes["registre.context.tokens"] = projection.tokens
    name = f"chat {entry.body['model']}"
    with tracer.start_as_current_span(name, kind=SpanKind.CLIENT, attributes=attributes) as span:
        yield span


def emit_thread(
    thread: Thread, *, provider: str | None = None, tracer_provider: TracerProvider | None = None
) -> int:
    """Emit one span per ``model.call`` (CLIENT, ``chat MODEL``) and per compaction
    (INTERNAL, ``compact THREAD``) of ``thread``, timed at the entries' times, in seq
    order. Returns the number of spans emitted."""
    from opentelemetry.trace import SpanKind

    tracer = _tracer(tracer_provider)
    emitted = 0
    compacted = False
    for entry in thread.entries():
        start = _nanoseconds(entry.time)
        if entry.kind == "context.compaction":
            body = entry.body
            facts: dict[str, Any] = {
                "gen_ai.conversation.id": thread.id,
                "registre.thread": thread.id,
                "registre.seq": entry.seq,
                "registre.compaction.tokens_before": int(body["tokens_before"]),
                "registre.compaction.tokens_after": int(body["tokens_after"]),
                "registre.compaction.summarizer": (
                    f"{body['summarizer']['name']} {body['summarizer']['version']}"
                ),
            }
            if "folded" in body:  # a compaction that only stubs results folds nothing
                facts["registre.compaction.from"] = int(body["folded"]["from"])
                facts["registre.compaction.to"] = int(body["folded"]["to"])
            span = tracer.start_span(
                f"compact {thread.id}",
                kind=SpanKind.INTERNAL,
                start_time=start,
                attributes=facts,
            )
            span.end(end_time=start)
            compacted = True
            emitted += 1
        elif entry.kind == "model.call":
            attributes = _call_attributes(thread, entry, provider, compacted)
            span = tracer.start_span(
                f"chat {entry.body['model']}",
                kind=SpanKind.CLIENT,
                start_time=start,
                attributes=attributes,
            )
            span.end(end_time=start)
            compacted = False
            emitted += 1
    return emitted


def _nanoseconds(moment: str) -> int:
    parsed = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    return int(parsed.timestamp() * 1_000_000) * 1000
