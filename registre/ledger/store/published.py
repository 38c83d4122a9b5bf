"""The highest signed checkpoint of each thread, recorded outside the database (THREATS row 32).

A database file restored from an older copy (or a backup taken without its WAL) holds a
shorter history than the one already published: left alone, registre would append to it and
sign a second checkpoint at a size it already published, with another root -- a fork. So each
checkpoint registre signs is also recorded in a small file beside a SQLite database,
``<database>.published`` (JSON, written atomically), and the writer refuses
(:class:`DatabaseBehindError`) to append to or sign for a thread whose head is smaller than the
recorded size, or whose root at the recorded size is not the recorded root. ``verify --db``
reports the same (:func:`published_problem`).

The file is written inside the checkpoint's write transaction, after the note is signed, so
it never records a size the database does not already hold; a crash before the commit leaves a
record whose size and root the database still has. Sizes only grow. The first checkpoint ever
signed creates the file.

A database holding a checkpoint its thread's key signed at a size the record does not reach
-- the file deleted or rolled back, or the database moved or restored without it -- is not a
fresh start: :class:`PublishedRecordMissingError` (issue 29 item 4). A database is moved or
copied together with its record; a record that was lost is written again only by
``registre reanchor`` (:func:`reanchor_published`, after verification and, unless the
operator says otherwise, the witnesses), which notes the decision in the file's
``reanchored`` list.

**PostgreSQL** databases get no file: a restore there is an administrator's act on the
server, and the defence is the witnesses, which refuse a checkpoint that is not consistent
with the one they cosigned (``specs/witness.md``). In-memory SQLite databases get none either.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, Engine, bindparam, select

from registre.attest.notes import Verifier, open_checkpoint
from registre.errors import RegistreError
from registre.ledger.errors import StoreCorruptError
from registre.ledger.store.schema import tables

__all__ = [
    "REANCHOR_HINT",
    "DatabaseBehindError",
    "PublishedHead",
    "PublishedRecordMissingError",
    "published_file",
    "published_problem",
    "read_published",
    "read_published_head",
    "reanchor_published",
    "record_problem",
    "record_published",
]

_SUFFIX = ".published"
_MAX_BYTES = 16 * 1024 * 1024
_CACHE: dict[Path, tuple[tuple[int, int, int], dict[str, PublishedHead]]] = {}
_FILES: weakref.WeakKeyDictionary[Engine, Path | None] = weakref.WeakKeyDictionary()


REANCHOR_HINT = (
    "put back the .published file that was beside this database (a database is moved or "
    "copied together with it); if only that file was lost, `registre reanchor --witness "
    "VKEY@URL` records this database's checkpoints again once the witnesses confirm it is not "
    "behind (specs/storage.md 3.2)"
)
"""How to recover from a record that does not reach the database's checkpoints."""


class DatabaseBehindError(StoreCorruptError):
    """The database is behind a checkpoint registre already signed for the thread: it was
    restored from an older copy, or replaced. Nothing is appended or signed."""

    hint = (
        "restore the newest copy of the database (its -wal file too); if this database is "
        "the one to keep, its published history was lost and the thread must not be extended"
    )


class PublishedRecordMissingError(DatabaseBehindError):
    """A SQLite database holds a checkpoint its thread's key signed at a size the
    ``.published`` record beside it does not reach (no record, or a smaller one): the record
    was deleted or rolled back, or the database was moved or restored without it. Not a fresh
    start; nothing is appended or signed until the record is put back or re-anchored."""

    hint = REANCHOR_HINT


@dataclass(frozen=True)
class PublishedHead:
    """The largest checkpoint signed for ``origin``: ``size`` entries with root ``root``."""

    origin: str
    size: int
    root: bytes


def published_file(conn: Connection) -> Path | None:
    """Where the published heads of this connection's database are kept (None: none are)."""
    engine = conn.engine
    try:
        return _FILES[engine]
    except KeyError:
        pass
    url = engine.url
    path = None
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        assert url.database is not None
        database = url.database
        if database.startswith("file:"):  # a read-only ledger opened by URI (engine.py)
            database = database.removeprefix("file:")
        path = Path(database + _SUFFIX)
    _FILES[engine] = path  # an engine's URL never changes
    return path


def read_published(conn: Connection) -> dict[str, PublishedHead]:
    """The recorded heads by origin ({} when there is no file). StoreCorruptError for a file
    that is not one registre wrote."""
    return dict(_published(conn))


def read_published_head(conn: Connection, origin: str) -> PublishedHead | None:
    """``read_published(conn).get(origin)``, without copying the record of every thread (the
    file is looked at all the same: another process may have signed since)."""
    return _published(conn).get(origin)


def _published(conn: Connection) -> Mapping[str, PublishedHead]:
    """The recorded heads, read again whenever the file's inode, time or size changed;
    the mapping is shared with the cache: never changed by callers."""
    path = published_file(conn)
    if path is None:
        return {}
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise StoreCorruptError(f"cannot read {path}: {exc.strerror}") from None
    stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    cached = _CACHE.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    heads = _read(path)
    _CACHE[path] = (stamp, heads)
    return heads


def _read(path: Path) -> dict[str, PublishedHead]:
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise StoreCorruptError(f"cannot read {path}: {exc.strerror}") from None
    try:
        document = json.loads(data)
        heads = {
            origin: PublishedHead(origin, int(head["size"]), base64.b64decode(head["root"]))
            for origin, head in document["threads"].items()
            if type(head["size"]) is int
        }
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
        raise StoreCorruptError(f"{path} is not a published-checkpoint record") from exc
    return heads


