"""Split views, rollbacks and replays (THREATS rows 4, 6, 7): the verifier's state file and
the witness quorum. A failed verification must leave the state file untouched."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from registre.attest.bundles import checkpoint_member
from registre.attest.errors import CosignatureError, OriginMismatchError, QuorumNotMetError
from registre.attest.notes import (
    Checkpoint,
    CosignatureSigner,
    NoteSignature,
    cosign_checkpoint,
    parse_note,
    sign_checkpoint,
)
from registre.attest.tree import root_at
from registre.attest.verify import (
    CheckpointTooOldError,
    ForkError,
    FreshnessUnprovenError,
    MissingProofError,
    ModelCall,
    RollbackError,
    SemanticHooks,
    report_of,
    utc,
)
from tests.bundles import ATTACKER, COSIGN_TIME, LOG, WITNESSES, Thread, build_thread, policy, rezip
from tests.tamper.helpers import fails, passes


def turns(n: int) -> Thread:
    return build_thread(n, story=False)


def forked(n: int, at: int) -> Thread:
    """A thread equal to ``turns(n)`` for its first ``at`` entries, then different."""
    fork = turns(at)
    while fork.size < n:
        fork.turn(f"forked {fork.size}")
    return fork


def trusting(tmp_path: Path, bundle: bytes) -> Path:
    """A state file that has accepted ``bundle``."""
    state = tmp_path / "state.json"
    passes(bundle, state_file=state)
    return state


def test_older_checkpoint_replayed_fail(tmp_path: Path) -> None:
    """A genuine, older bundle shown to a verifier that already trusts a larger head."""
    state = trusting(tmp_path, turns(20).full_bundle())
    before = state.read_bytes()
    old = turns(10).full_bundle()
    passes(old)  # genuine on its own
    fails(old, RollbackError, step=5, state_file=state)
    assert state.read_bytes() == before


def test_checkpoint_one_entry_behind_replayed_fail(tmp_path: Path) -> None:
    """A rollback by a single entry is a rollback (step 5.1 compares n < m, not n < m - 1)."""
    state = trusting(tmp_path, turns(20).full_bundle())
    before = state.read_bytes()
    behind = turns(19).full_bundle()
    passes(behind)
    error = fails(behind, RollbackError, step=5, state_file=state)
    assert "has size 19, but this verifier already trusts size 20" in str(error)
    assert state.read_bytes() == before


def test_forked_checkpoint_fail(tmp_path: Path) -> None:
    """Same size, another root: a second history signed by the same log (split view)."""
    state = trusting(tmp_path, turns(12).full_bundle())
    before = state.read_bytes()
    fork = forked(12, at=8).full_bundle()
    passes(fork)
    fails(fork, ForkError, step=5, state_file=state)
    assert state.read_bytes() == before


def test_fork_behind_larger_head_fail(tmp_path: Path) -> None:
    """A larger head whose first entries are not the ones the verifier trusts."""
    state = trusting(tmp_path, turns(10).full_bundle())
    fails(forked(16, at=6).full_bundle(), ForkError, step=5, state_file=state)
    passes(turns(16).full_bundle(), state_file=state)  # the honest continuation is accepted


def test_fork_with_failing_consistency_proof_fail(tmp_path: Path) -> None:
    """A partial bundle of a fork carrying a consistency proof from the trusted size."""
    state = trusting(tmp_path, turns(10).full_bundle())
    fork = forked(16, at=6).partial_bundle([12], consistency_from=[10])
    fails(fork, ForkError, step=5, state_file=state)
    passes(turns(16).partial_bundle([12], consistency_from=[10]), state_file=state)


def test_partial_bundle_without_proof_from_trusted_size_fail(tmp_path: Path) -> None:
    """A partial bundle that cannot show it extends the head the verifier holds."""
    state = trusting(tmp_path, turns(10).full_bundle())
    fails(turns(16).partial_bundle([12]), MissingProofError, step=5, state_file=state)


def test_state_records_new_head_only_after_success(tmp_path: Path) -> None:
    """The state file moves to the new head once verification passed, and not before."""
    state = trusting(tmp_path, turns(10).full_bundle())
    text = state.read_text()
    assert '"size":10' in text
    passes(turns(14).full_bundle(), state_file=state)
    assert '"size":14' in state.read_text()


def test_cosignatures_only_from_unknown_witnesses_fail() -> None:
    """The head is cosigned, but by witnesses the verifier did not pin."""
    strangers = [
        CosignatureSigner.from_seed(f"stranger-{n}.test", bytes([90 + n]) * 32) for n in range(2)
    ]
    thread = turns(8)
    passes(thread.full_bundle(witnesses=WITNESSES[:2]), policy(witnesses=2, quorum=2))
    fails(
        thread.full_bundle(witnesses=strangers),
        QuorumNotMetError,
        policy(witnesses=2, quorum=1),
        step=2,
    )


def test_quorum_short_by_one_fail() -> None:
    """One pinned witness cosigned where two are required."""
    bundle = turns(8).full_bundle(witnesses=WITNESSES[:1])
    passes(bundle, policy(witnesses=2, quorum=1))
    fails(bundle, QuorumNotMetError, policy(witnesses=2, quorum=2), step=2)


def test_forged_cosignature_fail() -> None:
    """A pinned witness's cosignature line copied from another checkpoint."""
    thread = turns(8)
    other = turns(7).checkpoint(witnesses=WITNESSES[:1])
    _, lines = parse_note(other)
    witness_line = next(line for line in lines if line.name == WITNESSES[0].name)
    note = (
        thread.checkpoint()
        + NoteSignature(witness_line.name, witness_line.key_id, witness_line.signature).line()
    )
    forged = rezip(thread.full_bundle(), {checkpoint_member(8): note.encode()})
    fails(forged, CosignatureError, policy(witnesses=1, quorum=1), step=2)


