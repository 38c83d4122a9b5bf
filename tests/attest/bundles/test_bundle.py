"""attest.bundle: the bundle format -- writer, proofs, reader -- and the examples of
specs/bundle.md."""

from __future__ import annotations

import hashlib
import json
import os
import re
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.bundles import (
    ENTRIES_MEMBER,
    MANIFEST_MEMBER,
    PROOFS_MEMBER,
    BundleProofs,
    BundleWriteError,
    EntriesFormatError,
    InclusionProof,
    ManifestFormatError,
    ManifestMismatchError,
    ProofsFormatError,
    build_proofs,
    bundle_bytes,
    checkpoint_member,
    deterministic_zip,
    read_bundle,
    write_bundle,
)
from registre.attest.canonical_json import canonical_bytes
from registre.attest.tree import leaf_hash, root_at, verify_consistency, verify_inclusion
from tests.bundles import Thread, build_thread, members, rezip

SPEC = Path(__file__).resolve().parents[3] / "specs" / "bundle.md"


def turns(n: int) -> Thread:
    return build_thread(n, story=False)


def spec_example_blocks() -> list[str]:
    text = SPEC.read_text(encoding="utf-8")
    example = text[text.index("## 6. Example") :]
    return re.findall(r"```(?:json|text)\n(.*?)```", example, flags=re.S)


# --- the spec's worked example ---------------------------------------------------------


def test_spec_example_manifest_note_and_proofs_are_what_the_writer_produces() -> None:
    manifest_text, note_text, proofs_text = spec_example_blocks()
    thread = turns(3)
    full = members(thread.full_bundle(checkpoint_sizes=[2]))
    assert json.loads(manifest_text) == json.loads(full[MANIFEST_MEMBER])
    assert note_text == full[checkpoint_member(3)].decode("utf-8")
    partial = members(thread.partial_bundle([1]))
    assert json.loads(proofs_text) == json.loads(partial[PROOFS_MEMBER])


def test_spec_example_zip_digest() -> None:
    if zlib.ZLIB_RUNTIME_VERSION != "1.2.13":
        pytest.skip("the example's zip digest is stated for zlib 1.2.13")
    data = turns(3).full_bundle(checkpoint_sizes=[2])
    text = SPEC.read_text(encoding="utf-8")
    assert f"{len(data):,} bytes" in text
    assert hashlib.sha256(data).hexdigest() in text


# --- writing ---------------------------------------------------------------------------


@given(n=st.integers(1, 40), data=st.data())
def test_same_inputs_give_the_same_bytes(n: int, data: st.DataObject) -> None:
    thread = turns(n)
    seqs = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1)))
    first = thread.partial_bundle(seqs)
    again = thread.partial_bundle(list(seqs))
    assert first == again
    assert thread.full_bundle() == thread.full_bundle()


@given(n=st.integers(1, 40), data=st.data())
def test_read_bundle_returns_what_was_written(n: int, data: st.DataObject) -> None:
    thread = turns(n)
    seqs = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1)))
    sizes = sorted(data.draw(st.sets(st.integers(1, n), max_size=3)) | {n})
    bundle = read_bundle(thread.partial_bundle(seqs, checkpoint_sizes=sizes))
    assert bundle.is_partial and bundle.origin == thread.origin
    assert bundle.leaves == [thread.entries[seq].leaf for seq in seqs]
    assert sorted(bundle.checkpoints) == sizes
    assert bundle.proofs is not None
    assert [proof.seq for proof in bundle.proofs.inclusion] == seqs
    full = read_bundle(thread.full_bundle())
    assert full.leaves == thread.leaves and full.proofs is None
    assert full.manifest.tree_size == full.manifest.entry_count == n


