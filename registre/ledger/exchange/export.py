"""Export a thread of a ledger as an audit bundle (``specs/bundle.md`` section 7).

* :func:`export_thread` -- a **full** bundle: every entry up to a signed checkpoint, byte for
  byte, with every stored checkpoint up to that size (notes with their cosignatures);
* :func:`export_claim` -- a **partial** bundle disclosing only the chain of one conclusion
  (:func:`registre.ledger.exchange.claim_chain.claim_chain`: with every lifecycle entry of the
  tree and its last entry, so the verifier can prove nothing was hidden), with an inclusion
  proof for each disclosed entry and the consistency proofs the verifier needs
  (:func:`registre.attest.bundles.proofs.build_proofs`).

Both are reads: they never sign. The checkpoint is the one asked for (``checkpoint=N``: the
checkpoint stored at size N) or, by default, the latest stored one, which must then cover the
head -- otherwise :class:`CheckpointRequiredError`, whose ``hint`` says to run ``registre
checkpoint`` (an export that silently left out the newest entries would mislead; one against an
older checkpoint is a choice the caller makes with ``checkpoint=N``).

Before anything is written the export checks what it read against what it will claim: the
leaves' recomputed roots equal every included checkpoint's signed root (full), each inclusion
proof leads to the head's signed root (partial); a store that fails this raises
StoreCorruptError and nothing is written. Signatures are the verifier's business (and
``registre verify --db``'s). The file is written by
:func:`registre.attest.bundles.writer.write_bundle`: a
temporary file in the target folder, flushed, fsynced, then linked (or, with ``overwrite``,
renamed) into place, so a failed export leaves no file and no partial one.

Entries are streamed from the database in batches of :data:`EXPORT_BATCH` rows, one read
transaction each, straight into the zip (:func:`registre.attest.bundles.writer.write_bundle` writes
each leaf as it comes and sums the manifest's size and SHA-256 on the way): a full export
holds one batch of rows and the writer's buffer, whatever the thread's length (figures in
``specs/bundle.md`` section 7.3). The tree is recomputed in the same single pass; a root
that does not match aborts the write, and the temporary file is removed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import bindparam, select

from registre.attest.bundles import DEFAULT_LIMITS, build_proofs, write_bundle
from registre.attest.entries import LeafView
from registre.attest.notes import Checkpoint, parse_note
from registre.attest.tree import CompactRange, empty_root, leaf_hash, verify_inclusion
from registre.errors import RefusedError, VerificationError
from registre.ledger.core.thread_core import StoredCheckpoint
from registre.ledger.errors import StoreCorruptError
from registre.ledger.exchange.claim_chain import ClaimChain, claim_chain
from registre.ledger.ledger import Ledger
from registre.ledger.store.engine import read_transaction
from registre.ledger.store.nodes import StoredHashSource
from registre.ledger.store.schema import entry_range, tables

__all__ = [
    "EXPORT_BATCH",
    "MAX_BUNDLE_CHECKPOINTS",
    "CheckpointRequiredError",
    "ClaimNotProvableError",
    "ExportResult",
    "choose_checkpoint",
    "export_claim",
    "export_thread",
]

EXPORT_BATCH = 1000
"""Entry rows read per query (and per read transaction) while exporting."""

MAX_BUNDLE_CHECKPOINTS = DEFAULT_LIMITS.max_members - 3
"""Checkpoints a bundle can hold and still be read under the verifier's default member limit
(the manifest, ``entries.jsonl`` and ``proofs.json`` take the other three)."""

_IN_CHUNK = 500  # seqs per "IN (...)" query: far below every engine's parameter limit
_VERIFY_STORE_HINT = "run `registre verify --db`"  # for every StoreCorruptError raised here
_entry = tables.entry
_LEAVES = entry_range(_entry.c.seq, _entry.c.leaf)
_LEAVES_AT = (
    select(_entry.c.seq, _entry.c.leaf)
    .where(
        _entry.c.thread == bindparam("thread"),
        _entry.c.seq.in_(bindparam("seqs", expanding=True)),
    )
    .order_by(_entry.c.seq)
)


class ClaimNotProvableError(RefusedError):
    """A claim bundle whose checkpoint ends on an entry signed before entries carried a
    lifecycle head (a legacy thread): the bundle could not prove its lifecycle complete."""


class CheckpointRequiredError(RefusedError):
    """No stored checkpoint fits the export: none yet, the latest is behind the head, or none
    is stored at the size asked for. Its ``hint`` says to sign one with ``registre checkpoint``."""


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote: ``entries`` of the tree of ``tree_size`` (all of them for a full
    bundle), ``checkpoints`` (sizes, the head last), ``bytes`` of zip at ``path``. A claim
    export also gives its ``chain``; ``omitted_checkpoints`` counts stored checkpoints left
    out over :data:`MAX_BUNDLE_CHECKPOINTS` (the oldest ones)."""

    path: Path
    thread: str
    origin: str
    disclosure: Literal["full", "partial"]
    tree_size: int
    entries: int
    checkpoints: tuple[int, ...]
    bytes: int
    log_key: str | None
    chain: ClaimChain | None = None
    omitted_checkpoints: int = 0

    def describe(self) -> str:
        """One line for people: what was exported, and where."""
        what = (
            f"full bundle of thread {self.thread}: {self.entries} entries"
            if self.chain is None
            else f"claim {self.chain.conclusion} of thread {self.thread}: {self.entries} of "
            f"{self.tree_size} entries disclosed"
        )
        left_out = (
            f", {self.omitted_checkpoints} older left out" if self.omitted_checkpoints else ""
        )
        return (
            f"exported {what}, checkpoint {self.tree_size} (+{len(self.checkpoints) - 1} "
            f"earlier{left_out}), {self.bytes} bytes -> {self.path}"
        )


