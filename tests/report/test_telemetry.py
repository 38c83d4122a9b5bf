"""OpenTelemetry spans for model calls and compactions (the SDK's in-memory exporter)."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from registre.attest.notes import Signer
from registre.ledger import Ledger
from registre.telemetry import emit_thread, model_call_span
from tests.report.conftest import Investigation


@pytest.fixture
def spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_emit_thread_spans_link_back_to_the_ledger(
    investigation: Investigation, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    with Ledger.open(str(investigation.db), create=False) as ledger:
        thread = ledger.thread("q3-review")
        emitted = emit_thread(thread, provider="openai", tracer_provider=provider)
        entries = list(thread.entries())
    finished = exporter.get_finished_spans()
    assert emitted == len(finished)
    calls = [s for s in finished if s.kind is SpanKind.CLIENT]
    compactions = [s for s in finished if s.kind is SpanKind.INTERNAL]
    assert len(calls) == investigation.model_calls
    assert compactions
    by_seq = {e.seq: e for e in entries}
    for span in calls:
        attributes = span.attributes or {}
        entry = by_seq[int(attributes["registre.seq"])]  # type: ignore[arg-type]
        assert span.name == "chat scripted-model"
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.conversation.id"] == "q3-review"
        assert attributes["registre.projection.sha256"] == entry.body["projection_sha256"]
    # a call right after a compaction says the conversation was compacted; the next does not
    flags = {
        int(s.attributes["registre.seq"]): s.attributes["gen_ai.conversation.compacted"]  # type: ignore[index, arg-type]
        for s in calls
    }
    marks = ("model.call", "context.compaction")
    for seq, flag in flags.items():
        previous = [e.kind for e in entries[:seq] if e.kind in marks]
        assert flag == (bool(previous) and previous[-1] == "context.compaction")
    assert any(flags.values()) and not all(flags.values())


def test_model_call_span_is_open_around_the_request(
    tmp_path: Path, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    with Ledger.open(str(tmp_path / "l.db"), Signer.generate("otel.example/l")) as ledger:
        thread = ledger.create_thread("t")
        thread.append("turn", {"role": "user", "text": "hello"}, "user")
        projection, entry = thread.model_call("m", budget=4000)
        with model_call_span(thread, projection, entry, tracer_provider=provider) as span:
            assert not exporter.get_finished_spans()
            span.set_attribute("gen_ai.usage.output_tokens", 7)
        (finished,) = exporter.get_finished_spans()
        assert finished.attributes["registre.context.tokens"] == projection.tokens  # type: ignore[index]
        assert finished.attributes["gen_ai.usage.output_tokens"] == 7  # type: ignore[index]
        with (
            pytest.raises(ValueError, match=r"not a model\.call"),
            model_call_span(thread, projection, thread.entry(0), tracer_provider=provider),
        ):
            pass
