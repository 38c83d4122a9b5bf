"""attest.verify_semantics, step 7 on its own: what it refuses even when step 6 let an entry
through (a partial bundle whose lifecycle was not replayed, or a writer whose recorded outcome
was wrong). The bundles behind step 6's refusals: tests/tamper/test_semantics.py."""

from __future__ import annotations

import pytest

from registre.attest.verify import (
    Admitted,
    ClaimCitesInactiveError,
    ClaimIndex,
    SemanticsProgress,
    check_claims,
)


def story(*, ended: dict[str, int]) -> ClaimIndex:
    """r1 read at 0, ev-1 admitted from it at 1, compute cc-1 on ev-1 at 3, final cc-2 on
    cc-1 at 5; ``ended``: the seq that retracted or superseded each id."""
    index = ClaimIndex()
    index.references["r1"] = 0
    index.evidence["ev-1"] = Admitted(1, ("r1",))
    index.conclusions["cc-1"] = Admitted(3, ("ev-1",))
    index.conclusions["cc-2"] = Admitted(5, ("cc-1",))
    index.finals.add("cc-2")
    index.inactive.update(ended)
    return index


def test_claims_on_active_ids_resolve() -> None:
    checked = check_claims(story(ended={}), SemanticsProgress())
    assert (checked.conclusions, checked.finals, checked.passages) == (2, 1, 1)


def test_ids_ended_after_their_citation_still_resolve() -> None:
    """Retracted after it was cited: the citation was valid (step 7.2 reports it stale)."""
    checked = check_claims(story(ended={"ev-1": 4, "cc-1": 6}), SemanticsProgress())
    assert checked.conclusions == 2


def test_conclusion_citing_retracted_evidence_fail() -> None:
    progress = SemanticsProgress()
    with pytest.raises(ClaimCitesInactiveError, match=r"cc-1 \(seq 3\) cites ev-1, which .* seq 2"):
        check_claims(story(ended={"ev-1": 2}), progress)
    assert progress.seq == 3


def test_final_citing_a_superseded_compute_fail() -> None:
    progress = SemanticsProgress()
    with pytest.raises(ClaimCitesInactiveError, match=r"cc-2 \(seq 5\) cites cc-1, which .* seq 4"):
        check_claims(story(ended={"cc-1": 4}), progress)
    assert progress.seq == 5
