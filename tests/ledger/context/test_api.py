"""The working context on the ledger: project, compact, model calls, replay, expand; and the
tamper cases ``verify --db`` finds (step 10). Both engines."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import pytest

from registre.attest.notes import Signer, open_checkpoint
from registre.attest.projection_digest import ContextDigestMismatchError, projection_digest
from registre.attest.tree import verify_consistency, verify_inclusion
from registre.context import (
    CompactionPinSetError,
    CompactionPlan,
    CompactionQuoteError,
    EmptySummaryError,
    FoldItem,
    InventedQuoteError,
    ProjectionOverBudgetError,
    StalePlanError,
    Summary,
    SummaryLine,
    SummaryPointerOutsideRangeError,
    default_counter,
    project,
)
from registre.ledger.context.api import NotAModelCallError
from registre.ledger.context.store import (
    ContextEntryRefusedError,
    EmptyThreadError,
    MixedContextBatchError,
    rebuild_context,
)
from registre.ledger.ledger import Ledger
from registre.ledger.lifecycle.api import PinRefusedError
from registre.ledger.store.context_cache import fold_cache
from registre.ledger.store.context_snapshots import CONTEXT_SNAPSHOT, snapshot_json
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.ledger.verify.errors import (
    CompactionInvalidError,
    ContextSnapshotMismatchError,
    ModelCallDigestError,
)
from registre.lifecycle.pins import PIN_DIGEST_PREFIX
from tests.context.threads import honest_body
from tests.ledger.context_helpers import (
    MODEL,
    SMALL,
    agent_loop,
    forge,
    opened,
    replayed,
    snapshot_rows,
    step,
)
from tests.ledger.helpers import dump, execute

PIN_MESSAGE = "[pinned task_parameter pin-1] Do not modify tests."


def grown(thread: Thread, steps: int = 10) -> Thread:
    """An opened thread with ``steps`` loop steps and no compaction yet."""
    opened(thread)
    for number in range(steps):
        step(thread, number)
    return thread


# --- projection -----------------------------------------------------------------------------


def test_projection_is_the_fold_of_the_entries(thread: Thread) -> None:
    opened(thread)
    agent_loop(thread, 12)
    assert snapshot_rows(thread.database.engine, thread.id)  # compactions happened
    expected = project(replayed(thread), 600, SMALL, default_counter())
    assert thread.project(budget=600, policy=SMALL) == expected
    assert thread.project(budget=600, policy=SMALL).to_json() == expected.to_json()


def test_projection_at_an_earlier_seq_is_the_one_computed_then(thread: Thread) -> None:
    opened(thread)
    then: dict[int, Any] = {}
    for number in range(12):
        step(thread, number)
        thread.compact(policy=SMALL)
        projection = thread.project(budget=600, policy=SMALL)
        then[projection.at] = projection
    for at, projection in then.items():
        assert thread.project(at=at, budget=600, policy=SMALL) == projection


def test_projection_over_budget_is_refused_not_cut(thread: Thread) -> None:
    grown(thread, 12)
    with pytest.raises(ProjectionOverBudgetError) as refused:
        thread.project(budget=300)
    assert refused.value.over_by > 0


def test_live_pin_is_in_every_projection_until_unpinned(thread: Thread) -> None:
    opened(thread)
    for number in range(15):
        step(thread, number)
        projection, _call = thread.model_call(MODEL, 600, SMALL)
        assert PIN_MESSAGE in [m.content for m in projection.messages]
    thread.unpin("pin-1", "the tests may change now")
    agent_loop(thread, 6, start=15)
    assert PIN_MESSAGE not in [m.content for m in thread.project(budget=600).messages]


# --- compaction ------------------------------------------------------------------------------


def test_compaction_never_changes_an_earlier_entry(thread: Thread, signer: Signer) -> None:
    grown(thread, 10)
    before = thread.checkpoint()
    leaves = [entry.leaf for entry in thread.entries()]
    entry = thread.compact(policy=SMALL)
    task_pins = [pin.seq for pin in thread.pins() if pin.seq >= before.size]  # section 5.1
    assert entry is not None and entry.seq == before.size + len(task_pins)
    proof = thread.prove_consistency(before.size)
    signed = open_checkpoint(before.note, signer.verifier(), origin=thread.origin).checkpoint
    verify_consistency(before.size, proof.new_size, proof.hashes, signed.root, thread.head().root)
    assert [e.leaf for e in thread.entries(0, before.size)] == leaves


def test_nothing_to_compact_under_the_high_water_mark(thread: Thread) -> None:
    opened(thread)
    size = thread.head().size
    assert thread.compact(policy=SMALL) is None
    assert thread.head().size == size


class Raising:
    name = "test.raising"
    version = "1"

    def summarize(self, entries: Sequence[FoldItem], plan: CompactionPlan) -> Summary:
        raise RuntimeError("the model endpoint is down")


class Writing:
    """A summarizer returning fixed lines (which the controller may refuse)."""

    name = "test.fixed"
    version = "1"

    def __init__(self, lines: Sequence[tuple[str, str, tuple[tuple[int, int], ...]]]) -> None:
        self.lines = lines

    def summarize(self, entries: Sequence[FoldItem], plan: CompactionPlan) -> Summary:
        return Summary(tuple(SummaryLine(*line) for line in self.lines))


def test_summarizer_that_raises_leaves_the_ledger_untouched(ledger: Ledger, thread: Thread) -> None:
    grown(thread, 10)
    head, tables = thread.head(), dump(ledger.engine)
    with pytest.raises(RuntimeError, match="endpoint is down"):
        thread.compact(policy=SMALL, summarizer=Raising())
    assert thread.head() == head
    assert dump(ledger.engine) == tables
    assert snapshot_rows(ledger.engine, thread.id) == []


@pytest.mark.parametrize(
    ("lines", "refusal"),
    [
        ([("findings", "user said “delete the tests”", ((0, 0),))], InventedQuoteError),
        ([("findings", "everything", ((0, 9999),))], SummaryPointerOutsideRangeError),
        ([("findings", "   ", ((0, 0),))], EmptySummaryError),
    ],
)
def test_refused_summary_leaves_the_ledger_untouched(
    ledger: Ledger, thread: Thread, lines: Any, refusal: type[Exception]
) -> None:
    grown(thread, 10)
    head, tables = thread.head(), dump(ledger.engine)
    with pytest.raises(refusal):
        thread.compact(policy=SMALL, summarizer=Writing(lines))
    assert thread.head() == head
    assert dump(ledger.engine) == tables
    assert snapshot_rows(ledger.engine, thread.id) == []


def test_compaction_planned_while_the_thread_moves_is_planned_again(
    ledger: Ledger, thread: Thread
) -> None:
    grown(thread, 10)
    other = Ledger.open(str(ledger.engine.url), ledger.signer)

    class Interrupted:
        name = "test.interrupted"
        version = "1"
        calls = 0

        def summarize(self, entries: Sequence[FoldItem], plan: CompactionPlan) -> Summary:
            Interrupted.calls += 1
            if Interrupted.calls == 1:  # another writer appends while we summarize
                other.thread(thread.id).append("turn", {"role": "user", "text": "and?"}, "bob")
            first, last = plan.folded or (0, 0)
            return Summary((SummaryLine("findings", "earlier steps", ((first, last),)),))

    try:
        entry = thread.compact(policy=SMALL, summarizer=Interrupted())
    finally:
        other.close()
    assert Interrupted.calls == 2
    assert entry is not None and entry.seq == thread.head().size - 1
    verify_database(ledger, thread=thread.id)


def test_compaction_of_a_thread_that_never_stops_moving_is_refused(
    ledger: Ledger, thread: Thread
) -> None:
    grown(thread, 10)

    class Busy:
        name = "test.busy"
        version = "1"

        def summarize(self, entries: Sequence[FoldItem], plan: CompactionPlan) -> Summary:
            thread.append("turn", {"role": "user", "text": "still here"}, "bob")
            return Summary((SummaryLine("findings", "steps", (plan.folded or (0, 0),)),))

    size = thread.head().size
    with pytest.raises(StalePlanError):
        thread.compact(policy=SMALL, summarizer=Busy(), task_pin=False)
    assert [e.kind for e in thread.entries(size)] == ["turn"] * 3


# --- model calls ------------------------------------------------------------------------------


def test_model_call_records_the_digest_of_what_is_sent(thread: Thread) -> None:
    opened(thread)
    projections = {}
    for number in range(12):
        step(thread, number)
        projection, entry = thread.model_call(MODEL, 600, SMALL)
        assert entry.body["at_seq"] == entry.seq - 1 == projection.at
        assert entry.body["projection_sha256"] == projection_digest(projection)
        assert entry.body["model"] == MODEL and entry.body["token_counter"] == "registre.default/1"
        assert projection.tokens <= 600
        projections[entry.seq] = projection
    for seq, projection in projections.items():
        assert thread.replay_context(seq) == projection


def test_replay_of_an_entry_that_is_not_a_model_call_is_refused(thread: Thread) -> None:
    opened(thread)
    with pytest.raises(NotAModelCallError):
        thread.replay_context(0)


def test_model_call_on_an_empty_thread_is_refused(thread: Thread) -> None:
    with pytest.raises(EmptyThreadError):
        thread.model_call(MODEL, 600)
    assert thread.head().size == 0


def test_raw_model_call_must_reproduce(thread: Thread) -> None:
    grown(thread, 3)
    projection = thread.project(budget=5000)
    body = {
        "model": MODEL,
        "projection_sha256": projection_digest(projection),
        "at_seq": projection.at,
        "budget_tokens": 5000,
        "policy": projection.policy.to_json(),
        "token_counter": "registre.default/1",
    }
    size = thread.head().size
    with pytest.raises(ContextEntryRefusedError) as refused:
        thread.append("model.call", {**body, "projection_sha256": "0" * 64}, "registre")
    assert refused.value.seq == size and isinstance(
        refused.value.__cause__, ContextDigestMismatchError
    )
    assert thread.head().size == size
    assert thread.append("model.call", body, "registre").seq == size


def test_raw_compaction_must_keep_the_rules(ledger: Ledger, thread: Thread) -> None:
    grown(thread, 10)
    body = honest_body(
        thread.context_state(),
        folded=(0, 0),
        lines=(SummaryLine("findings", "user said “delete the tests”", ((0, 0),)),),
        policy=SMALL,
    )
    size = thread.head().size
    with pytest.raises(ContextEntryRefusedError) as refused:
        thread.append("context.compaction", body, "registre")
    assert isinstance(refused.value.__cause__, CompactionQuoteError)
    assert thread.head().size == size and snapshot_rows(ledger.engine, thread.id) == []


def test_batch_of_lifecycle_and_context_entries_is_refused(thread: Thread) -> None:
    grown(thread, 3)
    pin = {
        "request": {"kind": "decision", "text": "x", "seq": 0},
        "outcome": {"accepted": True, "id": "pin-2"},
    }
    with pytest.raises(MixedContextBatchError):
        thread.append_many(
            [("context.pin", pin, "a"), ("context.compaction", {"summary": []}, "registre")]
        )


# --- expansion --------------------------------------------------------------------------------


def test_expand_gives_the_entry_behind_a_summary_line(thread: Thread) -> None:
    opened(thread)
    agent_loop(thread, 12)
    projection = thread.project(budget=600, policy=SMALL)
    summarized = [run for run in projection.manifest.runs if run.status == "summarized"]
    assert summarized
    seq = summarized[0].first
    checkpoint = thread.checkpoint()
    agent_loop(thread, 2, start=12)
    entry, proof = thread.expand(seq)
    assert entry.seq == seq and proof.size == thread.head().size
    verify_inclusion(entry.leaf_hash, seq, proof.size, proof.hashes, thread.head().root)
    entry, proof = thread.expand(seq, checkpoint.size)
    assert proof.root == checkpoint.root


# --- the fold from snapshots -------------------------------------------------------------------


def test_refused_unpin_of_a_pin_folded_away(ledger: Ledger, thread: Thread) -> None:
    opened(thread)
    thread.pin("decision", "Use the spec finder.", 0)
    thread.unpin("pin-2", "done with it")
    agent_loop(thread, 14)
    rows = snapshot_rows(ledger.engine, thread.id)
    assert rows and all('"pin-2"' not in row[2] for row in rows[-3:])  # left out of the rows
    with pytest.raises(PinRefusedError) as refused:
        thread.unpin("pin-2", "again")
    assert refused.value.reason == "inactive_pin"
    step(thread, 99)
    assert thread.context_state().at == thread.head().size - 1
    assert thread.project(budget=600, policy=SMALL) == project(
        replayed(thread), 600, SMALL, default_counter()
    )
    verify_database(ledger, thread=thread.id)


def test_refused_unpin_folded_onto_a_state_restored_from_a_snapshot(
    ledger: Ledger, thread: Thread
) -> None:
    """A process that restores the fold from a snapshot (a new process, or the cache having
    dropped the thread) and then folds a refused unpin of a pin the snapshot left out: the
    unpin replays as ``inactive_pin``, as the full history gives, instead of failing the
    thread with a false ContextHistoryError at every later projection."""
    opened(thread)
    thread.pin("decision", "Use the spec finder.", 0)
    thread.unpin("pin-2", "done with it")
    agent_loop(thread, 14)
    rows = snapshot_rows(ledger.engine, thread.id)
    assert rows and '"pin-2"' not in rows[-1][2]  # the latest snapshot left the pin out
    fold_cache().clear()  # as a new process: the next fold starts from the stored snapshot
    restored = thread.context_state()
    with pytest.raises(PinRefusedError) as refused:
        thread.unpin("pin-2", "again")
    assert refused.value.reason == "inactive_pin"
    assert thread.project(budget=600, policy=SMALL) == project(
        replayed(thread), 600, SMALL, default_counter()
    )
    grown = restored.copy()  # a caller's own state folds the same entries the same way
    for entry in thread.context_entries(restored.at + 1):
        grown.apply(entry)
    assert project(grown, 600, SMALL, default_counter()) == project(
        replayed(thread), 600, SMALL, default_counter()
    )


def test_snapshot_rows_are_the_fold_after_each_compaction(ledger: Ledger, thread: Thread) -> None:
    opened(thread)
    agent_loop(thread, 14)
    rows = snapshot_rows(ledger.engine, thread.id)
    compactions = [e.seq for e in thread.entries() if e.kind == "context.compaction"]
    assert [row[0] for row in rows] == compactions and len(rows) >= 2
    for seq, boundary, _text in rows:
        state = replayed(thread, seq)
        assert boundary == state.boundary
    reports = rebuild_context(ledger, thread.id)
    assert reports[0].snapshots == len(rows)
    assert snapshot_rows(ledger.engine, thread.id) == rows


# --- verify --db, step 10 ------------------------------------------------------------------------


def genuine_call_body(thread: Thread) -> dict[str, Any]:
    projection = thread.project(budget=600, policy=SMALL)
    return {
        "model": MODEL,
        "projection_sha256": projection_digest(projection),
        "at_seq": projection.at,
        "budget_tokens": 600,
        "policy": SMALL.to_json(),
        "token_counter": "registre.default/1",
    }


def test_clean_context_verifies(ledger: Ledger, thread: Thread) -> None:
    opened(thread)
    calls = agent_loop(thread, 14)
    assert snapshot_rows(ledger.engine, thread.id)  # compactions happened
    (report,) = verify_database(ledger)
    head = thread.head()
    assert (report.thread, report.size, report.root) == (thread.id, head.size, head.root)
    assert report.size > calls[-1]  # every model call was inside what verified


def test_model_call_digest_forged_fail(ledger: Ledger, thread: Thread, signer: Signer) -> None:
    opened(thread)
    agent_loop(thread, 8)
    body = genuine_call_body(thread)
    body["projection_sha256"] = "0" * 64
    seq = forge(ledger.engine, signer, thread.id, "model.call", body)
    agent_loop(thread, 2, start=8)
    with pytest.raises(ModelCallDigestError) as failure:
        verify_database(ledger)
    assert failure.value.seq == seq
    assert isinstance(failure.value.__cause__, ContextDigestMismatchError)
    with pytest.raises(ContextDigestMismatchError):
        thread.replay_context(seq)


def test_model_call_of_its_own_future_fail(ledger: Ledger, thread: Thread, signer: Signer) -> None:
    grown(thread, 3)
    body = genuine_call_body(thread)
    body["at_seq"] = thread.head().size
    seq = forge(ledger.engine, signer, thread.id, "model.call", body)
    with pytest.raises(ModelCallDigestError) as failure:
        verify_database(ledger)
    assert failure.value.seq == seq


def test_model_call_of_an_earlier_prefix_verifies(ledger: Ledger, thread: Thread) -> None:
    opened(thread)
    agent_loop(thread, 10)
    body = {**genuine_call_body(thread), "at_seq": 5}
    body["projection_sha256"] = projection_digest(thread.project(at=5, budget=600, policy=SMALL))
    seq = thread.append("model.call", body, "registre").seq
    agent_loop(thread, 3, start=10)
    verify_database(ledger)
    assert thread.replay_context(seq).at == 5


def test_compaction_with_invented_quote_fail(
    ledger: Ledger, thread: Thread, signer: Signer
) -> None:
    grown(thread, 10)
    body = honest_body(
        thread.context_state(),
        folded=(0, 0),
        lines=(SummaryLine("findings", "user said “delete the tests”", ((0, 0),)),),
        policy=SMALL,
    )
    seq = forge(ledger.engine, signer, thread.id, "context.compaction", body)
    with pytest.raises(CompactionInvalidError) as failure:
        verify_database(ledger)
    assert failure.value.seq == seq and isinstance(failure.value.__cause__, CompactionQuoteError)


def test_compaction_dropping_a_pin_fail(ledger: Ledger, thread: Thread, signer: Signer) -> None:
    grown(thread, 10)
    body = honest_body(
        thread.context_state(),
        folded=(0, 0),
        lines=(SummaryLine("open_threads", "user: “Why does astroid”", ((0, 0),)),),
        policy=SMALL,
    )
    body["pin_set_sha256"] = hashlib.sha256(PIN_DIGEST_PREFIX).hexdigest()  # no pin carried
    seq = forge(ledger.engine, signer, thread.id, "context.compaction", body)
    with pytest.raises(CompactionInvalidError) as failure:
        verify_database(ledger)
    assert failure.value.seq == seq and isinstance(failure.value.__cause__, CompactionPinSetError)


def test_context_snapshot_edited_fail(ledger: Ledger, thread: Thread) -> None:
    opened(thread)
    agent_loop(thread, 14)
    first = snapshot_rows(ledger.engine, thread.id)[0][0]
    execute(
        ledger.engine,
        f"UPDATE context_snapshot SET snapshot = replace(snapshot, 'Do not modify', 'Do modify') "
        f"WHERE seq = {first}",
    )
    with pytest.raises(ContextSnapshotMismatchError) as failure:
        verify_database(ledger)
    assert failure.value.seq == first
    rebuild_context(ledger, thread.id)
    verify_database(ledger)


@pytest.mark.parametrize("change", ["delete", "insert"])
def test_context_snapshot_missing_or_extra_fail(
    ledger: Ledger, thread: Thread, change: str
) -> None:
    opened(thread)
    agent_loop(thread, 14)
    seq, boundary, text = snapshot_rows(ledger.engine, thread.id)[-1]
    if change == "delete":
        execute(ledger.engine, f"DELETE FROM context_snapshot WHERE seq = {seq}")
        expected = seq
    else:
        expected = seq + 1  # the model call after it
        with ledger.engine.connect() as conn:  # as an operator with a SQL shell would
            conn.execute(
                CONTEXT_SNAPSHOT.insert().values(
                    thread=thread.id, seq=expected, boundary=boundary, snapshot=text
                )
            )
            conn.commit()
    with pytest.raises(ContextSnapshotMismatchError) as failure:
        verify_database(ledger)
    assert failure.value.seq == expected
    rebuild_context(ledger)
    verify_database(ledger)


def test_snapshot_json_keeps_only_live_and_tail_pins(thread: Thread) -> None:
    opened(thread)
    for number in range(3):
        thread.pin("definition", f"term {number}", 0)
        thread.unpin(f"pin-{number + 2}", "no longer used")
    agent_loop(thread, 14)
    state = thread.context_state()
    kept = {row[0] for row in snapshot_json(state)["pins"]}
    assert "pin-1" in kept and not kept & {"pin-2", "pin-3", "pin-4"}
