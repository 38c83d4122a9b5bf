"""ledger.export and ledger.claim_chain on both engines: a real thread (lifecycle, pins,
compactions, model calls) exported in full or one claim at a time verifies offline; what a
claim bundle discloses is exactly the chain of specs/bundle.md section 7; a failed export
leaves no file."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from registre.attest.bundles import BundleWriteError, build_proofs, bundle_bytes, read_bundle
from registre.attest.entries import (
    EntrySignatureError,
    LifecycleAnchorMissingError,
    LifecycleOmittedError,
)
from registre.attest.errors import InclusionProofError, OutputFolderError, QuorumNotMetError
from registre.attest.notes import CosignatureSigner, Signer
from registre.attest.tree import MemoryHashSource, leaf_hash
from registre.attest.verify import (
    EntryOriginMismatchError,
    RollbackError,
    TrustPolicy,
    verify_bundle,
)
from registre.context import Policy
from registre.errors import RegistreError
from registre.ledger.core import append as append_module
from registre.ledger.errors import StoreCorruptError, UnknownThreadError
from registre.ledger.exchange import export as export_module
from registre.ledger.exchange.claim_chain import ClaimBeyondCheckpointError, claim_chain
from registre.ledger.exchange.export import (
    CheckpointRequiredError,
    ClaimNotProvableError,
    export_claim,
    export_thread,
)
from registre.ledger.ledger import Ledger
from registre.ledger.lifecycle.views import UnknownItemError
from registre.ledger.thread import Thread
from tests.bundles import members, rezip
from tests.examples_budget import examples
from tests.ledger.helpers import drop_triggers
from tests.ledger.lifecycle.test_properties import action, run
from tests.ledger.lifecycle_helpers import ref

WITNESS = CosignatureSigner.from_seed("witness.test/w1", bytes([1]) * 32)
POLICY = Policy(
    budget_tokens=300,
    high_water_permille=500,
    low_water_permille=100,
    keep_recent_turns=1,
    bulky_tool_output_tokens=2000,
    summary_share_permille=500,
)
"""A small budget, so that a few turns make a compaction due before each model call."""

# The story's entries, by seq (checked in test_story_is_as_documented):
STORY_KINDS = {
    0: "turn",  # "Reconcile the Q3 figures."
    1: "source.read",  # r1, r2
    2: "evidence.upsert",  # ev-1 (r1), ev-2 (r2)
    3: "conclusion.compute",  # cc-1 <- ev-1
    4: "context.pin",  # pin-1, text of entry 0
    11: "context.compaction",  # due before the first model call
    12: "model.call",
    13: "source.read",  # r3 -- unrelated to cc-3
    14: "evidence.upsert",  # ev-3 (r3) -- unrelated
    15: "conclusion.compute",  # cc-2 <- ev-3 -- unrelated
    16: "source.read",  # r4
    17: "evidence.revise",  # ev-2 superseded by ev-4 (r4)
    21: "context.compaction",
    22: "model.call",
    23: "conclusion.final",  # cc-3 <- cc-1, ev-4: the claim
    25: "context.compaction",  # after the claim: not disclosed
    26: "model.call",
}
STORY_SIZE = 27
STORY_LIFECYCLE = (1, 2, 3, 4, 13, 14, 15, 16, 17, 23)
CLAIM_CHAIN = (1, 2, 3, 4, 11, 12, 13, 14, 15, 16, 17, 21, 22, 23, 26)
"""What the claim bundle of cc-3 discloses: the whole lifecycle, the model calls and
compactions of its chain, and the anchor (26, the last entry of the tree)."""


def story(thread: Thread) -> None:
    """The thread of :data:`STORY_KINDS`, turns in between, and a checkpoint at the head."""
    thread.append("turn", {"role": "user", "text": "Reconcile the Q3 figures."}, "user")
    thread.read_source([ref("r1"), ref("r2", location="p. 2")])
    thread.evidence.upsert(
        [
            {"text": "Impairment is EUR 4.2m.", "cites": ["r1"]},
            {"text": "Stage 2 loans grew.", "cites": ["r2"]},
        ]
    )
    thread.conclude("compute", "Coverage is 12 per mille.", ["ev-1"])
    thread.pin("definition", "Reconcile the Q3 figures.", 0)
    think(thread, 6)
    thread.model_call("test/model", budget=POLICY.budget_tokens, policy=POLICY)
    thread.read_source([ref("r3", location="p. 3")])
    thread.evidence.upsert([{"text": "Headcount rose to 41.", "cites": ["r3"]}])
    thread.conclude("compute", "Headcount grew 5%.", ["ev-3"])
    thread.read_source([ref("r4", location="p. 4")])
    thread.evidence.revise("ev-2", {"text": "Stage 2 loans grew 3%.", "cites": ["r4"]})
    think(thread, 3)
    thread.model_call("test/model", budget=POLICY.budget_tokens, policy=POLICY)
    thread.conclude("final", "Q3 impairment reconciles.", ["cc-1", "ev-4"])
    think(thread, 1)
    thread.model_call("test/model", budget=POLICY.budget_tokens, policy=POLICY)
    thread.checkpoint()


def think(thread: Thread, turns: int) -> None:
    for i in range(turns):
        text_ = f"Step {i}: comparing the impairment schedule with the ledger extract."
        thread.append("turn", {"role": "assistant", "text": text_}, "agent")


def trust(signer: Signer, *witnesses: CosignatureSigner, quorum: int = 0) -> TrustPolicy:
    return TrustPolicy(signer.verifier(), tuple(w.verifier() for w in witnesses), quorum)


def disclosed(bundle: bytes | Path) -> list[int]:
    return [json.loads(leaf)["entry"]["seq"] for leaf in read_bundle(bundle).leaves]


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """An empty folder for bundles (the SQLite database lives beside it, in tmp_path)."""
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


@pytest.fixture
def told(thread: Thread) -> Thread:
    story(thread)
    return thread


# --- the story -------------------------------------------------------------------------


def test_story_is_as_documented(told: Thread) -> None:
    kinds = {entry.seq: entry.kind for entry in told.entries()}
    assert len(kinds) == STORY_SIZE
    assert {seq: kinds[seq] for seq in STORY_KINDS} == STORY_KINDS
    assert {kind for seq, kind in kinds.items() if seq not in STORY_KINDS} == {"turn"}


# --- full export -----------------------------------------------------------------------


def test_full_export_verifies(told: Thread, ledger: Ledger, signer: Signer, out: Path) -> None:
    path = out / "t1.zip"
    result = export_thread(ledger, "t1", path)
    assert (result.disclosure, result.tree_size, result.entries) == ("full", STORY_SIZE, STORY_SIZE)
    assert result.bytes == path.stat().st_size
    assert result.log_key == signer.vkey()
    bundle = read_bundle(path)
    assert bundle.leaves == [entry.leaf for entry in told.entries()]  # byte for byte
    assert bundle.manifest.informational == {"log_key": signer.vkey()}
    report = verify_bundle(path, trust(signer))
    assert report.verified and report.entries == STORY_SIZE
    assert report.kinds["context.compaction"] == 3 and report.kinds["model.call"] == 3
    assert report.kinds["context.pin"] == 1
    # step 6 replayed the working context: compactions and model-call digests, not skipped
    assert not any("context" in item for item in report.step(6).not_checked)


def test_full_export_reads_in_batches(
    told: Thread, ledger: Ledger, signer: Signer, out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each entry is read from the database once, ``batch`` rows at a time, and streamed into
    the zip: the export never holds more than a batch of leaves."""
    batches: list[int] = []
    read = export_module._leaves_at

    def counted(rows: Any, seqs: Any) -> list[bytes]:
        leaves = read(rows, seqs)
        batches.append(len(leaves))
        return leaves

    monkeypatch.setattr(export_module, "_leaves_at", counted)
    export_thread(ledger, "t1", out / "a.zip", batch=4)
    assert sum(batches) == STORY_SIZE and max(batches) == 4
    export_thread(ledger, "t1", out / "b.zip")
    assert (out / "a.zip").read_bytes() == (out / "b.zip").read_bytes()