def test_checkpoint_of_another_log_fail() -> None:
    """A checkpoint signed by the pinned key for an origin outside its log."""
    thread = turns(8)
    alien = Checkpoint("other.example/thread-1", 8, root_at(thread.tree, 8))
    forged = rezip(
        thread.full_bundle(),
        {checkpoint_member(8): sign_checkpoint(alien, LOG).encode()},
        manifest_changes={"origin": "other.example/thread-1"},
    )
    fails(forged, OriginMismatchError, step=2)


# --- issue 13 item 5: the state file under concurrent verifications ---------------------


def _meanwhile(action: Callable[[], None]) -> SemanticHooks:
    """Hooks that run ``action`` once, during step 6 -- after step 5 read the state file and
    before the verification records its head: another verifier sharing the file."""
    done: list[bool] = []

    def model_call(_call: ModelCall) -> None:
        if not done:
            done.append(True)
            action()

    return SemanticHooks(model_call=model_call)


def test_state_lost_update_then_rollback_fail(tmp_path: Path) -> None:
    """Verifier A (head 16) reads the state at 10; B records 20 meanwhile. A used to write 16
    over B's 20, after which a rollback to 18 verified. Now A re-checks under the lock and is
    refused, the state keeps 20, and the rollback is refused."""
    state = trusting(tmp_path, build_thread(10).full_bundle())
    a = build_thread(16)
    b = build_thread(20)
    other = _meanwhile(lambda: passes(b.full_bundle(), state_file=state))
    fails(a.full_bundle(), RollbackError, step=5, state_file=state, hooks=other)
    assert '"size":20' in state.read_text()
    fails(build_thread(18).full_bundle(), RollbackError, step=5, state_file=state)


