"""attest.bundle_writer / bundle_leaves: the streaming writer gives the bytes of the in-memory
one, writes entries to the file as they come, and the verifier's view of entries.jsonl reads
exactly the bytes step 1 hashed."""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.bundles import (
    ENTRIES_MEMBER,
    MANIFEST_MEMBER,
    PROOFS_MEMBER,
    WRITE_BUFFER,
    BundleLeaves,
    BundleManifest,
    BundleWriteError,
    EntriesChangedError,
    LineGroups,
    ReadAhead,
    ZipStreamWriter,
    build_proofs,
    bundle_bytes,
    checkpoint_member,
    deterministic_zip,
    open_bundle,
    read_bundle,
    write_bundle,
)
from registre.attest.canonical_json import canonical_bytes
from registre.attest.entries import ChainMark, ChainProgress, LifecycleHead, check_lifecycle_chain
from registre.attest.notes import Checkpoint, parse_note, sign_checkpoint
from registre.attest.tree import leaf_hash
from registre.attest.verify import RecordsWithBodies, check_entries, thin_marks
from registre.errors import RegistreError
from tests.bundles import Thread, build_thread


def reference_bundle(
    *,
    origin: str,
    leaves: Sequence[bytes],
    checkpoints: Sequence[str],
    seqs: Sequence[int] | None = None,
    proofs: Any = None,
    informational: dict[str, Any] | None = None,
) -> bytes:
    """The bundle as the writer made it before it streamed: every member in memory, then
    :func:`deterministic_zip`."""
    notes = {}
    for note in checkpoints:
        data = note.encode()
        notes[Checkpoint.parse(parse_note(data)[0]).size] = data
    contents = {ENTRIES_MEMBER: b"".join(leaf + b"\n" for leaf in leaves)}
    contents.update({checkpoint_member(size): note for size, note in notes.items()})
    if proofs is not None:
        contents[PROOFS_MEMBER] = canonical_bytes(proofs.to_json())
    manifest = BundleManifest(
        origin=origin,
        disclosure="full" if seqs is None else "partial",
        tree_size=max(notes),
        entry_count=len(leaves),
        checkpoint_sizes=tuple(sorted(notes)),
        members={
            name: (len(data), hashlib.sha256(data).hexdigest()) for name, data in contents.items()
        },
        informational=dict(informational or {}),
    )
    contents[MANIFEST_MEMBER] = canonical_bytes(manifest.to_json())
    return deterministic_zip(contents)


def full_args(thread: Thread, sizes: Sequence[int] = ()) -> dict[str, Any]:
    notes = [thread.checkpoint()] + [thread.checkpoint(s) for s in sizes if s != thread.size]
    return {
        "origin": thread.origin,
        "leaves": thread.leaves,
        "checkpoints": notes,
        "informational": {"log_key": thread.signer.vkey()},
    }


def partial_args(thread: Thread, seqs: list[int]) -> dict[str, Any]:
    proofs = build_proofs(thread.tree, tree_size=thread.size, seqs=seqs, consistency_from=[2])
    return {
        "origin": thread.origin,
        "leaves": [thread.entries[seq].leaf for seq in seqs],
        "checkpoints": [thread.checkpoint(), thread.checkpoint(2)],
        "seqs": seqs,
        "proofs": proofs,
    }


# --- the writer: the same bytes as before ----------------------------------------------