def test_export_at_earlier_checkpoint(
    told: Thread, ledger: Ledger, signer: Signer, out: Path
) -> None:
    told.checkpoint(10)
    result = export_thread(ledger, "t1", out / "t1-10.zip", checkpoint=10)
    assert (result.tree_size, result.entries, result.checkpoints) == (10, 10, (10,))
    assert verify_bundle(out / "t1-10.zip", trust(signer)).verified
    # the default export carries every stored checkpoint up to the head
    result = export_thread(ledger, "t1", out / "t1.zip")
    assert result.checkpoints == (10, STORY_SIZE)
    report = verify_bundle(out / "t1.zip", trust(signer))
    assert report.checkpoints == 2 and "1 earlier checkpoint root recomputed" in (
        report.step(4).checked
    )


def test_export_with_witness_cosigned_checkpoint(
    told: Thread, ledger: Ledger, signer: Signer, out: Path
) -> None:
    note = told.checkpoint().note
    told.add_cosignatures(STORY_SIZE, [WITNESS.cosign(note[: note.index("\n\n") + 1], 1_800_000)])
    export_thread(ledger, "t1", out / "t1.zip")
    report = verify_bundle(out / "t1.zip", trust(signer, WITNESS, quorum=1))
    assert report.verified
    assert "witness.test/w1 (at 1970-01-21T20:00:00Z)" in report.step(2).checked[1]
    other = CosignatureSigner.from_seed("witness.test/w2", bytes([2]) * 32)
    with pytest.raises(QuorumNotMetError):
        verify_bundle(out / "t1.zip", trust(signer, WITNESS, other, quorum=2))