def choose_checkpoint(
    ledger: Ledger, thread_id: str, size: int | None = None
) -> tuple[StoredCheckpoint, list[StoredCheckpoint], int]:
    """``(head, included, omitted)``: the checkpoint to export against (stored at ``size``, or
    the latest, which must cover the thread's head), the stored checkpoints up to its size to
    include (at most :data:`MAX_BUNDLE_CHECKPOINTS`, the newest, head included) and how many
    older ones were left out. Raises UnknownThreadError and :class:`CheckpointRequiredError`.
    """
    thread = ledger.thread(thread_id)
    stored = thread.checkpoints()
    head_size = thread.head().size
    sizes = ", ".join(str(c.size) for c in stored[-8:]) or "none"
    if size is None:
        if not stored:
            raise CheckpointRequiredError(
                f"thread {thread_id} has no signed checkpoint to export against"
            ).with_hint(
                f"run `registre checkpoint {thread_id}` (needs the operator key), then export"
            )
        chosen = stored[-1]
        if chosen.size < head_size:
            raise CheckpointRequiredError(
                f"thread {thread_id} has {head_size} entries but its latest signed checkpoint "
                f"covers {chosen.size}"
            ).with_hint(
                f"run `registre checkpoint {thread_id}` to sign the head, "
                f"or pass --checkpoint {chosen.size} to export the first {chosen.size}"
            )
    else:
        found = [c for c in stored if c.size == size]
        if not found:
            raise CheckpointRequiredError(
                f"thread {thread_id} has no signed checkpoint of size {size} (stored sizes: "
                f"{sizes})"
            ).with_hint(f"sign one with `registre checkpoint {thread_id} --size {size}`")
        chosen = found[0]
    included = [c for c in stored if c.size <= chosen.size]
    omitted = max(0, len(included) - MAX_BUNDLE_CHECKPOINTS)
    return chosen, included[omitted:], omitted


