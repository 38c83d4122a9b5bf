"""Bundle verification of model calls that recall entries (``specs/verify.md`` step 6.7,
``specs/context.md`` section 4.2): the recalled section is rebuilt from the bundle's entries,
each recall checked against its entry's bytes, each refusal with its own error."""

from __future__ import annotations

import hashlib
from typing import Any

from registre.attest.projection_digest import projection_digest
from registre.context import ContextEntry, default_counter, project
from registre.context.model import Message
from registre.context.recall import (
    RecalledFutureEntryError,
    RecalledRangeError,
    RecalledTextMismatchError,
    RecallSection,
    lay_out_recall,
)
from registre.context.render import MESSAGE_OVERHEAD_TOKENS
from registre.context.tokens import DEFAULT_COUNTER_NAME
from tests.bundles import STORY_POLICY, Thread, story_prefix
from tests.tamper.helpers import fails, passes

COUNTER = default_counter()


def recalling_thread() -> tuple[Thread, int]:
    """The story, compacted (entry 0, "Reconcile the Q3 figures.", folded), then a question
    about it; the seq of the question."""
    thread = story_prefix()
    thread.compact()  # 7
    question = thread.turn("Which Q3 figures did we reconcile?")  # 8
    return thread, question.seq


def call_with(thread: Thread, section: RecallSection, recalled: list[dict[str, Any]]) -> None:
    """Append a model call at the head whose projection shows ``section`` and whose body
    records ``recalled``."""
    assert thread.context is not None
    budget = 400
    projection = project(thread.context, budget, STORY_POLICY, COUNTER, recalled=section)
    thread.append(
        "model.call",
        {
            "model": "test/model",
            "projection_sha256": projection_digest(projection),
            "at_seq": thread.size - 1,
            "budget_tokens": budget,
            "policy": STORY_POLICY.to_json(),
            "token_counter": DEFAULT_COUNTER_NAME,
            "recalled": recalled,
        },
    )


def honest_section(thread: Thread) -> RecallSection:
    first = thread.entries[0]
    entry = ContextEntry(0, first.kind, first.actor, first.body)
    section = lay_out_recall([entry], ("q3", "figures"), 200, COUNTER)
    assert section is not None and section.seqs == (0,)
    return section


def test_bundle_with_a_recall_verifies() -> None:
    thread, _question = recalling_thread()
    assert thread.context is not None and thread.context.boundary > 0
    section = honest_section(thread)
    call_with(thread, section, section.to_body())
    report = passes(thread.full_bundle())
    assert "1 model-call projection digest reproduced" in " ".join(report.step(6).checked)


def test_recalled_text_not_entry_bytes_fail() -> None:
    thread, _question = recalling_thread()
    forged = "Reconcile the Q4 figures."
    section = honest_section(thread)
    lie = RecallSection(
        section.items,
        Message("system", section.message.content.replace("Q3", "Q4")),
        MESSAGE_OVERHEAD_TOKENS + COUNTER.count(section.message.content.replace("Q3", "Q4")),
    )
    call_with(thread, lie, [{"seq": 0, "sha256": hashlib.sha256(forged.encode()).hexdigest()}])
    fails(thread.full_bundle(), RecalledTextMismatchError, step=6, seq=thread.size - 1)


def test_recalled_future_entry_fail() -> None:
    thread, question = recalling_thread()
    section = honest_section(thread)
    recalled = [{"seq": question + 1, "sha256": section.to_body()[0]["sha256"]}]
    call_with(thread, section, recalled)  # recalls itself: seq 9 is the call
    fails(thread.full_bundle(), RecalledFutureEntryError, step=6, seq=question + 1)


def test_recalled_range_outside_entry_fail() -> None:
    thread, _question = recalling_thread()
    section = honest_section(thread)
    recalled = [{"seq": 0, "sha256": section.to_body()[0]["sha256"], "bytes": [0, 400]}]
    call_with(thread, section, recalled)
    fails(thread.full_bundle(), RecalledRangeError, step=6, seq=thread.size - 1)


def test_recall_of_an_entry_without_text_fail() -> None:
    thread, _question = recalling_thread()
    section = honest_section(thread)
    empty = hashlib.sha256(b"").hexdigest()
    call_with(thread, section, [{"seq": 7, "sha256": empty}])  # 7 is the compaction
    fails(thread.full_bundle(), RecalledRangeError, step=6, seq=thread.size - 1)