def test_checkpoints_over_the_member_limit_oldest_left_out(
    told: Thread, ledger: Ledger, signer: Signer, out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for size in (5, 10, 20):
        told.checkpoint(size)
    monkeypatch.setattr(export_module, "MAX_BUNDLE_CHECKPOINTS", 2)
    result = export_thread(ledger, "t1", out / "t1.zip")
    assert (result.checkpoints, result.omitted_checkpoints) == ((20, STORY_SIZE), 2)
    assert "(+1 earlier, 2 older left out)" in result.describe()
    assert verify_bundle(out / "t1.zip", trust(signer)).verified


def test_empty_thread_exports(thread: Thread, ledger: Ledger, signer: Signer, out: Path) -> None:
    thread.checkpoint()
    assert export_thread(ledger, "t1", out / "t1.zip").entries == 0
    assert verify_bundle(out / "t1.zip", trust(signer)).verified


# --- which checkpoint ------------------------------------------------------------------


def test_export_without_checkpoint_refused(thread: Thread, ledger: Ledger, out: Path) -> None:
    think(thread, 2)
    with pytest.raises(CheckpointRequiredError) as raised:
        export_thread(ledger, "t1", out / "t1.zip")
    assert str(raised.value) == "thread t1 has no signed checkpoint to export against"
    assert raised.value.hint is not None
    assert "run `registre checkpoint t1`" in raised.value.hint
    assert list(out.iterdir()) == []


def test_checkpoint_behind_head_refused(told: Thread, ledger: Ledger, out: Path) -> None:
    think(told, 1)
    with pytest.raises(CheckpointRequiredError) as raised:
        export_claim(ledger, "t1", "cc-3", out / "t1.zip")
    assert str(raised.value) == (
        f"thread t1 has {STORY_SIZE + 1} entries but its latest signed checkpoint covers "
        f"{STORY_SIZE}"
    )
    assert raised.value.hint == (
        f"run `registre checkpoint t1` to sign the head, or pass --checkpoint {STORY_SIZE} "
        f"to export the first {STORY_SIZE}"
    )
    assert export_thread(ledger, "t1", out / "t1.zip", checkpoint=STORY_SIZE).entries == (
        STORY_SIZE
    )


def test_unsigned_size_refused(told: Thread, ledger: Ledger, out: Path) -> None:
    with pytest.raises(CheckpointRequiredError, match="no signed checkpoint of size 5"):
        export_thread(ledger, "t1", out / "t1.zip", checkpoint=5)
    assert list(out.iterdir()) == []


def test_unknown_thread_refused(ledger: Ledger, out: Path) -> None:
    with pytest.raises(UnknownThreadError):
        export_thread(ledger, "t9", out / "t9.zip")
    with pytest.raises(UnknownThreadError):
        export_claim(ledger, "t9", "cc-1", out / "t9.zip")
    assert list(out.iterdir()) == []


# --- the file appears whole or not at all ----------------------------------------------


def test_existing_file_kept_unless_overwrite(told: Thread, ledger: Ledger, out: Path) -> None:
    path = out / "t1.zip"
    path.write_bytes(b"someone else's file")
    with pytest.raises(BundleWriteError, match="exists"):
        export_thread(ledger, "t1", path)
    assert path.read_bytes() == b"someone else's file"
    assert sorted(p.name for p in out.iterdir()) == ["t1.zip"]  # no temporary left
    export_thread(ledger, "t1", path, overwrite=True)
    assert read_bundle(path).manifest.entry_count == STORY_SIZE


def test_edited_store_writes_nothing_fail(told: Thread, ledger: Ledger, out: Path) -> None:
    """An entry edited in the database (triggers dropped): the export recomputes the tree,
    refuses, and leaves neither the bundle nor a temporary file."""
    drop_triggers(ledger.engine)
    with ledger.engine.connect() as conn:
        leaf = conn.execute(text("SELECT leaf FROM entry WHERE seq = 20")).scalar_one()
        forged = bytes(leaf).replace(b"Step", b"Stop")
        conn.execute(text("UPDATE entry SET leaf = :l WHERE seq = 20"), {"l": forged})
        conn.commit()
    with pytest.raises(StoreCorruptError, match="do not hash to the root"):
        export_thread(ledger, "t1", out / "t1.zip")
    assert list(out.iterdir()) == []


def test_missing_folder_writes_nothing(told: Thread, ledger: Ledger, out: Path) -> None:
    """OutputFolderError names the bundle and its folder, never a temporary file."""
    target = out / "absent" / "t1.zip"
    with pytest.raises(OutputFolderError) as info:
        export_thread(ledger, "t1", target)
    assert str(info.value) == f"cannot write {target}: its folder {target.parent} does not exist"
    assert info.value.exit_code == 2 and info.value.hint is not None
    assert list(out.iterdir()) == []


# --- claim bundles ---------------------------------------------------------------------


def test_claim_chain_is_the_rule(told: Thread, ledger: Ledger) -> None:
    chain = claim_chain(ledger, "t1", "cc-3", STORY_SIZE)
    assert chain.conclusions == (3, 23)  # cc-1 (cited), cc-3
    assert chain.evidence == (2, 17)  # ev-1, ev-2 and its supersession by ev-4
    assert chain.source_reads == (1, 16)  # r1, r2; r4
    assert chain.model_calls == (12, 22)  # after ev-1's admission, before the final
    assert chain.compactions == (11, 21)  # live in those calls' contexts
    assert chain.lifecycle == STORY_LIFECYCLE and chain.anchor == (STORY_SIZE - 1,)
    assert chain.seqs == CLAIM_CHAIN
    assert chain.conclusion_ids == ("cc-1", "cc-3")
    assert chain.evidence_ids == ("ev-1", "ev-2", "ev-4")


def test_claim_bundle_verifies_without_the_rest(
    told: Thread, ledger: Ledger, signer: Signer, out: Path
) -> None:
    path = out / "cc-3.zip"
    result = export_claim(ledger, "t1", "cc-3", path)
    assert (result.disclosure, result.tree_size, result.entries) == (
        "partial",
        STORY_SIZE,
        len(CLAIM_CHAIN),
    )
    assert disclosed(path) == list(CLAIM_CHAIN)  # no turn, no unrelated call or compaction
    assert read_bundle(path).manifest.informational == {"log_key": signer.vkey(), "claim": "cc-3"}
    report = verify_bundle(path, trust(signer))
    assert report.verified and report.disclosure == "partial"
    assert report.step(4).not_checked == [f"{STORY_SIZE - len(CLAIM_CHAIN)} undisclosed entries"
                                          " (only their hashes are used)"]  # fmt: skip
    # the whole lifecycle is in the bundle, so it is replayed (step 6.1) ...
    assert "10 lifecycle events replayed from the empty state" in report.step(6).checked
    # ... and step 7 resolves cc-3 -> cc-1 -> ev-1 -> r1 and cc-3 -> ev-4 -> r4 (and cc-2)
    assert report.step(7).checked == [
        "3 conclusions (1 final) resolve to 3 source passages registered by 3 source.read "
        "entries in the bundle",
        "every cited id is active and fresh at size 27",
    ]
    assert report.verdict().startswith("VERIFIED, PARTIAL (")
    assert "not checked: witnesses, undisclosed entries" in report.verdict()


def test_claim_of_compute_only(told: Thread, ledger: Ledger, signer: Signer, out: Path) -> None:
    result = export_claim(ledger, "t1", "cc-2", out / "cc-2.zip")
    assert result.chain is not None
    # ev-3 admitted at 14, cc-2 at 15: no model call between; the last one before it is 12
    assert disclosed(out / "cc-2.zip") == sorted({*STORY_LIFECYCLE, 11, 12, STORY_SIZE - 1})
    assert verify_bundle(out / "cc-2.zip", trust(signer)).verified


def test_claim_revised_discloses_its_versions(
    told: Thread, ledger: Ledger, signer: Signer, out: Path
) -> None:
    """A claim that was later revised: the bundle shows the revision and the new version's
    chain, so a superseded claim cannot be passed off as current."""
    told.conclusions.revise("cc-1", {"text": "Coverage is 11 per mille.", "cites": ["ev-4"]})
    told.checkpoint()
    export_claim(ledger, "t1", "cc-1", out / "cc-1.zip")
    seqs = disclosed(out / "cc-1.zip")
    assert STORY_SIZE in seqs and 3 in seqs  # the revision (cc-4) and the original
    assert verify_bundle(out / "cc-1.zip", trust(signer)).verified


def test_claim_at_earlier_checkpoint(
    told: Thread, ledger: Ledger, signer: Signer, out: Path
) -> None:
    told.checkpoint(16)
    with pytest.raises(ClaimBeyondCheckpointError, match="after the checkpoint of size 16"):
        export_claim(ledger, "t1", "cc-3", out / "cc-3.zip", checkpoint=16)
    result = export_claim(ledger, "t1", "cc-1", out / "cc-1.zip", checkpoint=16)
    assert result.tree_size == 16 and result.checkpoints == (16,)
    assert verify_bundle(out / "cc-1.zip", trust(signer)).verified
    # the head export carries the earlier checkpoint and proves it consistent
    export_claim(ledger, "t1", "cc-3", out / "cc-3.zip")
    report = verify_bundle(out / "cc-3.zip", trust(signer))
    assert "1 earlier checkpoint proved consistent with the head" in report.step(4).checked


def test_unknown_conclusion_refused(told: Thread, ledger: Ledger, out: Path) -> None:
    with pytest.raises(UnknownItemError, match="no conclusion 'cc-9'"):
        export_claim(ledger, "t1", "cc-9", out / "cc-9.zip")
    assert list(out.iterdir()) == []


# --- a tampered claim bundle fails -----------------------------------------------------


@pytest.fixture
def claim(told: Thread, ledger: Ledger, out: Path) -> bytes:
    export_claim(ledger, "t1", "cc-3", out / "cc-3.zip")
    return (out / "cc-3.zip").read_bytes()


def _lines(bundle: bytes) -> list[bytes]:
    return members(bundle)["entries.jsonl"].splitlines()


def _proofs(bundle: bytes) -> dict[str, list[dict[str, object]]]:
    value: dict[str, list[dict[str, object]]] = json.loads(members(bundle)["proofs.json"])
    return value


@pytest.mark.parametrize("line", range(len(CLAIM_CHAIN)))
def test_disclosed_entry_edited_fail(claim: bytes, signer: Signer, line: int) -> None:
    """Any disclosed entry with its text changed, the manifest fixed to match."""
    lines = _lines(claim)
    lines[line] = lines[line].replace(b'"actor":"', b'"actor":"x', 1)
    forged = rezip(claim, {"entries.jsonl": b"\n".join(lines) + b"\n"})
    with pytest.raises(EntrySignatureError):
        verify_bundle(forged, trust(signer))


@pytest.mark.parametrize("line", range(len(CLAIM_CHAIN)))
def test_inclusion_proof_edited_fail(claim: bytes, signer: Signer, line: int) -> None:
    """A hash of any disclosed entry's inclusion proof replaced."""
    proofs = _proofs(claim)
    hashes = proofs["inclusion"][line]["hashes"]
    assert isinstance(hashes, list)
    hashes[0] = "A" * 43 + "="
    forged = rezip(claim, {"proofs.json": json.dumps(proofs).encode()})
    with pytest.raises(InclusionProofError):
        verify_bundle(forged, trust(signer))


def test_consistency_proof_edited_fail(claim: bytes, signer: Signer) -> None:
    """The proof of a disclosed entry's prev root replaced: the entry no longer binds to the
    head's history."""
    proofs = _proofs(claim)
    hashes = proofs["consistency"][0]["hashes"]
    assert isinstance(hashes, list)
    hashes[-1] = "A" * 43 + "="
    forged = rezip(claim, {"proofs.json": json.dumps(proofs).encode()})
    with pytest.raises(RegistreError) as raised:
        verify_bundle(forged, trust(signer))
    assert raised.value.exit_code == 1


def test_source_read_withheld_fail(claim: bytes, signer: Signer) -> None:
    """The source read behind ev-4 (seq 16) dropped with its proof: every remaining entry and
    proof is genuine, but the claim no longer resolves to its passages."""
    index = CLAIM_CHAIN.index(16)
    lines = _lines(claim)
    del lines[index]
    proofs = _proofs(claim)
    del proofs["inclusion"][index]
    forged = rezip(
        claim,
        {"entries.jsonl": b"\n".join(lines) + b"\n", "proofs.json": json.dumps(proofs).encode()},
    )
    with pytest.raises(LifecycleOmittedError, match=r"entry seq 17 .* 1 lifecycle entr"):
        verify_bundle(forged, trust(signer))


def test_entry_from_other_thread_fail(
    claim: bytes, ledger: Ledger, signer: Signer, out: Path
) -> None:
    """THREATS row 8, mix and match: thread t2 tells the same story; its genuine source read
    and inclusion proof replace t1's in t1's claim bundle."""
    story(ledger.create_thread("t2"))
    export_claim(ledger, "t2", "cc-3", out / "t2.zip")
    other = (out / "t2.zip").read_bytes()
    lines, proofs = _lines(claim), _proofs(claim)
    lines[0], proofs["inclusion"][0] = _lines(other)[0], _proofs(other)["inclusion"][0]
    forged = rezip(
        claim,
        {"entries.jsonl": b"\n".join(lines) + b"\n", "proofs.json": json.dumps(proofs).encode()},
    )
    with pytest.raises(EntryOriginMismatchError):
        verify_bundle(forged, trust(signer))


def test_older_claim_bundle_replayed_fail(
    told: Thread, ledger: Ledger, signer: Signer, out: Path
) -> None:
    """THREATS rows 6-7: a regulator holding the head (state file) is shown an older, genuinely
    signed claim bundle; the other way round the newer bundle proves it extends the older."""
    told.checkpoint(16)
    export_claim(ledger, "t1", "cc-1", out / "old.zip", checkpoint=16)
    export_claim(ledger, "t1", "cc-3", out / "new.zip")
    state = out / "state.json"
    assert verify_bundle(out / "old.zip", trust(signer), state_file=state).verified
    assert verify_bundle(out / "new.zip", trust(signer), state_file=state).verified
    with pytest.raises(RollbackError):
        verify_bundle(out / "old.zip", trust(signer), state_file=state)


# --- every claim of a random thread ----------------------------------------------------

_THREADS = itertools.count()


# Each example is up to ~20 committed transactions, then one export and one verification per
# conclusion: 40 examples in make test, the profile's count under deep.
@settings(
    max_examples=examples(40),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), steps=st.integers(1, 18))