@pytest.mark.parametrize("n", [1, 12, 40, 700])
def test_streamed_bundles_are_the_bytes_of_the_in_memory_writer(n: int, tmp_path: Path) -> None:
    thread = build_thread(n, story=n >= 10)
    sizes = [size for size in (1, 5, n // 2) if 0 < size < n]
    expected = reference_bundle(**full_args(thread, sizes))
    assert bundle_bytes(**full_args(thread, sizes)) == expected
    target = tmp_path / "full.zip"
    assert write_bundle(target, **full_args(thread, sizes)) == len(expected)
    assert target.read_bytes() == expected
    if n >= 12:
        seqs = [0, 3, n - 1]
        assert bundle_bytes(**partial_args(thread, seqs)) == reference_bundle(
            **partial_args(thread, seqs)
        )


def test_an_entries_member_needing_zip64_is_written_again_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ~1.9 GiB of entries the in-memory writer used zip64 records, known only from the
    size: the streaming writer notices on the way, iterates the leaves once more and writes
    the same bytes (the limit is lowered here so that a small thread crosses it)."""
    thread = build_thread(60, story=False)
    entries = sum(len(leaf) + 1 for leaf in thread.leaves)
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", entries // 2)
    passes = []

    class Counted(list[bytes]):
        def __iter__(self) -> Iterator[bytes]:
            passes.append(1)
            return super().__iter__()

    expected = reference_bundle(**full_args(thread))
    target = tmp_path / "big.zip"
    write_bundle(target, **{**full_args(thread), "leaves": Counted(thread.leaves)})
    assert target.read_bytes() == expected and len(passes) == 2
    assert b"entries.jsonl\x01\x00\x10\x00" in expected  # its zip64 extra: the case was reached
    assert read_bundle(target).leaves == thread.leaves


def test_the_zip_writer_refuses_members_out_of_order(tmp_path: Path) -> None:
    with (tmp_path / "x.zip").open("wb") as stream:
        writer = ZipStreamWriter(stream)
        writer.write("b", b"1")
        with pytest.raises(ValueError, match="sorted order"):
            writer.write("a", b"2")
        writer.close()


class _Watched(Sequence[bytes]):
    """Leaves that record, as each is handed out, how large the writer's temporary file is."""

    def __init__(self, leaves: list[bytes], folder: Path) -> None:
        self._leaves = leaves
        self._folder = folder
        self.seen: list[tuple[int, int]] = []  # (bytes handed out, bytes on disk)

    def __len__(self) -> int:
        return len(self._leaves)

    @overload
    def __getitem__(self, index: int) -> bytes: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[bytes]: ...

    def __getitem__(self, index: int | slice) -> bytes | Sequence[bytes]:
        raise AssertionError("the writer reads the leaves in order, never by index")

    def __iter__(self) -> Iterator[bytes]:
        handed = 0
        for leaf in self._leaves:
            on_disk = sum(path.stat().st_size for path in self._folder.glob(".out.zip.*"))
            self.seen.append((handed, on_disk))
            handed += len(leaf) + 1
            yield leaf


def test_write_bundle_writes_entries_to_the_file_as_they_come(tmp_path: Path) -> None:
    """The writer holds at most one buffer of entries: by the time a leaf is asked for, all
    but the last :data:`WRITE_BUFFER` bytes before it are on disk (random text: deflate
    cannot shrink it below ~3/4)."""
    thread = build_thread(2, story=False)
    leaves = [os.urandom(600).hex().encode() for _ in range(6000)]  # 7.2 MB, unsigned
    folder = tmp_path / "out"
    folder.mkdir()
    watched = _Watched(leaves, folder)
    # the writer checks a checkpoint's size and origin, not its root (the verifier does)
    note = sign_checkpoint(Checkpoint(thread.origin, len(leaves), bytes(32)), thread.signer)
    write_bundle(folder / "out.zip", origin=thread.origin, leaves=watched, checkpoints=[note])
    assert watched.seen and max(handed for handed, _ in watched.seen) > 4 * WRITE_BUFFER
    for handed, on_disk in watched.seen:
        assert on_disk >= (handed - 2 * WRITE_BUFFER) * 0.6
    assert read_bundle(folder / "out.zip").leaves == leaves


class _Exploding(list[bytes]):
    def __iter__(self) -> Iterator[bytes]:
        yield from self[:3]
        raise RuntimeError("the store broke")


@pytest.mark.parametrize("overwrite", [False, True])
def test_an_error_while_streaming_leaves_no_file(tmp_path: Path, overwrite: bool) -> None:
    thread = build_thread(8, story=False)
    target = tmp_path / "t.zip"
    if overwrite:
        target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="store broke"):
        write_bundle(
            target,
            overwrite=overwrite,
            **{**full_args(thread), "leaves": _Exploding(thread.leaves)},
        )
    bad = [*thread.leaves[:5], b"{}\n", *thread.leaves[6:]]
    with pytest.raises(BundleWriteError, match="leaf 5"):
        write_bundle(target, overwrite=overwrite, **{**full_args(thread), "leaves": bad})
    assert os.listdir(tmp_path) == (["t.zip"] if overwrite else [])
    if overwrite:
        assert target.read_bytes() == b"old"


# --- the reader: leaves read again, checked against step 1 ------------------------------


def test_open_bundle_reads_the_leaves_again_on_demand(tmp_path: Path) -> None:
    thread = build_thread(3000, story=False)
    target = tmp_path / "b.zip"
    write_bundle(target, **full_args(thread))
    with open_bundle(target) as bundle:
        leaves = bundle.leaves
        assert isinstance(leaves, BundleLeaves) and len(leaves) == 3000
        assert list(bundle.leaf_hashes) == [leaf_hash(leaf) for leaf in thread.leaves]
        assert bundle.groups == LineGroups(thread.leaves) and bundle.groups.groups < 3000 / 32
        assert list(leaves) == thread.leaves
        for index in (0, 1, 2999, 1500, 1501, 7, 7, -1):  # forward, backward, repeated
            assert leaves[index] == thread.leaves[index]
        window = leaves[1000:2500][10:20]
        assert len(window) == 10 and list(window) == thread.leaves[1010:1020]
        assert window[-1] == thread.leaves[1019] and list(leaves[5:5]) == []
        with pytest.raises(IndexError):
            leaves[3000]


def _chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@given(
    st.lists(st.binary(min_size=1, max_size=30).filter(lambda b: b"\n" not in b), max_size=40),
    st.integers(1, 50),
    st.integers(0, 40),
    st.integers(0, 40),
)
def test_bundle_leaves_give_every_range_whatever_the_chunking(
    lines: list[bytes], chunk: int, start: int, stop: int
) -> None:
    data = b"".join(line + b"\n" for line in lines)
    leaves = BundleLeaves(lambda: _chunked(data, chunk), LineGroups(lines))
    assert list(leaves) == lines
    assert list(leaves.iterate(start, min(stop, len(lines)))) == lines[start:stop]
    assert [leaves[i] for i in reversed(range(len(lines)))] == lines[::-1]


@given(
    st.lists(st.binary(min_size=1, max_size=30).filter(lambda b: b"\n" not in b), max_size=40),
    st.integers(1, 50),
    st.integers(0, 120),
    st.lists(st.tuples(st.booleans(), st.integers(0, 39)), max_size=30),
)
def test_read_ahead_readers_get_every_line_as_it_is(
    lines: list[bytes], chunk: int, held: int, reads: list[tuple[bool, int]]
) -> None:
    """Whatever the order of reads and the bytes held, both readers of a ReadAhead give
    the line at the index asked for (held, from the shared cursor, or from a fork)."""
    data = b"".join(line + b"\n" for line in lines)
    shared = ReadAhead(BundleLeaves(lambda: _chunked(data, chunk), LineGroups(lines)), held)
    for ahead, index in reads:
        if index < len(lines):
            reader = shared.ahead if ahead else shared.behind
            assert reader[index] == lines[index]
    assert list(shared.ahead) == list(shared.behind) == lines


def test_read_ahead_reads_the_member_once_when_the_reader_behind_follows() -> None:
    """Step 6's pattern -- a body at s, then the lines up to s -- inflates the member once."""
    lines = [b"line %d" % i for i in range(500)]
    data = b"".join(line + b"\n" for line in lines)
    passes = []

    def chunks() -> list[bytes]:
        passes.append(1)
        return _chunked(data, 64)

    shared = ReadAhead(BundleLeaves(chunks, LineGroups(lines)))
    behind = 0
    for seq in range(3, 500, 7):
        assert shared.ahead[seq] == lines[seq]
        while behind < seq:
            assert shared.behind[behind] == lines[behind]
            behind += 1
    assert len(passes) == 1


def test_read_ahead_refuses_bytes_that_changed_since_step_1() -> None:
    lines = [b"one", b"two", b"three"]
    for read in ("ahead", "behind"):
        changed = BundleLeaves(lambda: [b"one\ntwo\nthree!\n"], LineGroups(lines))
        with pytest.raises(EntriesChangedError, match=r"lines 1\.\.3"):
            getattr(ReadAhead(changed), read)[1]


def test_bundle_leaves_refuse_bytes_that_changed_since_step_1() -> None:
    lines = [b"one", b"two", b"three"]
    hashes = LineGroups(lines)
    changed = BundleLeaves(lambda: [b"one\ntwo\nthree!\n"], hashes)
    # the group (lines 1..3) is checked whole before any of its lines is given
    with pytest.raises(EntriesChangedError, match=r"lines 1\.\.3"):
        changed[1]
    with pytest.raises(EntriesChangedError, match=r"lines 1\.\.3"):
        list(changed)
    cut = BundleLeaves(lambda: [b"one\ntwo\n"], hashes)
    with pytest.raises(EntriesChangedError, match="ends after 2 lines"):
        cut[2]


# --- step 3's chain marks ----------------------------------------------------------------


@st.composite
def mark_runs(draw: st.DrawFn) -> list[ChainMark]:
    """Marks mostly consistent with a real chain, with a few wrong or missing heads."""
    marks = []
    running = LifecycleHead(0, bytes(32))
    legacy = draw(st.integers(0, 3))
    for seq in range(draw(st.integers(0, 25))):
        lifecycle = draw(st.booleans())
        leaf = bytes([seq % 256]) * 32
        if seq < legacy:
            signed = None
        elif draw(st.integers(0, 9)) == 0:
            signed = draw(st.sampled_from([None, LifecycleHead(0, bytes(32)), running]))
        else:
            signed = running
        marks.append(ChainMark(seq, lifecycle, leaf, signed))
        if lifecycle:
            running = running.extend(leaf)
    return marks


def _outcome(marks: list[ChainMark], full: bool, size: int) -> Any:
    progress = ChainProgress()
    try:
        return check_lifecycle_chain(marks, full=full, tree_size=size, progress=progress)
    except RegistreError as error:
        return type(error), str(error), progress.seq


@given(mark_runs(), st.booleans())
def test_thinned_marks_give_the_chain_check_the_same_outcome(
    marks: list[ChainMark], full: bool
) -> None:
    size = len(marks)
    thinned = thin_marks(marks)
    assert _outcome(thinned, full, size) == _outcome(marks, full, size)
    assert all(mark in thinned for mark in marks if mark.lifecycle)


def test_bodies_left_out_by_step_3_are_read_again_as_they_were(tmp_path: Path) -> None:
    thread = build_thread(30)  # the story: a compaction at seq 7, a model call at 8
    target = tmp_path / "story.zip"
    write_bundle(target, **full_args(thread))
    with open_bundle(target) as bundle:
        common: dict[str, Any] = {
            "seqs": range(len(bundle.leaves)),
            "full": True,
            "origin": bundle.origin,
            "keys": [thread.signer.verifier()],
        }
        kept = check_entries(bundle.leaves, **common)
        light = check_entries(bundle.leaves, reread=["context.compaction"], **common)
        compaction = next(i for i, record in enumerate(light.records) if record.seq == 7)
        assert light.reread == {7: 7} and not light.records[compaction].body
        assert kept.records[compaction].body
        leaves = bundle.leaves
        assert isinstance(leaves, BundleLeaves)
        again = RecordsWithBodies(light.records, light.reread, leaves.fork())
        assert list(again) == kept.records and again[compaction] == kept.records[compaction]