def export_thread(
    ledger: Ledger,
    thread_id: str,
    path: str | os.PathLike[str],
    *,
    checkpoint: int | None = None,
    overwrite: bool = False,
    batch: int = EXPORT_BATCH,
) -> ExportResult:
    """Write the full bundle of ``thread_id`` up to ``checkpoint`` (see :func:`choose_checkpoint`)
    to ``path``. Raises UnknownThreadError, :class:`CheckpointRequiredError`,
    StoreCorruptError (nothing written), BundleWriteError (``path`` exists and not
    ``overwrite``), OutputFolderError and OutputWriteError (the file could not be written:
    they name ``path``, never the temporary file)."""
    head, included, omitted = choose_checkpoint(ledger, thread_id, checkpoint)
    roots = {c.size: _signed_root(c) for c in included}
    leaves = _StoredLeaves(ledger, thread_id, head.size, roots, batch)
    written = write_bundle(
        path,
        origin=ledger.thread(thread_id).origin,
        leaves=leaves,
        checkpoints=[c.note for c in included],
        informational=_informational(ledger, head),
        overwrite=overwrite,
    )
    return ExportResult(
        path=Path(path),
        thread=thread_id,
        origin=ledger.thread(thread_id).origin,
        disclosure="full",
        tree_size=head.size,
        entries=head.size,
        checkpoints=tuple(c.size for c in included),
        bytes=written,
        log_key=_log_key(ledger, head),
        omitted_checkpoints=omitted,
    )


def export_claim(
    ledger: Ledger,
    thread_id: str,
    conclusion_id: str,
    path: str | os.PathLike[str],
    *,
    checkpoint: int | None = None,
    overwrite: bool = False,
) -> ExportResult:
    """Write the partial bundle disclosing the chain of ``conclusion_id``
    (:func:`registre.ledger.exchange.claim_chain.claim_chain`) in the tree of ``checkpoint`` to
    ``path``, with an inclusion proof per entry and consistency proofs from every disclosed seq and
    every included checkpoint to the head. Raises what :func:`export_thread` raises, plus
    UnknownItemError (no such conclusion), ClaimBeyondCheckpointError and ClaimNotProvableError
    (the checkpoint ends on a legacy entry without a lifecycle head)."""
    head, included, omitted = choose_checkpoint(ledger, thread_id, checkpoint)
    chain = claim_chain(ledger, thread_id, conclusion_id, head.size)
    seqs = list(chain.seqs)
    root = _signed_root(head)
    with read_transaction(ledger.engine, snapshot=True) as conn:
        leaves = []
        for start in range(0, len(seqs), _IN_CHUNK):
            chunk = seqs[start : start + _IN_CHUNK]
            rows = conn.execute(_LEAVES_AT, {"thread": thread_id, "seqs": chunk})
            leaves += _leaves_at(rows, chunk)
        source = StoredHashSource(conn, thread_id, head.size)
        proofs = build_proofs(
            source,
            tree_size=head.size,
            seqs=seqs,
            consistency_from=[c.size for c in included],
        )
    _check_anchor(thread_id, head.size, leaves[-1])
    for leaf, proof in zip(leaves, proofs.inclusion, strict=True):
        try:
            verify_inclusion(leaf_hash(leaf), proof.seq, head.size, proof.hashes, root)
        except VerificationError as exc:
            raise StoreCorruptError(
                f"thread {thread_id}: entry {proof.seq} is not in the tree the checkpoint of "
                f"size {head.size} signs ({exc})"
            ).with_hint(_VERIFY_STORE_HINT) from exc
    written = write_bundle(
        path,
        origin=ledger.thread(thread_id).origin,
        leaves=leaves,
        checkpoints=[c.note for c in included],
        seqs=seqs,
        proofs=proofs,
        informational={**_informational(ledger, head), "claim": conclusion_id},
        overwrite=overwrite,
    )
    return ExportResult(
        path=Path(path),
        thread=thread_id,
        origin=ledger.thread(thread_id).origin,
        disclosure="partial",
        tree_size=head.size,
        entries=len(seqs),
        checkpoints=tuple(c.size for c in included),
        bytes=written,
        log_key=_log_key(ledger, head),
        chain=chain,
        omitted_checkpoints=omitted,
    )


# --- reading the entries ---------------------------------------------------------------