def test_every_claim_of_a_random_thread_verifies(
    ledger: Ledger, signer: Signer, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject,
    steps: int,
) -> None:  # fmt: skip
    """Whatever the lifecycle history (refusals, supersessions, retractions, stale and
    repaired conclusions), each conclusion's claim bundle verifies, holds only entries of the
    checkpoint's tree, and holds the entry that recorded the conclusion."""
    thread = ledger.create_thread(f"p{next(_THREADS)}")
    thread.read_source([ref(r) for r in ("r1", "r2", "r3")])
    thread.evidence.upsert([{"text": "Revenue grew.", "cites": ["r1", "r2"]}])
    thread.conclude("compute", "Revenue grew 10%.", ["ev-1"])  # at least one claim
    for _ in range(steps):
        run(ledger, thread, data.draw(action(thread.lifecycle_state())))
    size = thread.checkpoint().size
    folder = tmp_path_factory.mktemp("claims")
    for conclusion in thread.conclusions.list():
        path = folder / f"{thread.id}-{conclusion.id}.zip"
        result = export_claim(ledger, thread.id, conclusion.id, path)
        seqs = disclosed(path)
        assert conclusion.seq in seqs and all(seq < size for seq in seqs)
        assert result.chain is not None and tuple(seqs) == result.chain.seqs
        assert verify_bundle(path, trust(signer)).verified


