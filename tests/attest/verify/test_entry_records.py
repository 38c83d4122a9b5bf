"""Step 3's packed records: the same records as a list of them, a few bytes each."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.bundles import open_bundle, write_bundle
from registre.attest.verify import (
    ClaimIndex,
    EntryRecord,
    PackedRecords,
    SemanticHooks,
    SemanticsProgress,
    check_claims,
    check_entries,
    check_semantics,
    status_at_head,
)
from tests.attest.bundles.test_bundle_stream import full_args
from tests.bundles import build_thread

_KINDS = ["model.call", "context.compaction", "evidence.upsert", "source.read"]
_ACTORS = ["agent", "registre.compactor", "tool:search"]

# (seq step, kind, actor, body or None: read again from its line)
_row = st.tuples(
    st.integers(1, 1000),
    st.sampled_from(_KINDS),
    st.sampled_from(_ACTORS),
    st.one_of(st.none(), st.dictionaries(st.sampled_from("abc"), st.integers(), max_size=2)),
)


def _fill(
    rows: list[tuple[int, str, str, dict[str, Any] | None]], seq: int = 0
) -> tuple[PackedRecords, list[EntryRecord], dict[int, int]]:
    packed = PackedRecords()
    plain: list[EntryRecord] = []
    reread: dict[int, int] = {}
    for step, kind, actor, body in rows:
        seq += step
        line = seq + 3
        packed.append(seq, kind, actor, body, line)
        plain.append(EntryRecord(seq, kind, actor, {} if body is None else body))
        if body is None:
            reread[seq] = line
    return packed, plain, reread


@given(st.lists(_row, max_size=40), st.lists(_row, max_size=40))
def test_packed_records_are_the_records_appended(
    first: list[tuple[int, str, str, dict[str, Any] | None]],
    second: list[tuple[int, str, str, dict[str, Any] | None]],
) -> None:
    packed, plain, reread = _fill(first)
    later, plain_later, reread_later = _fill(second, seq=plain[-1].seq if plain else 0)
    packed.extend(later)
    plain += plain_later
    reread |= reread_later
    assert len(packed) == len(plain)
    assert list(packed) == plain and packed == plain
    assert [packed[i] for i in range(-len(plain), len(plain))] == plain + plain
    assert packed[1:-1:2] == plain[1:-1:2]
    assert dict(packed.reread) == reread and len(packed.reread) == len(reread)
    assert packed.reread == reread
    for index, record in enumerate(plain):
        assert packed.line(index) == reread.get(record.seq)
    assert pickle.loads(pickle.dumps(packed)) == plain


def test_packed_records_refuse_an_index_out_of_range_and_an_unknown_seq() -> None:
    packed, _plain, _reread = _fill([(1, "model.call", "agent", None), (2, "turn", "a", {})])
    with pytest.raises(IndexError):
        packed[2]
    with pytest.raises(IndexError):
        packed[-3]
    with pytest.raises(KeyError):
        packed.reread[3]  # kept with its body
    with pytest.raises(KeyError):
        packed.reread[2]  # no record


def test_a_packed_record_costs_a_few_bytes() -> None:
    packed = PackedRecords()
    for seq in range(100_000):
        packed.append(seq, _KINDS[seq % 4], _ACTORS[seq % 3], None, seq)
    size = sum(sys.getsizeof(part) for part in (packed._seqs, packed._lines, packed._kinds))
    assert (size + sys.getsizeof(packed._actors)) / len(packed) < 12  # 4 + 4 + 1 + 1, grown


def test_the_claim_index_built_in_step_6_is_the_index_of_its_events(tmp_path: Path) -> None:
    thread = build_thread(60)
    target = tmp_path / "story.zip"
    write_bundle(target, **full_args(thread))
    with open_bundle(target) as bundle:
        leaves = bundle.leaves
        checked = check_entries(
            leaves,
            seqs=range(len(leaves)),
            full=True,
            origin=bundle.origin,
            keys=[thread.signer.verifier()],
        )
        results = [
            check_semantics(
                checked.records,
                full=True,
                leaves=leaves,
                hooks=SemanticHooks(),
                progress=SemanticsProgress(),
                keep_events=keep,
            )
            for keep in (True, False)
        ]
    kept, lean = results
    assert kept.events and not lean.events
    assert lean.claims == kept.claims == ClaimIndex.of(kept.events)
    assert kept.claims.conclusions and kept.claims.evidence and kept.claims.references
    progress = SemanticsProgress()
    assert check_claims(lean.claims, progress) == check_claims(kept.events, progress)
    assert kept.state is not None and lean.state == kept.state
    assert status_at_head(lean.claims, kept.state) == status_at_head(kept.events, kept.state)


@given(
    st.lists(
        st.tuples(
            st.sampled_from([1, 7, 200, 300, 70_000, 2**32 + 5, 2**40]),
            st.integers(0, 300),
            st.integers(0, 300),
            st.booleans(),
        ),
        max_size=30,
    ),
    st.integers(0, 30),
)
def test_packed_records_widen_their_arrays_as_values_grow(
    rows: list[tuple[int, int, int, bool]], cut: int
) -> None:
    """Seqs, lines and table indexes past 1, 2 and 4 bytes are kept exactly, whether
    appended one by one or in a chunk merged with extend."""
    kinds = [f"kind-{k}" for k in range(301)]
    actors = [f"actor-{a}" for a in range(301)]
    plain: list[EntryRecord] = []
    reread: dict[int, int] = {}
    whole, first, second = PackedRecords(), PackedRecords(), PackedRecords()
    seq = 0
    for index, (step, kind, actor, kept) in enumerate(rows):
        seq += step
        body = {"n": index} if kept else None
        line = seq * 3
        for packed in (whole, first if index < cut else second):
            packed.append(seq, kinds[kind], actors[actor], body, line)
        plain.append(EntryRecord(seq, kinds[kind], actors[actor], body or {}))
        if body is None:
            reread[seq] = line
    first.extend(second)
    for packed in (whole, first):
        assert list(packed) == plain and dict(packed.reread) == reread
    with pytest.raises(ValueError):
        PackedRecords().append(-1, "turn", "a", None, 0)
