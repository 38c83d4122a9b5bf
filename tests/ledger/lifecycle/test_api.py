"""ledger.evidence: the thread's lifecycle API records one entry per call, decided at the head.

Every test runs on SQLite and PostgreSQL (``db_url``).
"""

from __future__ import annotations

import hashlib

import pytest

from registre.attest.entries import BodySchemaError
from registre.ledger.errors import UnknownThreadError
from registre.ledger.ledger import Ledger
from registre.ledger.lifecycle.api import (
    ConclusionRefusedError,
    EvidenceRefusedError,
    LifecycleRefusedError,
    PinRefusedError,
    ReadRefusedError,
    RevisionRefusedError,
    source_ref,
)
from registre.ledger.lifecycle.store import UndecidedOutcomeError
from registre.ledger.lifecycle.views import UnknownItemError, trace_to_json
from registre.ledger.store.lifecycle_fold import PinSourceRefusedError
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.lifecycle import (
    Accepted,
    FinalRequest,
    LifecycleFormatError,
    ReadRequest,
    Rejected,
    Statement,
    UpsertRequest,
    event_to_body,
    parse_body,
    replay,
    step,
)
from tests.ledger.helpers import dump, turn
from tests.ledger.lifecycle_helpers import derived_rows, folded_rows, investigation, ref

STALE_CC1 = (
    "Conclusion 'cc-1' is stale because evidence it relies on changed; revise it before a "
    "final answer cites it."
)


def test_each_call_records_one_entry_with_request_and_outcome(thread: Thread) -> None:
    results = investigation(thread)
    entries = list(thread.entries())
    assert [e.kind for e in entries] == [
        "turn",
        "source.read",
        "evidence.upsert",
        "conclusion.compute",
        "conclusion.final",
        "context.pin",
        "source.read",
        "evidence.revise",
        "conclusion.revise",
    ]
    assert [result.seq for result in results.values()] == list(range(1, 9))
    assert entries[3].body == {
        "request": {"text": "Revenue grew 10.5%.", "cites": ["ev-1", "ev-2"]},
        "outcome": {"accepted": True, "id": "cc-1"},
    }
    assert entries[7].body == {
        "request": {
            "id": "ev-2",
            "replacement": {
                "text": "Revenue in 2022 was EUR 3.9 million (restated).",
                "cites": ["r3"],
            },
        },
        "outcome": {"accepted": True, "id": "ev-2", "successor": "ev-4", "stale": ["cc-1", "cc-2"]},
    }
    assert entries[8].body["outcome"] == {
        "accepted": True,
        "id": "cc-1",
        "successor": "cc-3",
        "stale": ["cc-2"],
    }
    for entry in entries[1:]:
        assert entry.actor == "agent"
        assert event_to_body(parse_body(entry.kind, entry.body)) == entry.body
    assert results["revise"].successor == "ev-4"
    assert results["revise"].stale == ("cc-1", "cc-2")
    assert results["pin"].id == "pin-1"


def test_partly_accepted_batch(thread: Thread) -> None:
    thread.read_source([ref("r1"), ref("r2")])
    result = thread.evidence.upsert(
        [
            Statement("Revenue was EUR 4.2m.", ("r1",)),
            {"text": "   ", "cites": ["r1"]},
            {"text": "Costs fell.", "cites": ["r2"]},
            {"text": "Headcount rose.", "cites": ["r1", "r9"]},
        ],
        partial=True,
    )
    assert result.accepted == ("ev-1", "ev-2")
    assert [(index, r.reason) for index, r in result.rejected] == [
        (1, "empty_statement"),
        (3, "unregistered_reference"),
    ]
    assert not result.all_accepted
    assert result.rejected[1][1].message == (
        "Reference 'r9' is not registered; record a source.read of the passage before citing it."
    )
    assert [(e.id, e.text, e.cites, e.seq) for e in thread.evidence.list()] == [
        ("ev-1", "Revenue was EUR 4.2m.", ("r1",), 1),
        ("ev-2", "Costs fell.", ("r2",), 1),
    ]
    (transition,) = [
        row
        for seq, row in derived_rows(thread.database, "t1")["lifecycle_transition"].items()
        if seq == 1
    ]
    assert (transition["accepted"], transition["rejected"]) == (2, 2)
    assert transition["reasons"] == '["empty_statement","unregistered_reference"]'


