"""attest.verifier: genuine bundles of every shape verify, the report says what was checked,
the state file moves only on success, and the issue-5 hooks are wired. One case per attack
is in tests/tamper/."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registre.attest.entries import LifecycleOmittedError
from registre.attest.notes import WitnessPolicyError
from registre.attest.verify import (
    STEP_NAMES,
    Compaction,
    ModelCall,
    SemanticHooks,
    report_of,
    verify_bundle,
)
from registre.errors import VerificationError
from tests.bundles import WITNESSES, Thread, build_thread, policy
from tests.tamper.helpers import fails, passes

CHAIN = [1, 2, 3, 4, 5]  # the story's lifecycle: source.read, evidence, compute, pin, final


@functools.cache
def story(n: int) -> Thread:
    return build_thread(n)


@settings(deadline=None)
@given(
    n=st.integers(11, 60),
    data=st.data(),
    witnesses=st.integers(0, 3),
)
def test_genuine_bundles_of_any_shape_verify(n: int, data: st.DataObject, witnesses: int) -> None:
    thread = story(n)
    sizes = data.draw(st.sets(st.integers(0, n), max_size=4))
    quorum = data.draw(st.integers(0, witnesses))
    trust = policy(witnesses=witnesses, quorum=quorum)
    signed_by = WITNESSES[:witnesses]
    full = passes(thread.full_bundle(checkpoint_sizes=sizes, witnesses=signed_by), trust)
    assert full.entries == full.tree_size == n
    extra = data.draw(st.sets(st.integers(10, n - 1), max_size=6))
    chain = [*CHAIN, n - 1] if data.draw(st.booleans()) else []  # a claim: with the anchor
    seqs = sorted({*extra, *chain} or {n - 1})
    partial = passes(
        thread.partial_bundle(seqs, checkpoint_sizes=sizes, witnesses=signed_by), trust
    )
    assert partial.entries == len(seqs) and partial.tree_size == n


def test_empty_thread_verifies() -> None:
    report = passes(Thread().full_bundle())
    assert report.entries == report.tree_size == 0


def test_report_of_a_verified_bundle() -> None:
    report = passes(story(12).full_bundle(checkpoint_sizes=[4]))
    assert report.verified and report.failure is None
    assert [step.status for step in report.steps] == ["passed"] * 4 + ["skipped"] + ["passed"] * 2
    assert report.kinds["turn"] == 5 and report.kinds["context.compaction"] == 1
    document = report.to_json()
    assert json.loads(json.dumps(document)) == document
    assert [step["name"] for step in document["steps"]] == list(STEP_NAMES.values())
    assert set(document) == {
        "verified", "bundle", "origin", "disclosure", "tree_size", "entries",
        "checkpoints", "kinds", "steps", "failure", "notes", "result", "verdict",
        "cosignature_age", "inactive", "stale_finals",
    }  # fmt: skip
    text = report.render()
    assert text.startswith("registre bundle verification: VERIFIED")
    assert "1 model-call projection digest reproduced" in text


def test_report_of_a_failed_bundle() -> None:
    thread = story(12)
    error = fails(thread.partial_bundle([2, 3, 5, 11]), LifecycleOmittedError, step=4, seq=2)
    report = report_of(error)
    assert report is not None and report.failure is not None
    assert [step.status for step in report.steps][3:] == ["failed"] + ["not run"] * 3
    assert report.failure.sentence().startswith("step 4 (tree), seq 2: LifecycleOmittedError:")
    assert report.to_json()["failure"]["exit_code"] == 1
    assert "NOT VERIFIED" in report.render()


def test_partial_report_names_what_it_could_not_check() -> None:
    report = passes(story(20).partial_bundle([*CHAIN, 15, 19]))
    tree = report.step(4)
    assert "13 undisclosed entries" in " ".join(tree.not_checked)
    assert "all 5 lifecycle entries of the tree disclosed" in " ".join(tree.checked)
    assert "5 lifecycle events replayed" in " ".join(report.step(6).checked)
    verdict = report.verdict()
    assert verdict.startswith("VERIFIED, PARTIAL (13 undisclosed entries of 20); not checked: ")


def test_verifies_a_file_and_records_the_state(tmp_path: Path) -> None:
    path = tmp_path / "thread-1.zip"
    path.write_bytes(story(12).full_bundle())
    state = tmp_path / "state.json"
    report = verify_bundle(path, policy(), state_file=state)
    assert report.bundle == str(path) and report.step(5).status == "passed"
    logs = json.loads(state.read_text())["logs"]
    assert logs[policy().log_key.vkey()]["registre.test/log/thread-1"]["size"] == 12


def test_unsound_witness_policy_is_refused() -> None:
    with pytest.raises(WitnessPolicyError):
        verify_bundle(story(12).full_bundle(), policy(witnesses=1, quorum=2))


# --- the working-context hooks (issue 5) -----------------------------------------------


def test_default_hooks_replay_the_working_context() -> None:
    report = passes(story(12).full_bundle())
    checked = " ".join(report.step(6).checked)
    assert "1 compaction checked against the working-context rules" in checked
    assert "1 model-call projection digest reproduced" in checked
    assert not report.step(6).not_checked


def test_hooks_are_called_with_the_prefix() -> None:
    seen: list[tuple[str, int, int]] = []

    def compaction(point: Compaction) -> None:
        seen.append(("compaction", point.seq, len(point.prefix)))
        assert len(point.lifecycle.live_pins()) == 1

    def model_call(call: ModelCall) -> None:
        seen.append(("model.call", call.seq, len(call.prefix)))

    passes(story(12).full_bundle(), hooks=SemanticHooks(compaction, model_call))
    assert seen == [("compaction", 7, 7), ("model.call", 8, 8)]


def test_a_failing_hook_fails_the_bundle() -> None:
    class RuleBroken(VerificationError):
        pass

    def compaction(point: Compaction) -> None:
        raise RuleBroken(f"compaction at seq {point.seq} folds a recent turn")

    fails(story(12).full_bundle(), RuleBroken, step=6, seq=7, hooks=SemanticHooks(compaction))


def test_without_hooks_the_report_says_what_was_not_checked() -> None:
    report = passes(story(12).full_bundle(), hooks=SemanticHooks())
    not_checked = " ".join(report.step(6).not_checked)
    assert "1 compaction checked against the working-context rules: needs" in not_checked
    assert "1 model-call projection digest reproduced: needs" in not_checked


def test_hooks_are_not_run_on_partial_bundles() -> None:
    def refuse(call: ModelCall) -> None:
        raise AssertionError("called on a partial bundle")

    report = passes(story(12).partial_bundle([7, 8]), hooks=SemanticHooks(model_call=refuse))
    not_checked = " ".join(report.step(6).not_checked)
    assert "a partial bundle lacks the prefix" in not_checked
    assert "pin-set digest: needs the full history" in not_checked


@settings(deadline=None)
@given(n=st.integers(11, 24), data=st.data())
def test_partial_bundle_passes_iff_it_holds_the_whole_lifecycle(
    n: int, data: st.DataObject
) -> None:
    """Any selection of a thread's entries: one disclosing a lifecycle entry verifies exactly
    when it discloses all of them and the tree's last entry (step 4.6); one disclosing none
    verifies and proves no status."""
    thread = story(n)
    seqs = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n - 1)))
    bundle = thread.partial_bundle(seqs)
    lifecycle = set(CHAIN)
    if not lifecycle & set(seqs):
        report = passes(bundle)
        assert "no lifecycle entry disclosed" in " ".join(report.step(4).not_checked)
    elif lifecycle <= set(seqs) and n - 1 in seqs:
        report = passes(bundle)
        assert "5 lifecycle events replayed" in " ".join(report.step(6).checked)
    else:
        with pytest.raises(VerificationError) as info:
            verify_bundle(bundle, policy())
        assert type(info.value).__name__ in ("LifecycleOmittedError", "LifecycleAnchorMissingError")