def test_state_concurrent_update_erased_fail(tmp_path: Path) -> None:
    """Two verifications of different threads sharing a state file: both heads are kept."""
    state = tmp_path / "state.json"
    other = build_thread(12, thread="thread-2")
    hooks = _meanwhile(lambda: passes(other.full_bundle(), state_file=state))
    passes(build_thread(14).full_bundle(), state_file=state, hooks=hooks)
    (heads,) = json.loads(state.read_text())["logs"].values()
    assert {origin: head["size"] for origin, head in heads.items()} == {
        "registre.test/log/thread-1": 14,
        "registre.test/log/thread-2": 12,
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json", "state.json.lock"]


def test_state_shared_by_two_operators_with_one_log_name_fail(tmp_path: Path) -> None:
    """Two operators whose keys have the same (default) name: one's head of thread-1 used to
    make the other's smaller thread-1 a 'rollback'. The state is keyed by the pinned key."""
    state = trusting(tmp_path, turns(30).full_bundle())
    second = build_thread(5, signer=ATTACKER, story=False)
    passes(second.full_bundle(), policy(signer=ATTACKER), state_file=state)
    fails(turns(20).full_bundle(), RollbackError, step=5, state_file=state)  # still guarded


def test_claim_after_trusted_empty_checkpoint_falsely_refused_fail(tmp_path: Path) -> None:
    """After trusting the size-0 checkpoint of a thread, its claim bundles were refused for
    lacking a consistency proof from size 0, which no verifier needs."""
    state = trusting(tmp_path, Thread().full_bundle())
    thread = build_thread(12)
    passes(thread.partial_bundle([1, 2, 3, 4, 5, 11]), state_file=state)
    assert '"size":12' in state.read_text()


# --- issue 13 item 6: freshness -------------------------------------------------------


def test_old_cosigned_checkpoint_replayed_fail() -> None:
    """An old checkpoint with its old cosignatures verifies with the witness pinned; with
    --max-age it is refused, and the report always states the newest cosignature's age."""
    bundle = turns(8).full_bundle(witnesses=WITNESSES[:1])
    trust = policy(witnesses=1, quorum=1)
    fresh = passes(bundle, trust, now=COSIGN_TIME + 90)
    assert fresh.cosignature_age == 90
    assert f"newest pinned-witness cosignature 1m 30s old ({utc(COSIGN_TIME)})" in (
        fresh.step(2).checked
    )
    aged = replace(trust, max_age=3600)
    report = passes(bundle, aged, now=COSIGN_TIME + 3600)
    assert "within --max-age 1h 0m" in " ".join(report.step(2).checked)
    error = fails(bundle, CheckpointTooOldError, aged, step=2, now=COSIGN_TIME + 30 * 86400)
    assert "30d 0h old" in str(error) and error.hint is not None
    failed = report_of(error)
    assert failed is not None and failed.cosignature_age == 30 * 86400


def cosigned_at(thread: Thread, times: list[int]) -> bytes:
    """A full bundle of ``thread`` whose head is cosigned by WITNESSES[i] at ``times[i]``, in
    that order."""
    note = thread.checkpoint()
    for witness, when in zip(WITNESSES, times, strict=False):
        note = cosign_checkpoint(note, LOG.verifier(), witness, when)
    return rezip(thread.full_bundle(), {checkpoint_member(thread.size): note.encode()})


@pytest.mark.parametrize("order", ["oldest first", "newest first"])
def test_freshness_read_from_an_older_cosignature_fail(order: str) -> None:
    """Two pinned witnesses cosigned the head 30 days apart: the head's age is that of the
    newest cosignature, wherever it stands in the note, and no other."""
    old, new = COSIGN_TIME - 30 * 86400, COSIGN_TIME
    bundle = cosigned_at(turns(8), [old, new] if order == "oldest first" else [new, old])
    trust = replace(policy(witnesses=2, quorum=2), max_age=3600)
    report = passes(bundle, trust, now=COSIGN_TIME + 90)
    assert report.cosignature_age == 90
    assert f"newest pinned-witness cosignature 1m 30s old ({utc(new)})" in " ".join(
        report.step(2).checked
    )
    error = fails(bundle, CheckpointTooOldError, trust, step=2, now=COSIGN_TIME + 7200)
    assert f"2h 0m old ({utc(new)})" in str(error)


def test_future_dated_cosignature_passes_max_age_fail() -> None:
    """A cosignature dated ten years ahead of the verifier's clock was "3650d 0h in the
    future old" and passed --max-age; beyond the clock-skew allowance it is refused."""
    from registre.attest.verify.freshness import CLOCK_SKEW_SECONDS, CosignatureFromTheFutureError

    bundle = turns(8).full_bundle(witnesses=WITNESSES[:1])
    aged = replace(policy(witnesses=1, quorum=1), max_age=3600)
    error = fails(
        bundle, CosignatureFromTheFutureError, aged, step=2, now=COSIGN_TIME - 3650 * 86400
    )
    assert "3650d 0h in the future" in str(error)
    passes(bundle, aged, now=COSIGN_TIME - CLOCK_SKEW_SECONDS)  # within the allowance
    report = passes(bundle, policy(witnesses=1, quorum=1), now=COSIGN_TIME - 3650 * 86400)
    assert report.cosignature_age is None  # no --max-age: reported, not used to date the head


def test_max_age_without_pinned_witness_fail() -> None:
    """--max-age cannot be met by a checkpoint no pinned witness cosigned."""
    bundle = turns(8).full_bundle(witnesses=WITNESSES[1:2])  # cosigned, but not by a pinned one
    fails(bundle, FreshnessUnprovenError, replace(policy(), max_age=3600), step=2)