def test_refused_final_is_recorded_and_raises(ledger: Ledger, thread: Thread) -> None:
    investigation(thread)
    before = derived_rows(ledger, "t1")
    with pytest.raises(ConclusionRefusedError) as refused:
        thread.conclude("final", "Revenue grew by about 10%.", ["cc-2", "ev-1"], actor="bob")
    assert str(refused.value) == (
        "Conclusion 'cc-2' is a final, which a final may not cite; a compute cites evidence "
        "only and a final cites evidence and computes."
    )
    assert (refused.value.reason, refused.value.seq, refused.value.kind) == (
        "not_citable",
        9,
        "conclusion.final",
    )
    recorded = thread.entry(9)
    assert (recorded.kind, recorded.actor) == ("conclusion.final", "bob")
    assert recorded.body["outcome"]["reason"] == "not_citable"
    after = derived_rows(ledger, "t1")
    transition = after["lifecycle_transition"].pop(9)
    assert (transition["accepted"], transition["rejected"]) == (0, 1)
    assert after == before  # nothing but the transition record changed
    assert derived_rows(ledger, "t1") == folded_rows(ledger, thread)
    verify_database(ledger)


def test_refused_revisions_and_pins_raise_with_the_sentence(thread: Thread) -> None:
    investigation(thread)
    with pytest.raises(RevisionRefusedError, match=r"^Evidence 'ev-2' is superseded and can"):
        thread.evidence.revise("ev-2")
    with pytest.raises(RevisionRefusedError, match=r"^Conclusion 'cc-9' does not exist"):
        thread.conclusions.revise("cc-9")
    with pytest.raises(RevisionRefusedError, match=r"^Reference 'r7' is not registered"):
        thread.evidence.revise("ev-1", {"text": "Revenue was 4.3m.", "cites": ["r7"]})
    with pytest.raises(PinRefusedError, match=r"^Pin 'pin-4' does not exist"):
        thread.unpin("pin-4", "no longer needed")
    with pytest.raises(ConclusionRefusedError) as stale:
        thread.conclude("final", "Revenue grew.", ["cc-2"])
    assert stale.value.reason == "not_citable"
    assert thread.head().size == 9 + 5  # each refusal recorded once
    assert thread.evidence.get("ev-1").status == "active"  # the refused replacement changed nothing


def test_malformed_requests_write_nothing(ledger: Ledger, thread: Thread) -> None:
    thread.read_source([ref("r1")])
    before = dump(ledger.engine), derived_rows(ledger, "t1")
    with pytest.raises(LifecycleFormatError, match="statements"):
        thread.evidence.upsert([])
    with pytest.raises(LifecycleFormatError, match=r"^statements\[0\]"):
        thread.evidence.upsert([{"text": "no cites"}])
    with pytest.raises(LifecycleFormatError, match=r"^kind"):
        thread.conclude("summary", "text", ["ev-1"])
    with pytest.raises(LifecycleFormatError, match="sha256"):
        thread.read_source([{"ref": "r2", "source": "s", "location": "l", "sha256": "ABC"}])
    with pytest.raises(LifecycleFormatError, match=r"request.id"):
        thread.evidence.revise("cc-1")
    with pytest.raises(LifecycleFormatError, match="kind"):
        thread.pin("fact", "text", 0)
    with pytest.raises(PinSourceRefusedError, match="already on the ledger"):
        thread.pin("decision", "Use IFRS 9.", 1)  # entry 1 is the pin itself
    with pytest.raises(UnknownThreadError):
        Thread(ledger, "t2", "x/t2").read_source([ref("r1")])
    assert (dump(ledger.engine), derived_rows(ledger, "t1")) == before


def test_source_ref_hashes_the_passage() -> None:
    made = source_ref("r1", "a.pdf", "p. 1", passage="Revenue was EUR 4.2m.")
    assert made.sha256 == hashlib.sha256(b"Revenue was EUR 4.2m.").hexdigest()
    assert source_ref("r1", "a.pdf", "p. 1", sha256=made.sha256) == made
    with pytest.raises(LifecycleFormatError):
        source_ref("r1", "a.pdf", "p. 1")


