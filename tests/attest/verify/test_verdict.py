"""The one verdict every renderer shows (issue 33 item 1): its headline, what was not checked
by short name, its tone, and the history beside it."""

from __future__ import annotations

import functools

import pytest

from registre.attest.entries import LifecycleOmittedError
from registre.attest.verify import (
    SemanticHooks,
    VerifyReport,
    gap_name,
    plural,
    report_of,
)
from tests.bundles import WITNESSES, Thread, build_thread, policy
from tests.tamper.helpers import fails, passes


@functools.cache
def story(n: int) -> Thread:
    return build_thread(n)


def test_full_bundle_without_witness_warns_and_says_what_was_not_checked() -> None:
    report = passes(story(12).full_bundle())
    verdict = report.summary()
    assert verdict.line() == report.verdict() == "VERIFIED; not checked: witnesses, rollback"
    assert verdict.tone == "warn"  # nobody independent saw this head
    assert report.render().splitlines()[0] == f"registre bundle verification: {verdict.line()}"
    assert report.to_json()["verdict"]["not_checked"] == ["witnesses", "rollback"]


def test_witnessed_full_bundle_is_ok(tmp_path: pytest.TempPathFactory) -> None:
    bundle = story(12).full_bundle(witnesses=WITNESSES[:1])
    state = tmp_path / "state.json"  # type: ignore[operator]
    report = passes(bundle, policy(witnesses=1, quorum=1), state_file=state)
    assert report.summary().tone == "ok"
    assert report.verdict() == "VERIFIED; every check ran"


def test_partial_bundle_names_its_gaps() -> None:
    report = passes(story(20).partial_bundle([1, 2, 3, 4, 5, 15, 19]))
    verdict = report.summary()
    assert verdict.headline == "VERIFIED, PARTIAL (13 undisclosed entries of 20)"
    assert verdict.tone == "warn"
    assert verdict.not_checked[:2] == ("witnesses", "undisclosed entries")
    assert verdict.not_checked[2:] == ("rollback",)
    # a model call disclosed without its prefix: its digest is a gap too
    calls = passes(story(12).partial_bundle([7, 8])).summary()
    assert {"pin-set digests", "context digests"} <= set(calls.not_checked)
    # every short name has its reason: the step's own sentence
    assert all(gap_name(reason) == name for name, reason in verdict.reasons)


def test_failed_bundle_names_the_step_and_what_did_not_run() -> None:
    error = fails(story(12).partial_bundle([2, 3, 5, 11]), LifecycleOmittedError, step=4, seq=2)
    report = report_of(error)
    assert report is not None
    verdict = report.summary()
    assert verdict.tone == "bad" and not verdict.verified
    assert verdict.headline == "NOT VERIFIED (step 4: LifecycleOmittedError, seq 2)"
    assert verdict.not_run == ("history", "semantics", "claims")
    assert verdict.line().endswith("; not run: history, semantics, claims")


def test_hooks_left_out_are_named() -> None:
    report = passes(story(12).full_bundle(), hooks=SemanticHooks())
    assert report.summary().not_checked == (
        "witnesses",
        "rollback",
        "compaction rules",
        "context digests",
    )


def test_history_is_counted_not_listed() -> None:
    report = VerifyReport(
        bundle="b.zip",
        inactive=[
            "cc-1 superseded by cc-2",
            "ev-3 retracted",
            "ev-4 superseded by ev-5",
            "cc-6 stale",
            "final cc-7 stale",
        ],
        stale_finals=["final cc-7 stale"],
    )
    verdict = report.summary()
    assert verdict.history == (("superseded", 2), ("retracted", 1), ("stale", 1))
    assert verdict.history_line() == "history at the checkpoint: 2 superseded, 1 retracted, 1 stale"
    assert "superseded" not in verdict.line()


def test_plural() -> None:
    assert [plural(n, "entry") for n in (0, 1, 3)] == ["0 entries", "1 entry", "3 entries"]
    assert plural(2, "pinned witness") == "2 pinned witnesses"
    assert plural(1, "checkpoint") == "1 checkpoint"
    assert plural(4, "source.read entry") == "4 source.read entries"
    assert plural(2, "day") == "2 days"