def record_published(conn: Connection, origin: str, size: int, root: bytes) -> None:
    """Record that the checkpoint (``size``, ``root``) was signed for ``origin``, unless a
    larger one is recorded. Called in the checkpoint's write transaction (which holds the
    database write lock on SQLite, so writers of the file are serialised)."""
    path = published_file(conn)
    if path is None:
        return
    heads = read_published(conn)
    known = heads.get(origin)
    if known is not None and known.size >= size:
        return
    heads[origin] = PublishedHead(origin, size, root)
    _write(path, heads, _history(path))


def reanchor_published(
    conn: Connection, found: Sequence[PublishedHead], witnesses: Sequence[str], when: str
) -> list[PublishedHead]:
    """Record the heads ``found`` (each thread's largest checkpoint, verified by the caller)
    that go beyond the record, and note the re-anchoring in the file's ``reanchored`` list
    (``{"time": when, "witnesses": [names], "threads": {origin: size}}``; ``witnesses`` empty:
    none was asked). Returns the heads recorded (none: nothing is written). Called in a write
    transaction, like :func:`record_published`; a recorded size never shrinks. StoreCorruptError
    for a database that keeps no record (PostgreSQL, in-memory SQLite)."""
    path = published_file(conn)
    if path is None:
        raise StoreCorruptError("this database keeps no .published record")
    heads = read_published(conn)
    raised = [
        head for head in found if head.origin not in heads or heads[head.origin].size < head.size
    ]
    if not raised:
        return []
    for head in raised:
        heads[head.origin] = head
    event = {
        "time": when,
        "witnesses": list(witnesses),
        "threads": {head.origin: head.size for head in raised},
    }
    _write(path, heads, [*_history(path), event])
    return raised


def _history(path: Path) -> list[object]:
    """The ``reanchored`` list of the record at ``path`` ([] when there is none)."""
    try:
        with open(path, "rb") as handle:
            document = json.loads(handle.read(_MAX_BYTES + 1))
    except (OSError, ValueError):
        return []
    history = document.get("reanchored") if isinstance(document, dict) else None
    return list(history) if isinstance(history, list) else []


def _write(path: Path, heads: Mapping[str, PublishedHead], history: list[object]) -> None:
    """Write the record (temporary file, fsync, rename): every head, and ``history``."""
    document: dict[str, object] = {
        "v": 1,
        "about": "highest checkpoint registre signed per thread origin; see specs/storage.md",
        "threads": {
            head.origin: {"size": head.size, "root": base64.b64encode(head.root).decode()}
            for head in sorted(heads.values(), key=lambda h: h.origin)
        },
    }
    if history:
        document["reanchored"] = history
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


_LARGEST_SIGNED = (
    select(tables.checkpoint.c.size, tables.checkpoint.c.note, tables.thread.c.vkey)
    .join(tables.thread, tables.thread.c.id == tables.checkpoint.c.thread)
    .where(
        tables.checkpoint.c.thread == bindparam("thread"),
        tables.checkpoint.c.size <= tables.thread.c.size,
    )
    .order_by(tables.checkpoint.c.size.desc())
    .limit(1)
)


def record_problem(conn: Connection, thread: str, published: PublishedHead | None) -> str | None:
    """What is wrong with the record beside a SQLite file for ``thread`` (its entry
    ``published``), or None: the database holds a checkpoint registre signed (its note opens
    under the thread's key) at a size the record does not reach -- the file was deleted or
    rolled back, or the database moved or was restored without it. Such a database is not a
    fresh start (issue 29 item 4). A row registre did not sign is not counted here: the
    checks of stored checkpoints and ``verify --db`` name it."""
    path = published_file(conn)
    if path is None:
        return None
    row = conn.execute(_LARGEST_SIGNED, {"thread": thread}).one_or_none()
    if row is None or (published is not None and published.size >= int(row.size)):
        return None
    if not _signed_at(row.note, row.vkey, int(row.size)):
        return None
    recorded = "no record" if published is None else f"only size {published.size}"
    return (
        f"the database holds a checkpoint signed at size {row.size}, but {path.name} beside it "
        f"has {recorded}: the record was deleted or rolled back, or the database was copied "
        "or restored without it"
    )


def _signed_at(note: object, vkey: object, size: int) -> bool:
    """Whether ``note`` is a checkpoint at ``size`` signed by the verifier key ``vkey``."""
    if not isinstance(note, str) or not isinstance(vkey, str):
        return False
    try:
        return open_checkpoint(note, Verifier.from_vkey(vkey)).checkpoint.size == size
    except RegistreError:
        return False


def published_problem(
    published: PublishedHead | None, size: int, root_at_published: bytes | None
) -> str | None:
    """What is wrong with a thread whose head is ``size`` and whose root at the published
    size is ``root_at_published`` (None if not computed), or None if nothing is."""
    if published is None:
        return None
    if size < published.size:
        return (
            f"the database holds {size} entries, but a checkpoint at size {published.size} "
            "was already signed: the database was restored from an older copy"
        )
    if root_at_published is not None and root_at_published != published.root:
        return (
            f"the root at size {published.size} is not the one of the checkpoint already "
            "signed at that size: the database was replaced by another history"
        )
    return None