# --- issue 13 item 1: a claim bundle cannot hide what happened to its claim later --------


def _rebuilt_claim(full: bytes, seqs: list[int]) -> bytes:
    """A claim bundle anyone can make from a full bundle: the chosen genuine leaves, the head
    checkpoint, and proofs recomputed from the leaves (no key needed)."""
    bundle = read_bundle(full)
    source = MemoryHashSource()
    for leaf in bundle.leaves:
        source.append(leaf_hash(leaf))
    size = bundle.manifest.tree_size
    return bundle_bytes(
        origin=bundle.origin,
        leaves=[bundle.leaves[seq] for seq in seqs],
        checkpoints=[bundle.checkpoints[size]],
        seqs=seqs,
        proofs=build_proofs(source, tree_size=size, seqs=seqs),
    )


def test_claim_bundle_hiding_later_retraction_fail(
    told: Thread, ledger: Ledger, signer: Signer, out: Path
) -> None:
    """ev-4, which the final cc-3 rests on, is retracted after the claim (seq 27): the honest
    claim bundle says the final is STALE at its checkpoint; one rebuilt from the full bundle
    without the retraction is refused, since the lifecycle head signed at seq 28 covers it."""
    told.evidence.revise("ev-4", None)  # 27: cc-3 is now stale
    told.append("turn", {"role": "user", "text": "And now?"}, "user")  # 28
    told.checkpoint()
    export_claim(ledger, "t1", "cc-3", out / "cc-3.zip")
    assert STORY_SIZE in disclosed(out / "cc-3.zip")  # the retraction travels with the claim
    report = verify_bundle(out / "cc-3.zip", trust(signer))
    assert report.verified and report.step(7).status == "stale"
    assert "final cc-3 stale" in report.stale_finals
    assert "ev-4 retracted" in report.inactive
    assert "STALE (at the checkpoint: final cc-3 stale)" in report.verdict()
    assert "7 claims       stale" in report.render()
    # the attack: the same chain, genuine leaves and valid proofs, minus the retraction
    export_thread(ledger, "t1", out / "full.zip")
    hidden = [seq for seq in disclosed(out / "cc-3.zip") if seq != STORY_SIZE]
    forged = _rebuilt_claim((out / "full.zip").read_bytes(), hidden)
    with pytest.raises(LifecycleOmittedError, match=r"entry seq 28 .* 1 lifecycle entr"):
        verify_bundle(forged, trust(signer))


