"""The head a writer signs over is one it verified: no entry it did not check is built upon.

Whoever can write the database without the key (a SQLite file's owner; on PostgreSQL the
runtime role, which may insert rows and move the head) can put an entry row at the head and
move the head over it: the root and frontier are computed from public hashes. Every write
path that signs something committing to the head (an append, a lifecycle step, a compaction,
a model call, a checkpoint) therefore calls :func:`require_verified_head` under the thread
lock, right after reading the head and before folding or signing anything
(``specs/storage.md`` section 5, issue 29 item 1). It checks, for the thread's bound key:

* **warm** -- this process last verified (or itself wrote) head ``(s, root)`` of this
  database's thread under this key: every entry ``s .. n-1`` has its signature verified
  under the key over the bytes where a canonical leaf holds its envelope (the key signs only
  canonical envelopes of valid bodies: nothing more need be parsed strictly), is the entry
  of this origin at its seq, its ``leaf_hash``
  column is ``H(0x00 ‖ leaf)`` and its ``prev`` is the tree head before it; the frontier
  reached must be the stored one. A head unchanged since costs nothing; the usual case, the
  writer's own last append, is a dictionary lookup.
* **cold** -- nothing remembered (a new process: every CLI command): the last entry ``n-1`` is
  checked as above, and the frontier of the ``n-1`` entries before it (the stored head's
  subtrees but its last, and the subtrees under that one: none for an odd ``n``, else at
  most one block of leaf hashes and one stored row per level from 4) must fold to that
  entry's signed ``prev.root`` and, extended by its leaf hash, give the stored frontier.
  The key signed entry ``n-1`` over exactly that tree, and a writer signs only over a head
  it verified, so the whole head is the key's (a database written by a registre older than
  this rule: ``verify --db`` once).

A failure raises :class:`UnverifiedHeadError` naming the thread, the seq and what is wrong,
with nothing written: exit 1, and the hint says how to find and remove the rows.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from sqlalchemy import Connection

from registre.attest.entries import ENTRY_SIGNATURE_PREFIX
from registre.attest.notes import Verifier
from registre.attest.tree import CompactRange, leaf_hash
from registre.errors import VerificationError
from registre.ledger.errors import StoreCorruptError
from registre.ledger.store.nodes import StoredHashSource
from registre.ledger.store.schema import entry_range, tables

__all__ = [
    "UnverifiedHeadError",
    "forget_verified_heads",
    "remember_verified_head",
    "require_verified_head",
    "verifier_of_vkey",
]

_entry = tables.entry
_LEAVES = entry_range(_entry.c.seq, _entry.c.leaf, _entry.c.leaf_hash)
_BATCH = 500


class UnverifiedHeadError(StoreCorruptError):
    """The thread's head covers an entry the thread's key did not sign (or whose stored row
    does not match what it signed): nothing was signed over it and nothing was written."""


@dataclass(frozen=True)
class _Verified:
    size: int
    root: bytes
    frontier: CompactRange


# (database, thread, vkey) -> the last head this process verified or wrote under that key
_HEADS: dict[tuple[object, str, str, bytes], _Verified] = {}
_HEADS_MAX = 4096
_VERIFIERS: dict[str, Verifier] = {}


def verifier_of_vkey(vkey: str) -> Verifier:
    """``Verifier.from_vkey(vkey)``, built once per key string (building one checks the key)."""
    found = _VERIFIERS.get(vkey)
    if found is None:
        if len(_VERIFIERS) >= 64:
            _VERIFIERS.clear()
        found = _VERIFIERS[vkey] = Verifier.from_vkey(vkey)
    return found


def _place(conn: Connection, thread: str, key: Verifier) -> tuple[object, str, str, bytes]:
    return (conn.engine.url, thread, key.name, key.public_key)


def forget_verified_heads() -> None:
    """Forget every remembered head (tests; a process that wants every check cold)."""
    _HEADS.clear()


def remember_verified_head(
    conn: Connection, thread: str, key: Verifier, frontier: CompactRange
) -> None:
    """Remember ``frontier`` as verified for ``thread`` under ``key``: the writer built it
    over a head it verified, with entries it signed itself. A transaction that then rolls
    back leaves a head no stored tree reaches with that root: never matched, so harmless."""
    if len(_HEADS) >= _HEADS_MAX:
        _HEADS.clear()
    _HEADS[_place(conn, thread, key)] = _Verified(frontier.size, frontier.root(), frontier.copy())


def require_verified_head(
    conn: Connection, thread: str, origin: str, frontier: CompactRange, key: Verifier
) -> None:
    """Refuse (UnverifiedHeadError) unless every entry of the head ``frontier`` (read under
    the thread lock, its root already checked against its hashes) is the key's (module
    docstring), and remember it as verified."""
    size = frontier.size
    if size == 0:
        return
    place = _place(conn, thread, key)
    known = _HEADS.get(place)
    if known is not None and known.size == size and known.root == frontier.root():
        return
    if known is not None and known.size < size and _prev_matches(conn, thread, known):
        reached = _verify_run(conn, thread, origin, known.frontier.copy(), size, key)
    else:
        reached = _verify_anchor(conn, thread, origin, frontier, key)
    if reached.hashes() != frontier.hashes():
        raise _refused(
            thread,
            size - 1,
            "the stored head is not the tree its signed entries make",
        )
    remember_verified_head(conn, thread, key, reached)


def _prev_matches(conn: Connection, thread: str, known: _Verified) -> bool:
    """Whether the entry at the remembered size signs the remembered head as its ``prev``
    (else the memory is of another tree -- a restored file -- and the cold check runs)."""
    row = conn.execute(
        _LEAVES, {"thread": thread, "start": known.size, "stop": known.size + 1}
    ).one_or_none()
    if row is None:
        return False
    try:
        signed = _prev_of(bytes(row.leaf))
    except (ValueError, TypeError, KeyError):
        return False
    return signed == (known.size, known.root)


def _prev_of(leaf: bytes) -> tuple[int, bytes]:
    prev = json.loads(leaf)["entry"]["prev"]
    return int(prev["size"]), base64.b64decode(prev["root"], validate=True)


def _verify_run(
    conn: Connection, thread: str, origin: str, tree: CompactRange, stop: int, key: Verifier
) -> CompactRange:
    """Check entries ``tree.size .. stop-1`` one by one on ``tree``; return it extended."""
    while tree.size < stop:
        start = tree.size
        rows = conn.execute(
            _LEAVES, {"thread": thread, "start": start, "stop": min(stop, start + _BATCH)}
        ).all()
        for row in rows:
            if int(row.seq) != tree.size:
                break
            entry = _checked_entry(thread, origin, tree.size, row.leaf, row.leaf_hash, key)
            if entry.prev_root != tree.root():
                raise _refused(thread, entry.seq, "its prev root is not the tree before it")
            tree.append(entry.leaf_hash)
        if tree.size == start or (rows and tree.size < start + len(rows)):
            raise _refused(thread, tree.size, "the entry row is missing")
    return tree


def _verify_anchor(
    conn: Connection, thread: str, origin: str, frontier: CompactRange, key: Verifier
) -> CompactRange:
    """The cold check: entry ``n-1`` signed by ``key`` over the tree before it. That tree's
    frontier shares the stored head's subtrees above the lowest set bit ``k`` of ``n``; only
    the ``k`` subtrees under the head's last one are read (none for an odd ``n``, one block
    of leaf hashes below level 4)."""
    size = frontier.size
    last = size - 1
    row = conn.execute(_LEAVES, {"thread": thread, "start": last, "stop": size}).one_or_none()
    if row is None:
        raise _refused(thread, last, "the entry row is missing")
    entry = _checked_entry(thread, origin, last, row.leaf, row.leaf_hash, key)
    low = (size & -size).bit_length() - 1  # the head's last subtree has 2**low leaves
    hashes = frontier.hashes()[:-1]
    source = StoredHashSource(conn, thread, last)
    position = size - (1 << low)
    for level in reversed(range(low)):
        hashes.append(source.node(level, position >> level))
        position += 1 << level
    before = CompactRange.restore(last, hashes)
    if before.root() != entry.prev_root:
        raise _refused(thread, last, "the stored tree before it is not the one it signs")
    before.append(entry.leaf_hash)
    return before


_HEAD, _TAIL, _SIG_B64 = b'{"entry":', b',"sig":"', 88


@dataclass(frozen=True)
class _Signed:
    """What the checks read of an entry whose signature verified."""

    seq: int
    log: str
    prev_root: bytes
    leaf_hash: bytes


def _checked_entry(
    thread: str, origin: str, seq: int, leaf: object, stored_hash: object, key: Verifier
) -> _Signed:
    """The entry stored at ``seq``, once its signature verifies under ``key`` over the bytes
    where a canonical leaf holds its envelope: the key signs only canonical envelopes, so
    bytes it signed need no canonical-form check, and the fields are read with ``json``."""
    if not isinstance(leaf, bytes | memoryview):
        raise _refused(thread, seq, "the leaf is not bytes")
    data = bytes(leaf)
    end = len(data) - 2 - _SIG_B64
    if not (
        data.startswith(_HEAD) and data[end - len(_TAIL) : end] == _TAIL and data[-2:] == b'"}'
    ):
        raise _refused(thread, seq, "the leaf is not shaped as a signed entry")
    try:
        key.verify(
            ENTRY_SIGNATURE_PREFIX + data[len(_HEAD) : end - len(_TAIL)],
            base64.b64decode(data[end:-2], validate=True),
        )
        envelope = json.loads(data)["entry"]
        signed = _Signed(
            int(envelope["seq"]),
            str(envelope["log"]),
            base64.b64decode(envelope["prev"]["root"], validate=True),
            leaf_hash(data),
        )
    except (VerificationError, ValueError, TypeError, KeyError):
        raise _refused(thread, seq, "it does not verify under the thread's key") from None
    if signed.seq != seq or signed.log != origin:
        raise _refused(thread, seq, f"the leaf is entry {signed.seq} of {signed.log}")
    if not isinstance(stored_hash, bytes | memoryview) or bytes(stored_hash) != signed.leaf_hash:
        raise _refused(thread, seq, "its leaf_hash column is not the hash of its leaf")
    return signed


def _refused(thread: str, seq: int, why: str) -> UnverifiedHeadError:
    return UnverifiedHeadError(
        f"thread {thread}: entry {seq} below the head was not written by this thread's key: "
        f"{why}; nothing was signed over it and nothing was written"
    ).with_hint(
        "someone wrote the database without the key: `registre verify --db` names every bad "
        "row; restore the database from a backup taken before the edit (specs/storage.md "
        "section 3.3)"
    )