class _StoredLeaves(LeafView):
    """Leaves ``0 .. size-1`` of a thread as a sequence read from the database on demand:
    iterating streams them ``batch`` rows per read transaction, raising StoreCorruptError at a
    missing row. The first complete pass also recomputes the tree and raises StoreCorruptError
    where the root at a checkpoint's size is not the root that checkpoint signs; a later pass
    (the writer makes one, two for an ``entries.jsonl`` past the zip64 size) reads the same
    immutable rows and skips the hashing. No more than one batch of leaves is held."""

    def __init__(
        self, ledger: Ledger, thread: str, size: int, roots: dict[int, bytes], batch: int
    ) -> None:
        self._engine = ledger.engine
        self._thread = thread
        self._size = size
        self._roots = roots
        self._batch = batch
        self._checked = False

    def __len__(self) -> int:
        return self._size

    def _leaf(self, index: int) -> bytes:
        with read_transaction(self._engine) as conn:
            rows = conn.execute(
                _LEAVES, {"thread": self._thread, "start": index, "stop": index + 1}
            ).all()
        return _leaves_at(rows, [index])[0]

    def __iter__(self) -> Iterator[bytes]:
        tree = None if self._checked else CompactRange()
        if tree is not None:
            self._check_root(tree)
        start = 0
        while start < self._size:
            stop = min(self._size, start + self._batch)
            with read_transaction(self._engine) as conn:
                rows = conn.execute(
                    _LEAVES, {"thread": self._thread, "start": start, "stop": stop}
                ).all()
            for leaf in _leaves_at(rows, range(start, stop)):
                if tree is not None:
                    tree.append(leaf_hash(leaf))
                    self._check_root(tree)
                yield leaf
            start = stop
        self._checked = True

    def _check_root(self, tree: CompactRange) -> None:
        expected = self._roots.get(tree.size)
        if expected is None:
            return
        actual = tree.root() if tree.size else empty_root()
        if actual != expected:
            raise StoreCorruptError(
                f"thread {self._thread}: the first {tree.size} stored entries do not hash to "
                f"the root the checkpoint of size {tree.size} signs; nothing was exported"
            ).with_hint(_VERIFY_STORE_HINT)


def _check_anchor(thread_id: str, size: int, leaf: bytes) -> None:
    """The last entry of the head's tree must sign a lifecycle head (ClaimNotProvableError)."""
    try:
        signed = json.loads(leaf)["entry"].get("lifecycle")
    except (ValueError, TypeError, KeyError, AttributeError):
        signed = None
    if signed is None:
        raise ClaimNotProvableError(
            f"thread {thread_id}: entry {size - 1}, the last of the checkpoint of size {size}, "
            "was signed before entries committed to the lifecycle, so a claim bundle could not "
            "prove it discloses every retraction and supersession"
        ).with_hint(
            f"append an entry and run `registre checkpoint {thread_id}`, then export against "
            "the new checkpoint, or export the whole thread (without --claim)"
        )


def _leaves_at(rows: Iterable[Any], seqs: Sequence[int]) -> list[bytes]:
    """The leaves of ``rows`` (``seq, leaf``, in seq order), which must be exactly ``seqs``."""
    leaves: list[bytes] = []
    found = iter(rows)
    for seq in seqs:
        row = next(found, None)
        if row is None or int(row.seq) != seq:
            raise StoreCorruptError(f"entry {seq} is missing from the store")
        leaves.append(bytes(row.leaf))
    return leaves


def _signed_root(stored: StoredCheckpoint) -> bytes:
    """The root the stored note signs (checked against the stored root column)."""
    text, _ = parse_note(stored.note)
    root = Checkpoint.parse(text).root
    if root != stored.root:
        raise StoreCorruptError(
            f"thread {stored.thread}: the checkpoint of size {stored.size} signs another root "
            "than the one stored beside it"
        ).with_hint(_VERIFY_STORE_HINT)
    return root


def _log_key(ledger: Ledger, head: StoredCheckpoint) -> str | None:
    """The stored verifier key that signed ``head`` (for the manifest; never trusted)."""
    _, signatures = parse_note(head.note)
    signed_by = {(s.name, s.key_id) for s in signatures}
    for key in ledger.stored_keys():
        if (key.name, key.key_id) in signed_by:
            return key.vkey()
    return None


def _informational(ledger: Ledger, head: StoredCheckpoint) -> dict[str, str]:
    key = _log_key(ledger, head)
    return {} if key is None else {"log_key": key}