@given(n=st.integers(1, 64), data=st.data())
def test_build_proofs_prove_inclusion_prev_roots_and_earlier_sizes(
    n: int, data: st.DataObject
) -> None:
    thread = turns(n)
    seqs = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=5)))
    old = data.draw(st.integers(0, n))
    proofs = build_proofs(thread.tree, tree_size=n, seqs=seqs, consistency_from=[old])
    assert [proof.seq for proof in proofs.inclusion] == seqs
    wanted = {seq for seq in seqs if seq} | ({old} if 0 < old < n else set())
    assert set(proofs.consistency) == {(size, n) for size in wanted}
    root = root_at(thread.tree, n)
    for proof in proofs.inclusion:
        verify_inclusion(
            leaf_hash(thread.entries[proof.seq].leaf), proof.seq, n, proof.hashes, root
        )
        if proof.seq:
            prev = thread.entries[proof.seq].prev_root
            verify_consistency(proof.seq, n, proofs.consistency[(proof.seq, n)], prev, root)
    if 0 < old < n:
        old_root = root_at(thread.tree, old)
        verify_consistency(old, n, proofs.consistency[(old, n)], old_root, root)


def write_args(thread: Thread, **changes: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "origin": thread.origin,
        "leaves": thread.leaves,
        "checkpoints": [thread.checkpoint()],
    }
    arguments.update(changes)
    return arguments


@pytest.mark.parametrize(
    ("case", "changes"),
    [
        ("no checkpoint", {"checkpoints": []}),
        ("not a note", {"checkpoints": ["hello\n"]}),
        ("other origin", {"origin": "registre.test/log/thread-9"}),
        ("leaf with newline", {"leaves": [b'{"a":\n1}'] * 4}),
        ("empty leaf", {"leaves": [b""] * 4}),
        ("full count", {"leaves": [b"{}"] * 3}),
        ("full with proofs", {"proofs": BundleProofs()}),
        ("seqs without proofs", {"seqs": [0, 1, 2, 3]}),
        ("seqs out of order", {"seqs": [1, 0, 2, 3], "proofs": BundleProofs()}),
        ("seqs count", {"seqs": [0, 1], "proofs": BundleProofs()}),
        ("seq beyond head", {"seqs": [0, 1, 2, 4], "proofs": BundleProofs()}),
        (
            "proof seqs differ",
            {"seqs": [0, 1, 2, 3], "proofs": BundleProofs((InclusionProof(0, ()),))},
        ),
    ],
)
def test_writer_refuses_input_that_cannot_make_a_valid_bundle(
    case: str, changes: dict[str, Any]
) -> None:
    thread = turns(4)
    with pytest.raises(BundleWriteError):
        bundle_bytes(**write_args(thread, **changes))


def test_writer_refuses_two_checkpoints_of_one_size() -> None:
    thread = turns(4)
    with pytest.raises(BundleWriteError, match="two checkpoints of size 4"):
        bundle_bytes(**write_args(thread, checkpoints=[thread.checkpoint(), thread.checkpoint()]))


def test_write_bundle_writes_the_bytes_atomically(tmp_path: Path) -> None:
    thread = turns(5)
    target = tmp_path / "thread-1.zip"
    size = write_bundle(target, **write_args(thread))
    assert target.read_bytes() == bundle_bytes(**write_args(thread))
    assert size == target.stat().st_size
    assert os.listdir(tmp_path) == ["thread-1.zip"]  # no temporary file left behind


def test_write_bundle_never_replaces_unless_asked(tmp_path: Path) -> None:
    thread = turns(5)
    target = tmp_path / "thread-1.zip"
    target.write_bytes(b"keep me")
    with pytest.raises(BundleWriteError, match="exists"):
        write_bundle(target, **write_args(thread))
    assert target.read_bytes() == b"keep me"
    write_bundle(target, overwrite=True, **write_args(thread))
    assert target.read_bytes() == bundle_bytes(**write_args(thread))
    assert os.listdir(tmp_path) == ["thread-1.zip"]


