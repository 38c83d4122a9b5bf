"""Building threads for the context tests and benchmarks: entries a ledger could hold, with
compactions planned, summarized by the default summarizer and recorded as they fall due.

Every body here passes ``registre.attest.entries.bodies.validate_body`` (the tests check that),
pins and
unpins carry the outcome the lifecycle rules give, and every compaction is the one
``prepare_compaction`` returns, so a thread built here is one a well-behaved writer produces.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from registre.context import (
    CompactionRecord,
    ContextEntry,
    ContextState,
    ExtractiveSummarizer,
    Policy,
    SummaryLine,
    TokenCounter,
    context_tokens,
    default_counter,
    entry_text,
    prepare_compaction,
)
from registre.context.record import record_to_body
from registre.lifecycle import (
    LifecycleState,
    PinRequest,
    ReadRequest,
    SourceRef,
    Statement,
    UnpinRequest,
    UpsertRequest,
    event_to_body,
    step,
)
from registre.lifecycle.model import PinKind


class EntryTexts(Mapping[int, str]):
    """``seq -> entry_text`` over a list of entries, computed when asked."""

    def __init__(self, entries: Sequence[ContextEntry]) -> None:
        self._entries = entries

    def __getitem__(self, seq: int) -> str:
        if not 0 <= seq < len(self._entries):
            raise KeyError(seq)
        entry = self._entries[seq]
        return entry_text(entry.kind, entry.body)

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self._entries)))

    def __len__(self) -> int:
        return len(self._entries)


@dataclass
class ThreadBuilder:
    """Appends entries to an in-memory thread and keeps its context state up to date.

    ``compact=True`` records a compaction whenever one falls due after an append (what the
    ledger does before a model call).
    """

    policy: Policy = field(default_factory=Policy)
    counter: TokenCounter = field(default_factory=default_counter)
    compact: bool = True
    entries: list[ContextEntry] = field(default_factory=list)
    state: ContextState = field(default_factory=ContextState)
    pins: LifecycleState = field(default_factory=LifecycleState.empty)
    calls: int = 0
    compactions: list[int] = field(default_factory=list)

    @property
    def seq(self) -> int:
        """The seq the next entry gets."""
        return len(self.entries)

    def append(self, kind: str, actor: str, body: Mapping[str, object]) -> ContextEntry:
        """Append one entry (no compaction)."""
        entry = ContextEntry(self.seq, kind, actor, dict(body))
        self.state.apply(entry)
        self.entries.append(entry)
        return entry

    @property
    def texts(self) -> Mapping[int, str]:
        """Entry texts by seq, computed on demand (what a ledger reads back for a refold)."""
        return EntryTexts(self.entries)

    def after_append(self) -> None:
        if self.compact:
            self.compact_now()

    def compact_now(self) -> ContextEntry | None:
        """Record the compaction due now, if any."""
        body = prepare_compaction(
            self.state, self.policy, self.counter, ExtractiveSummarizer(), self.texts
        )
        if body is None:
            return None
        self.compactions.append(self.seq)
        return self.append("context.compaction", "registre", body)

    # --- kinds ------------------------------------------------------------------------------

    def turn(self, role: str, text: str) -> None:
        self.append("turn", role, {"role": role, "text": text})
        self.after_append()

    def tool(self, name: str, command: str, output: str, *, is_error: bool = False) -> None:
        """A tool call and its result, appended back to back."""
        self.calls += 1
        call_id = f"call-{self.calls}"
        self.append(
            "tool.call",
            "assistant",
            {"call_id": call_id, "name": name, "arguments": {"cmd": command}},
        )
        result: dict[str, object] = {"call_id": call_id, "content": output, "name": name}
        if is_error:
            result["is_error"] = True
        self.append("tool.result", f"tool:{name}", result)
        self.after_append()

    def parallel_tools(self, count: int, output: Callable[[int], str]) -> None:
        """``count`` tool calls made together, then their results in the same order."""
        ids = []
        for index in range(count):
            self.calls += 1
            ids.append(f"call-{self.calls}")
            self.append(
                "tool.call",
                "assistant",
                {"call_id": ids[-1], "name": "grep", "arguments": {"pattern": f"p{index}"}},
            )
        for index, call_id in enumerate(ids):
            self.append("tool.result", "tool:grep", {"call_id": call_id, "content": output(index)})
        self.after_append()

    def decision(self, text: str) -> None:
        self.append("decision", "user", {"text": text})
        self.after_append()

    def pin(self, kind: PinKind, text: str) -> str | None:
        """Pin ``text``; returns the pin id (``None`` when the rules refuse it)."""
        event, self.pins = step(self.pins, PinRequest(kind, text, max(0, self.seq - 1)))
        self.append("context.pin", "user", event_to_body(event))
        self.after_append()
        outcome = event.outcome
        return getattr(outcome, "id", None)

    def unpin(self, pin_id: str, reason: str = "no longer needed") -> None:
        event, self.pins = step(self.pins, UnpinRequest(pin_id, reason))
        self.append("context.unpin", "user", event_to_body(event))
        self.after_append()

    def evidence(self, text: str) -> None:
        """A source.read then an evidence.upsert citing it (lifecycle state kept aside)."""
        ref = f"r{self.seq}"
        digest = hashlib.sha256(text.encode()).hexdigest()
        state = LifecycleState.empty()
        read, state = step(
            state, ReadRequest((SourceRef(ref, "notes.txt", f"line {self.seq}", digest),))
        )
        self.append("source.read", "assistant", event_to_body(read))
        upsert, state = step(state, UpsertRequest((Statement(text, (ref,)),)))
        self.append("evidence.upsert", "assistant", event_to_body(upsert))
        self.after_append()

    def model_call(self) -> None:
        self.append(
            "model.call",
            "registre",
            {
                "model": "test/model",
                "projection_sha256": "0" * 64,
                "at_seq": max(0, self.seq - 1),
                "budget_tokens": self.policy.budget_tokens,
                "policy": self.policy.to_json(),
                "token_counter": self.counter.name,
            },
        )


def honest_body(
    state: ContextState,
    *,
    folded: tuple[int, int] | None,
    lines: tuple[SummaryLine, ...] = (),
    stubbed: tuple[int, ...] = (),
    policy: Policy | None = None,
    counter: TokenCounter | None = None,
) -> dict[str, object]:
    """A compaction body for the next entry of ``state`` whose token counts and pin digest
    are the true ones, so that a test can break exactly one other rule."""
    policy = policy or Policy()
    counter = counter or default_counter()
    record = CompactionRecord(
        seq=state.at + 1,
        folded=folded,
        stubbed=stubbed,
        lines=lines,
        summarizer_name="test.manual",
        summarizer_version="1",
        policy=policy,
        token_counter=counter.name,
        tokens_before=context_tokens(state, counter),
        tokens_after=0,
        pin_set_sha256=state.pin_set_sha256(),
    )
    body = record_to_body(record)
    after = state.copy()
    after.apply(ContextEntry(state.at + 1, "context.compaction", "registre", body))
    body["tokens_after"] = context_tokens(after, counter)
    return body