def test_raw_append_must_carry_the_decided_outcome(ledger: Ledger, thread: Thread) -> None:
    thread.read_source([ref("r1")])
    request = UpsertRequest((Statement("Revenue was EUR 4.2m.", ("r1",)),))
    event, _ = step(thread.lifecycle_state(), request)
    entry = thread.append("evidence.upsert", event_to_body(event), "importer")
    assert entry.seq == 1 and thread.evidence.get("ev-1").seq == 1
    assert derived_rows(ledger, "t1") == folded_rows(ledger, thread)

    # A final claiming acceptance although it cites retracted evidence: refused, nothing written.
    thread.evidence.revise("ev-1")
    forged = {
        "request": {"text": "Revenue grew.", "cites": ["ev-1"]},
        "outcome": {"accepted": True, "id": "cc-1"},
    }
    before = dump(ledger.engine), derived_rows(ledger, "t1")
    with pytest.raises(UndecidedOutcomeError, match=r"item 1 .conclusion.final. would be entry 4"):
        thread.append_many([turn("first"), ("conclusion.final", forged, "agent"), turn("third")])
    with pytest.raises(BodySchemaError, match=r"body.outcome"):
        thread.append("conclusion.final", {"request": forged["request"], "outcome": {}}, "a")
    assert (dump(ledger.engine), derived_rows(ledger, "t1")) == before
    # The same request with the rules' outcome goes through, after a turn in the same batch.
    state = thread.lifecycle_state()
    event, _ = step(state, FinalRequest("Revenue grew.", ("ev-1",)))
    assert isinstance(event.outcome, Rejected) and event.outcome.reason == "inactive_evidence"
    entries = thread.append_many([turn("first"), ("conclusion.final", event_to_body(event), "a")])
    assert [e.seq for e in entries] == [3, 4]
    assert derived_rows(ledger, "t1") == folded_rows(ledger, thread)


def test_raw_batch_of_dependent_lifecycle_items(ledger: Ledger, thread: Thread) -> None:
    state = thread.lifecycle_state()
    first, state = step(state, UpsertRequest((Statement("x", ("r1",)),)))  # r1 not yet read
    read, state = step(state, ReadRequest((ref("r1"),)))
    second, state = step(state, UpsertRequest((Statement("x", ("r1",)),)))
    assert isinstance(second.outcome.results[0], Accepted)  # type: ignore[union-attr]
    items = [(e.kind, event_to_body(e), "agent") for e in (first, read, second)]
    assert [e.seq for e in thread.append_many(items)] == [0, 1, 2]
    assert thread.evidence.get("ev-1").seq == 2
    assert derived_rows(ledger, "t1") == folded_rows(ledger, thread)


