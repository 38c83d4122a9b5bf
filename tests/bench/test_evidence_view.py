"""What a context shows of the active evidence: ids named as words or inside ranges, and
statements shown whole or as the lifecycle block shows them."""

from __future__ import annotations

from registre.bench.evidence_view import EvidenceInView, evidence_in_view, named_ids
from registre.context.lifecycle_block import STATEMENT_CHARS, statement_text


def test_an_id_is_named_as_a_word_not_inside_a_longer_one() -> None:
    assert named_ids("cite ev-12 and cc-3") == {"ev-12"}
    assert named_ids("ev-123, xev-4, ev-5x, ev-6-7") == {"ev-123"}


def test_a_range_names_every_id_from_first_to_last() -> None:
    assert named_ids("and 5 more active: ev-2, ev-6–7, ev-9–ev-11") == {
        "ev-2", "ev-6", "ev-7", "ev-9", "ev-10", "ev-11",
    }  # fmt: skip
    assert named_ids("ev-9–3") == {"ev-9"}  # backwards: the first id only


def test_the_block_counts_ids_with_or_without_their_statements() -> None:
    active = [("ev-1", "Offices ECL is 12.4m"), ("ev-2", "Retail ECL is 41.2m"), ("ev-3", "x")]
    block = (
        "[lifecycle at entry 9] a conclusion may cite only the active evidence below\n"
        "active evidence (3, most cited and most recent first):\n"
        "- ev-1 (cited by 1): Offices ECL is 12.4m\n"
        "and 2 more active: ev-2 (registre evidence list)"
    )
    assert evidence_in_view(active, block) == EvidenceInView(3, 2, 1)


def test_a_statement_without_its_id_is_not_citable() -> None:
    active = [("ev-1", "Offices ECL is 12.4m")]
    assert evidence_in_view(active, "assistant: Offices ECL is 12.4m") == EvidenceInView(1, 0, 0)


def test_a_long_statement_counts_as_the_block_cuts_it() -> None:
    long = "Offices   figure " + "word " * STATEMENT_CHARS
    prefix = " ".join(long.split())[:150]  # a cut that is not the block's
    assert evidence_in_view([("ev-4", long)], f"- ev-4: {prefix}") == EvidenceInView(1, 1, 0)
    shown = f"- ev-4: {statement_text(long)}"
    assert evidence_in_view([("ev-4", long)], shown) == EvidenceInView(1, 1, 1)
