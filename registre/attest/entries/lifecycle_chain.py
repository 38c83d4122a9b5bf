"""The lifecycle sub-log commitment: every entry signs a running hash of the lifecycle so far.

The lifecycle kinds (:data:`registre.attest.entries.body_base.LIFECYCLE_KINDS`: ``source.read``,
``evidence.*``, ``conclusion.*``, ``context.pin``, ``context.unpin``) form a sub-log of a
thread: the entries that decide what is registered, admitted, concluded, retracted,
superseded or pinned. An entry at seq ``s`` carries in its envelope ::

    "lifecycle": {"count": k, "head": B64}

where ``k`` is the number of lifecycle entries among seqs ``0 .. s-1`` and ``head`` is
``H_k`` of the hash chain over their RFC 9162 leaf hashes, in seq order::

    H_0     = 32 zero bytes
    H_(i+1) = SHA-256("registre/lifecycle/v1\\n" || H_i || leaf_hash(L_i))

Because the head signed at seq ``n-1`` covers every lifecycle entry of a tree of size ``n``,
a partial bundle that discloses the entry at seq ``n-1`` and a set of lifecycle entries
whose chain reproduces that head has disclosed *every* lifecycle entry of the tree: leaving
out a retraction or a supersession changes the chain (:class:`LifecycleOmittedError`). The
verifier then replays the whole lifecycle, and knows the status of every id at the
checkpoint. ``specs/entries.md`` (the field) and ``specs/verify.md`` (steps 3.5 and 4.6)
are normative.

Entries signed before the field existed do not carry it (*legacy* entries). Once an entry of
a thread carries it, every later entry must (:class:`LifecycleHeadMissingError`); the ledger's
append path computes the head of a legacy thread from its stored lifecycle entries at the
first append after the upgrade.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from registre.attest.entries.body_base import LIFECYCLE_KINDS
from registre.attest.tree import HASH_SIZE
from registre.errors import MalformedError, VerificationError

__all__ = [
    "EMPTY_LIFECYCLE",
    "LIFECYCLE_CHAIN_PREFIX",
    "ChainMark",
    "ChainProgress",
    "LifecycleAnchorMissingError",
    "LifecycleHead",
    "LifecycleHeadFormatError",
    "LifecycleHeadMismatchError",
    "LifecycleHeadMissingError",
    "LifecycleOmittedError",
    "check_lifecycle_chain",
    "is_lifecycle_kind",
]

LIFECYCLE_CHAIN_PREFIX = b"registre/lifecycle/v1\n"


class LifecycleHeadFormatError(MalformedError):
    """An envelope ``lifecycle`` field that is not ``{"count": k, "head": B64 of 32 bytes}``."""


class LifecycleHeadMismatchError(VerificationError):
    """A full bundle's entry whose signed lifecycle head is not the chain of the entries
    before it."""


class LifecycleHeadMissingError(VerificationError):
    """An entry without a lifecycle head after an entry of the same thread that has one."""


class LifecycleOmittedError(VerificationError):
    """A partial bundle whose disclosed lifecycle entries do not reproduce the signed
    lifecycle head: a lifecycle entry (a retraction, a supersession, ...) was left out."""


class LifecycleAnchorMissingError(VerificationError):
    """A partial bundle that does not disclose the entry at seq head-1 with its lifecycle
    head, so the completeness of its lifecycle cannot be proved."""


@dataclass(frozen=True, slots=True)
class LifecycleHead:
    """``count`` lifecycle entries so far and the chain head ``head`` over them."""

    count: int
    head: bytes

    def extend(self, leaf_hash: bytes) -> LifecycleHead:
        """The head after one more lifecycle entry whose RFC 9162 leaf hash is ``leaf_hash``."""
        digest = hashlib.sha256(LIFECYCLE_CHAIN_PREFIX + self.head + leaf_hash).digest()
        return LifecycleHead(self.count + 1, digest)

    def after(self, kind: str, leaf_hash: bytes) -> LifecycleHead:
        """The head after an entry of ``kind``: extended if it is a lifecycle kind."""
        return self.extend(leaf_hash) if kind in LIFECYCLE_KINDS else self

    def to_json(self) -> dict[str, object]:
        return {"count": self.count, "head": base64.b64encode(self.head).decode("ascii")}

    @classmethod
    def from_json(cls, value: object) -> LifecycleHead:
        """Parse the envelope field; :class:`LifecycleHeadFormatError` unless it is exactly
        ``{"count": integer >= 0, "head": canonical base64 of 32 bytes}``."""
        if not isinstance(value, Mapping) or set(value) != {"count", "head"}:
            raise LifecycleHeadFormatError(
                '"lifecycle" must be an object with exactly "count" and "head"'
            )
        count, text = value["count"], value["head"]
        if type(count) is not int or not 0 <= count <= 2**53 - 1:
            raise LifecycleHeadFormatError('"lifecycle.count" must be a safe integer >= 0')
        try:
            raw = base64.b64decode(text, validate=True) if isinstance(text, str) else b""
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != HASH_SIZE or base64.b64encode(raw).decode("ascii") != text:
            raise LifecycleHeadFormatError('"lifecycle.head" must be 32 bytes in canonical base64')
        return cls(count, raw)

    def describe(self) -> str:
        return f"{_entries(self.count, 'lifecycle ')}, head {base64.b64encode(self.head).decode()}"


EMPTY_LIFECYCLE = LifecycleHead(0, bytes(HASH_SIZE))
"""The head before any lifecycle entry."""


def is_lifecycle_kind(kind: str) -> bool:
    """Whether entries of ``kind`` belong to the lifecycle sub-log."""
    return kind in LIFECYCLE_KINDS


@dataclass(frozen=True, slots=True)
class ChainMark:
    """What the chain check needs of one verified entry: its seq, whether it is a lifecycle
    entry, its leaf hash, and the lifecycle head it signs (None: a legacy entry)."""

    seq: int
    lifecycle: bool
    leaf_hash: bytes
    signed: LifecycleHead | None


@dataclass
class ChainProgress:
    """The seq of the entry at fault, once :func:`check_lifecycle_chain` has raised."""

    seq: int | None = None


def check_lifecycle_chain(
    marks: Iterable[ChainMark],
    *,
    full: bool,
    tree_size: int,
    progress: ChainProgress | None = None,
) -> tuple[str, LifecycleHead | None]:
    """Steps 3.5 (``full``) and 4.6 (partial) over the verified entries, in seq order.

    Walks the chain over the lifecycle entries given; every entry's signed head must equal
    the chain of those before it -- in a full bundle :class:`LifecycleHeadMismatchError`, in
    a partial one :class:`LifecycleOmittedError` (an undisclosed lifecycle entry lies before
    it). Once one entry carries a head, every later one must
    (:class:`LifecycleHeadMissingError`). A partial bundle must disclose the entry at seq
    ``tree_size - 1`` carrying a head (:class:`LifecycleAnchorMissingError`), which proves
    that the disclosed lifecycle entries are all those of the tree.

    Returns a sentence for the report and the lifecycle head of the whole tree (None: a full
    bundle of legacy entries only, or an empty tree).
    """
    running = EMPTY_LIFECYCLE
    seen_head = False
    last: ChainMark | None = None
    progress = ChainProgress() if progress is None else progress
    for mark in marks:
        last = mark
        progress.seq = mark.seq
        if mark.signed is None:
            if seen_head:
                raise LifecycleHeadMissingError(
                    f"entry seq {mark.seq} carries no lifecycle head, but an earlier entry of "
                    "the thread does: every entry after the first with a head must sign one"
                )
        else:
            seen_head = True
            if mark.signed != running:
                raise _mismatch(mark, running, full)
        if mark.lifecycle:
            running = running.extend(mark.leaf_hash)
    progress.seq = None
    if full:
        if not seen_head:
            return "no entry carries a lifecycle head (legacy entries)", None
        return f"every lifecycle head recomputed ({running.count} lifecycle entries)", running
    if last is None or last.seq != tree_size - 1 or last.signed is None:
        progress.seq = None if last is None or last.seq != tree_size - 1 else last.seq
        where = "is not disclosed" if last is None or last.seq != tree_size - 1 else "is legacy"
        raise LifecycleAnchorMissingError(
            f"the entry at seq {tree_size - 1}, the last of the head's tree, {where}: without "
            "its signed lifecycle head the bundle cannot prove it discloses every lifecycle "
            "entry, so a later retraction or supersession could be hidden"
        )
    return (
        f"all {running.count} lifecycle entries of the tree disclosed (the head signed at seq "
        f"{tree_size - 1} reproduced)",
        running,
    )


def _mismatch(mark: ChainMark, running: LifecycleHead, full: bool) -> VerificationError:
    assert mark.signed is not None
    if full:
        return LifecycleHeadMismatchError(
            f"entry seq {mark.seq} signs a lifecycle head of {_entries(mark.signed.count)}, "
            f"but the {running.count} lifecycle entries before it chain to another: the "
            "writer committed to a lifecycle history this bundle does not hold"
        )
    missing = mark.signed.count - running.count
    detail = (
        f"{_entries(missing, 'lifecycle ')} before it not disclosed"
        if missing > 0
        else "the disclosed lifecycle entries before it are not the ones it signed after"
    )
    return LifecycleOmittedError(
        f"entry seq {mark.seq} signs a lifecycle head of {_entries(mark.signed.count)}; the "
        f"bundle discloses {running.count} before it: {detail} (a retraction or supersession "
        "may have been hidden)"
    )


def _entries(count: int, what: str = "") -> str:
    """``1 entry``, ``3 entries`` (``what`` before the noun: ``2 lifecycle entries``)."""
    return f"{count} {what}{'entry' if count == 1 else 'entries'}"