def test_raw_batch_validates_each_body_once(
    thread: Thread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checked raw append validates a lifecycle body to decide it, and the signer does not
    validate it again; a body nobody checked yet (the turn) is still validated when signed."""
    import registre.attest.entries.batch as entry_module
    import registre.ledger.lifecycle.store as store_module

    validated: list[str] = []
    real = entry_module.validate_body

    def counting(kind: str, body: object) -> None:
        validated.append(kind)
        real(kind, body)

    monkeypatch.setattr(entry_module, "validate_body", counting)
    monkeypatch.setattr(store_module, "validate_body", counting)
    read, _state = step(thread.lifecycle_state(), ReadRequest((ref("r1"),)))
    thread.append_many([turn("first"), (read.kind, event_to_body(read), "agent")])
    assert sorted(validated) == ["source.read", "turn"]


def test_views(thread: Thread) -> None:
    investigation(thread)
    assert [e.id for e in thread.evidence.list("active")] == ["ev-1", "ev-3", "ev-4"]
    assert [e.id for e in thread.evidence.list("superseded")] == ["ev-2"]
    history = thread.evidence.history("ev-4")
    assert [(e.id, e.status, e.seq, e.changed_seq) for e in history] == [
        ("ev-2", "superseded", 2, 7),
        ("ev-4", "active", 7, None),
    ]
    assert thread.evidence.history("ev-2") == history
    assert [(c.id, c.kind, c.status, c.stale) for c in thread.conclusions.list()] == [
        ("cc-1", "compute", "superseded", True),
        ("cc-2", "final", "active", True),
        ("cc-3", "compute", "active", False),
    ]
    assert [c.id for c in thread.conclusions.list(stale=True, status="active")] == ["cc-2"]
    assert thread.conclusions.get("cc-3").predecessor == "cc-1"
    assert [r.ref for r in thread.references()] == ["r1", "r2", "r3"]
    assert [(p.id, p.live, p.source_seq, p.seq) for p in thread.pins(live=True)] == [
        ("pin-1", True, 0, 5)
    ]
    tree = trace_to_json(thread.trace("cc-2"))
    (compute,) = tree["cites"]
    assert (tree["id"], tree["stale"], compute["id"]) == ("cc-2", True, "cc-1")
    assert [(e["id"], e["status"], e["successor"]) for e in compute["cites"]] == [
        ("ev-1", "active", None),
        ("ev-2", "superseded", "ev-4"),
    ]
    assert compute["cites"][1]["references"] == [
        {
            "ref": "r2",
            "source": "report.pdf",
            "location": "p. 7",
            "sha256": ref("r2", location="p. 7").sha256,
            "read_seq": 1,
        }
    ]
    with pytest.raises(UnknownItemError, match="no evidence 'ev-9'"):
        thread.evidence.get("ev-9")
    with pytest.raises(UnknownItemError, match="no conclusion 'cc-9'"):
        thread.trace("cc-9")


def test_views_of_an_unknown_thread(ledger: Ledger) -> None:
    ledger.create_thread("t1")
    ghost = Thread(ledger, "t2", "x/t2")
    with pytest.raises(UnknownThreadError):
        ghost.evidence.list()
    with pytest.raises(UnknownThreadError):
        ghost.lifecycle_state()


def test_two_handles_decide_against_the_head(db_url: str, ledger: Ledger, thread: Thread) -> None:
    signer = ledger.require_signer()
    thread.read_source([ref("r1")])
    thread.evidence.upsert([{"text": "Revenue was EUR 4.2m.", "cites": ["r1"]}])
    with Ledger.open(db_url, signer) as other:
        other.thread("t1").evidence.revise("ev-1")  # cold start on the other handle
        # This handle's cached state predates the retraction: it must catch up first.
        with pytest.raises(ConclusionRefusedError, match="'ev-1' is retracted"):
            thread.conclude("final", "Revenue grew.", ["ev-1"])
        thread.append(*turn("a turn between"))
        other.thread("t1").read_source([ref("r2")])
        assert thread.evidence.upsert([{"text": "y", "cites": ["r2"]}]).accepted == ("ev-2",)
    assert derived_rows(ledger, "t1") == folded_rows(ledger, thread)
    verify_database(ledger)


def test_failed_transaction_drops_the_cached_state(
    ledger: Ledger, thread: Thread, monkeypatch: pytest.MonkeyPatch
) -> None:
    import registre.ledger.lifecycle.store as store

    thread.read_source([ref("r1")])
    real = store.write_changes

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(store, "write_changes", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        thread.evidence.upsert([{"text": "x", "cites": ["r1"]}])
    monkeypatch.setattr(store, "write_changes", real)
    assert thread.head().size == 1
    assert thread.evidence.upsert([{"text": "x", "cites": ["r1"]}]).accepted == ("ev-1",)
    assert derived_rows(ledger, "t1") == folded_rows(ledger, thread)


def test_lifecycle_state_is_the_replay_of_the_entries(thread: Thread) -> None:
    investigation(thread)
    events = [parse_body(e.kind, e.body) for e in thread.entries() if e.kind != "turn"]
    state = thread.lifecycle_state()
    assert state == replay(events)
    step(state, UpsertRequest((Statement("z", ("r1",)),)))  # retires the copy only
    assert thread.evidence.upsert([{"text": "z", "cites": ["r1"]}]).accepted == ("ev-5",)


def test_evidence_refused_error_for_an_unregistered_reference(thread: Thread) -> None:
    """An unregistered reference is refused as conclude refuses unknown evidence: an error
    naming the item and its rule, the refusal recorded (its seq), the accepted items kept."""
    thread.read_source([ref("r1")])
    with pytest.raises(EvidenceRefusedError) as info:
        thread.evidence.upsert(
            [{"text": "Revenue was EUR 4.2m.", "cites": ["r1"]}, {"text": "x", "cites": ["r9"]}]
        )
    error = info.value
    assert isinstance(error, LifecycleRefusedError)
    assert str(error) == (
        "statements[1] rejected (unregistered_reference): Reference 'r9' is not registered; "
        "record a source.read of the passage before citing it (1 of 2 rejected; recorded as "
        "seq 1, ev-1 accepted)"
    )
    assert (error.seq, error.reason, error.kind) == (1, "unregistered_reference", "evidence.upsert")
    assert error.result.accepted == ("ev-1",) and error.hint is not None
    assert "partial=True" in error.hint
    assert thread.head().size == 2 and thread.entry(1).kind == "evidence.upsert"
    assert [e.id for e in thread.evidence.list()] == ["ev-1"]
    with pytest.raises(ConclusionRefusedError, match="Evidence 'ev-9' does not exist"):
        thread.conclude("final", "Revenue grew.", ["ev-9"])


def test_read_refused_error_for_a_conflicting_reference(thread: Thread) -> None:
    thread.read_source([ref("r1")])
    with pytest.raises(ReadRefusedError) as info:
        thread.read_source([ref("r2"), ref("r1", location="p. 99")])
    assert str(info.value).startswith("refs[1] rejected (reference_conflict): Reference 'r1'")
    assert str(info.value).endswith("(1 of 2 rejected; recorded as seq 1, r2 accepted)")
    assert [r.ref for r in thread.references()] == ["r1", "r2"]
    result = thread.read_source([ref("r1", location="p. 99")], partial=True)
    assert [(i, r.reason) for i, r in result.rejected] == [(0, "reference_conflict")]