def test_claim_bundle_stopping_before_the_anchor_fail(
    told: Thread, ledger: Ledger, signer: Signer, out: Path
) -> None:
    """The same chain without the tree's last entry: nothing proves the lifecycle complete."""
    export_thread(ledger, "t1", out / "full.zip")
    forged = _rebuilt_claim((out / "full.zip").read_bytes(), list(CLAIM_CHAIN[:-1]))
    with pytest.raises(LifecycleAnchorMissingError, match="seq 26"):
        verify_bundle(forged, trust(signer))


def test_legacy_thread_migrates_at_next_append(
    ledger: Ledger, signer: Signer, out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread written before entries carried a lifecycle head: its claim bundle is refused
    at export (it could not be proved complete); the next append commits to the lifecycle
    recomputed from the stored entries, and the claim then exports and verifies."""
    real = append_module.sign_entries

    def legacy(*args: Any, **kwargs: Any) -> Any:
        kwargs["lifecycle"] = None
        return real(*args, **kwargs)

    monkeypatch.setattr(append_module, "sign_entries", legacy)
    old = ledger.create_thread("t9")
    story(old)
    monkeypatch.undo()
    with pytest.raises(ClaimNotProvableError, match="entry 26"):
        export_claim(ledger, "t9", "cc-3", out / "old.zip")
    export_thread(ledger, "t9", out / "old-full.zip")
    assert verify_bundle(out / "old-full.zip", trust(signer)).verified
    old.append("turn", {"role": "user", "text": "after the upgrade"}, "user")
    old.checkpoint()
    export_claim(ledger, "t9", "cc-3", out / "new.zip")
    report = verify_bundle(out / "new.zip", trust(signer))
    assert report.verified
    assert "all 10 lifecycle entries of the tree disclosed" in " ".join(report.step(4).checked)
    export_thread(ledger, "t9", out / "new-full.zip")
    full = verify_bundle(out / "new-full.zip", trust(signer))
    assert "every lifecycle head recomputed (10 lifecycle entries)" in full.step(3).checked