def test_write_bundle_writes_nothing_for_refused_input(tmp_path: Path) -> None:
    with pytest.raises(BundleWriteError):
        write_bundle(tmp_path / "x.zip", **write_args(turns(4), checkpoints=[]))
    assert os.listdir(tmp_path) == []


# --- reading: format errors ------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"format": "registre-bundle/2"}, "format"),
        ({"disclosure": "some"}, "disclosure"),
        ({"tree_size": -1}, "tree_size"),
        ({"tree_size": 5}, "largest checkpoint"),
        ({"checkpoint_sizes": []}, "non-empty"),
        ({"checkpoint_sizes": [12, 12]}, "strictly increasing"),
        ({"origin": ""}, "origin"),
        ({"members": []}, "members"),
        ({"members": {MANIFEST_MEMBER: {"bytes": 1, "sha256": "0" * 64}}}, "itself"),
        ({"members": {ENTRIES_MEMBER: {"bytes": 1}}}, "bytes"),
        ({"members": {ENTRIES_MEMBER: {"bytes": 1, "sha256": "XY"}}}, "64 hex"),
        ({"informational": []}, "informational"),
        ({"extra": 1}, "unexpected"),
    ],
)
def test_manifest_schema_is_enforced(changes: dict[str, Any], message: str) -> None:
    bundle = rezip(turns(12).full_bundle(), {}, manifest_changes=changes)
    with pytest.raises(ManifestFormatError, match=message):
        read_bundle(bundle)


def test_manifest_must_be_an_object_with_every_field() -> None:
    bundle = turns(3).full_bundle()
    contents = members(bundle)
    manifest = json.loads(contents[MANIFEST_MEMBER])
    del manifest["origin"]
    contents[MANIFEST_MEMBER] = canonical_bytes(manifest)
    with pytest.raises(ManifestFormatError, match="missing"):
        read_bundle(deterministic_zip(contents))
    contents[MANIFEST_MEMBER] = b"[]"
    with pytest.raises(ManifestFormatError, match="object"):
        read_bundle(deterministic_zip(contents))


def test_full_bundle_with_proofs_is_refused() -> None:
    thread = turns(4)
    proofs = members(thread.partial_bundle([1]))[PROOFS_MEMBER]
    with pytest.raises(ManifestMismatchError, match="full bundle"):
        read_bundle(rezip(thread.full_bundle(), {PROOFS_MEMBER: proofs}))


@pytest.mark.parametrize(
    ("entries", "message"),
    [(b"{}\n{}", "end with a newline"), (b"{}\n\n{}\n", "line 2 is empty")],
)
def test_entries_are_one_leaf_per_line(entries: bytes, message: str) -> None:
    bundle = rezip(turns(3).full_bundle(), {ENTRIES_MEMBER: entries})
    with pytest.raises(EntriesFormatError, match=message):
        read_bundle(bundle)


def proofs_document(bundle: bytes) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(members(bundle)[PROOFS_MEMBER])
    return document


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.pop("consistency"), "must be"),
        (lambda d: d["inclusion"].pop(), "one per entry"),
        (lambda d: d["inclusion"].reverse(), "strictly increase"),
        (lambda d: d["inclusion"][0].update(seq=-1), "non-negative"),
        (lambda d: d["inclusion"][0].update(hashes=["AAAA"]), "32-byte"),
        (lambda d: d["inclusion"][0].update(hashes=["A" * 43 + "="] * 64), "no valid proof"),
        (lambda d: d["consistency"].append(dict(d["consistency"][0])), "given twice"),
        (lambda d: d["consistency"][0].pop("old_size"), "old_size"),
    ],
)
def test_proofs_schema_is_enforced(edit: Any, message: str) -> None:
    bundle = turns(8).partial_bundle([2, 5])
    document = proofs_document(bundle)
    edit(document)
    tampered = rezip(bundle, {PROOFS_MEMBER: canonical_bytes(document)})
    with pytest.raises(ProofsFormatError, match=message):
        read_bundle(tampered)
