"""Semantic tampering (THREATS row 19): a correctly signed compaction, with true token
counts, that does not make the context smaller (``specs/context.md`` section 7, rule 11). A
well-behaved writer never records one; the verifier refuses it."""

from __future__ import annotations

from typing import Any

from registre.context.errors import CompactionDoesNotReduceError
from registre.context.events import COMPACTION_ACTOR
from registre.context.model import SummaryLine
from tests.bundles import STORY_POLICY, story_prefix
from tests.context.threads import honest_body
from tests.tamper.helpers import fails, passes


def grown_body() -> dict[str, Any]:
    """The story up to seq 6; a compaction at seq 7 folding only entry 0 (a six-word turn)
    into a longer line: every rule holds but the last."""
    thread = story_prefix()
    assert thread.context is not None
    line = SummaryLine(
        "open_threads", "user: “Reconcile the Q3 figures.” and nothing more was said", ((0, 0),)
    )
    body: dict[str, Any] = honest_body(
        thread.context, folded=(0, 0), lines=(line,), policy=STORY_POLICY
    )
    return body


def with_compaction(body: dict[str, Any]) -> bytes:
    thread = story_prefix()
    thread.append("context.compaction", body, actor=COMPACTION_ACTOR)
    thread.turn("after")
    return thread.full_bundle()


def test_compaction_that_grows_the_context_fail() -> None:
    body = grown_body()
    assert body["tokens_after"] > body["tokens_before"]
    fails(with_compaction(body), CompactionDoesNotReduceError, step=6, seq=7)


def test_compaction_that_changes_nothing_fail() -> None:
    """No fold, no stub: only the header refreshed, which here changes no token."""
    thread = story_prefix()
    assert thread.context is not None
    body: dict[str, Any] = honest_body(thread.context, folded=None, policy=STORY_POLICY)
    assert body["tokens_after"] == body["tokens_before"]
    fails(with_compaction(body), CompactionDoesNotReduceError, step=6, seq=7)


def test_the_compaction_the_story_records_shrinks_and_passes() -> None:
    thread = story_prefix()
    entry = thread.compact()
    assert entry.body["tokens_after"] < entry.body["tokens_before"]
    thread.turn("after")
    passes(thread.full_bundle())
