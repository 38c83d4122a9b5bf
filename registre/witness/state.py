"""The witness's memory: one SQLite file, written only through :class:`WitnessState`.

Tables (``witness.db`` in the state directory; WAL, ``synchronous=FULL``, writes under
``BEGIN IMMEDIATE``):

* ``followed`` -- the logs the witness follows: a log verifier key (vkey) and an origin
  prefix; the key vouches for every origin ``PREFIX + something``.
* ``latest`` -- per origin, the last checkpoint cosigned: size, root, the note as received
  and the cosignature line returned. Its size never decreases (a trigger refuses it).
* ``cosigned`` -- every distinct checkpoint (origin, size, root) ever cosigned, with the note
  and the first cosignature; append-only (triggers refuse UPDATE and DELETE).
* ``evidence`` -- log-signed checkpoints refused as inconsistent with ``latest``, once per
  distinct note; append-only. ``kind`` is ``split-view`` (another root at the held size: two
  signed checkpoints that cannot both be true, conclusive) or ``bad-proof`` (the proof did not
  verify: a fork, or a client sending a wrong proof). Only a log key can produce these notes,
  so the table grows only with what the log signed: each is kept in its smallest form (the
  text and the log's verified line, whatever other lines came with it), once, and at most
  :data:`MAX_BAD_PROOFS` ``bad-proof`` rows per origin (issue 29 item 12).

:meth:`WitnessState.advance` is the atomic step of the protocol: reading the stored size and
root, running the caller's checks, and storing the new checkpoint happen in one write
transaction, and the update is a compare-and-swap on the size read, so two requests can
never both advance an origin from the same size (C2SP tlog-witness, "performed atomically").

:meth:`WitnessState.latest_by_origin_hash` finds an origin by the SHA-256 of its name (the
monitoring path of C2SP tlog-witness) through an in-memory map, refreshed from ``latest`` at
most once every :data:`ORIGIN_RESCAN_SECONDS` on a miss, so unknown hashes cannot make every
request scan the table.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from registre.attest.notes import Checkpoint
from registre.attest.tree import empty_root
from registre.witness.errors import WitnessStateError

__all__ = [
    "BUSY_TIMEOUT_MS",
    "MAX_BAD_PROOFS",
    "ORIGIN_RESCAN_SECONDS",
    "STATE_VERSION",
    "CosignedRecord",
    "FollowedLog",
    "LatestCheckpoint",
    "RefusedCheckpoint",
    "WitnessState",
]

MAX_BAD_PROOFS = 32
"""``bad-proof`` evidence rows kept per origin (later ones are refused all the same)."""

STATE_VERSION = 1
BUSY_TIMEOUT_MS = 30_000
ORIGIN_RESCAN_SECONDS = 1.0
"""How often, at most, an unknown origin hash makes the state re-read the origins it holds
(origins cosigned by this object are known at once; C2SP lets a witness delay the monitoring
view by up to an hour)."""

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS followed (vkey TEXT NOT NULL, origin_prefix TEXT NOT NULL, "
    "added TEXT NOT NULL, PRIMARY KEY (vkey, origin_prefix))",
    "CREATE TABLE IF NOT EXISTS latest (origin TEXT PRIMARY KEY, size INTEGER NOT NULL, "
    "root BLOB NOT NULL, note TEXT NOT NULL, cosignature TEXT NOT NULL, updated TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS cosigned (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "origin TEXT NOT NULL, size INTEGER NOT NULL, root BLOB NOT NULL, note TEXT NOT NULL, "
    "cosignature TEXT NOT NULL, timestamp INTEGER NOT NULL, received TEXT NOT NULL, "
    "UNIQUE (origin, size, root))",
    "CREATE TABLE IF NOT EXISTS evidence (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "origin TEXT NOT NULL, size INTEGER NOT NULL, root BLOB NOT NULL, note TEXT NOT NULL, "
    "note_sha256 BLOB NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('split-view', "
    "'bad-proof')), reason TEXT NOT NULL, received TEXT NOT NULL, "
    "UNIQUE (origin, note_sha256))",
    "CREATE TRIGGER IF NOT EXISTS latest_forward BEFORE UPDATE ON latest "
    "WHEN NEW.origin IS NOT OLD.origin OR NEW.size < OLD.size "
    "BEGIN SELECT RAISE(ABORT, 'witness: a stored checkpoint only moves forward'); END",
    "CREATE TRIGGER IF NOT EXISTS latest_keep BEFORE DELETE ON latest "
    "BEGIN SELECT RAISE(ABORT, 'witness: stored checkpoints are never deleted'); END",
    *(
        f"CREATE TRIGGER IF NOT EXISTS {table}_{op.lower()} BEFORE {op} ON {table} "
        f"BEGIN SELECT RAISE(ABORT, 'witness: {table} is append-only'); END"
        for table in ("cosigned", "evidence")
        for op in ("UPDATE", "DELETE")
    ),
]


@dataclass(frozen=True)
class FollowedLog:
    """A followed log: its verifier key vouches for origins ``origin_prefix + ...``."""

    vkey: str
    origin_prefix: str

    def covers(self, origin: str) -> bool:
        """Whether ``origin`` is this prefix followed by at least one character."""
        return len(origin) > len(self.origin_prefix) and origin.startswith(self.origin_prefix)


@dataclass(frozen=True)
class LatestCheckpoint:
    """What the witness holds for an origin: size 0 and the empty root if it holds nothing."""

    origin: str
    size: int
    root: bytes
    note: str | None
    cosignature: str | None


@dataclass(frozen=True)
class CosignedRecord:
    """A checkpoint the witness cosigned, with the note it was given and its cosignature."""

    origin: str
    size: int
    root: bytes
    note: str
    cosignature: str
    timestamp: int
    received: str


@dataclass(frozen=True)
class RefusedCheckpoint:
    """A log-signed checkpoint the witness refused as inconsistent: ``kind`` (``split-view``
    or ``bad-proof``, see the module docstring) and why."""

    origin: str
    size: int
    root: bytes
    note: str
    kind: str
    reason: str
    received: str


class WitnessState:
    """The witness database. Safe to share between threads (one connection per thread).

    Use :meth:`create` once, then :meth:`open`; close with :meth:`close`.
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._writer = threading.Lock()
        self._hash_lock = threading.Lock()
        self._origin_hashes: dict[bytes, str] = {}
        self._origins_scanned = -ORIGIN_RESCAN_SECONDS  # monotonic time of the last scan

    @classmethod
    def create(cls, path: Path) -> WitnessState:
        """Make a new state file; WitnessStateError if one exists."""
        if path.exists():
            raise WitnessStateError(f"witness state {path} already exists")
        path.parent.mkdir(parents=True, exist_ok=True)
        state = cls(path)
        with state._write() as conn:
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('version', ?)", (str(STATE_VERSION),)
            )
        return state

    @classmethod
    def open(cls, path: Path, *, read_only: bool = False) -> WitnessState:
        """Open an existing state file; WitnessStateError if it is missing, unknown, or --
        unless ``read_only`` -- cannot be written (a read-only file, folder or medium).

        ``read_only`` opens it for reading only (SQLite ``mode=ro``), which works on
        read-only media; every write then raises WitnessStateError.
        """
        if not path.exists():
            raise WitnessStateError(f"no witness state at {path}").with_hint(
                "run `registre witness init` (or pass --state-dir)"
            )
        state = cls(path, read_only=read_only)
        try:
            row = state._conn().execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        except sqlite3.DatabaseError as exc:
            state.close()
            if _cannot_write(exc) or _cannot_open(exc):
                raise WitnessStateError(f"cannot open witness state {path}: {exc}").with_hint(
                    "check that this user may read the file and write its folder; "
                    "`registre witness show` reads a read-only state"
                ) from None
            raise WitnessStateError(f"{path} is not a witness state file ({exc})") from None
        if row is None or row[0] != str(STATE_VERSION):
            state.close()
            raise WitnessStateError(
                f"{path} has witness state version {row and row[0]}; "
                f"this registre knows {STATE_VERSION}"
            )
        if not read_only:
            state._check_writable()
        return state

    def _check_writable(self) -> None:
        """Write nothing, but as far as a write goes: WitnessStateError (and the state
        closed) if this file cannot be written."""
        conn = self._conn()
        try:
            with self._writer:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute("UPDATE meta SET value = value WHERE key = 'version'")
                finally:
                    conn.execute("ROLLBACK")
        except sqlite3.OperationalError as exc:
            if not (_cannot_write(exc) or _cannot_open(exc)):
                raise
            self.close()
            raise WitnessStateError(f"witness state {self.path} is read-only ({exc})").with_hint(
                "make the file and its folder writable by this user; "
                "`registre witness show` only reads"
            ) from None

    def close(self) -> None:
        """Close every connection this object opened (call once no thread uses it)."""
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    # --- connections and transactions ---------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self.read_only:
                conn = sqlite3.connect(
                    self.path.resolve().as_uri() + "?mode=ro",
                    uri=True,
                    timeout=BUSY_TIMEOUT_MS / 1000,
                    isolation_level=None,
                    check_same_thread=False,
                )
            else:
                conn = sqlite3.connect(
                    self.path,
                    timeout=BUSY_TIMEOUT_MS / 1000,
                    isolation_level=None,
                    check_same_thread=False,
                )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        # Threads of this process take turns on a mutex before BEGIN IMMEDIATE: correctness
        # comes from the database lock (which also holds against other processes), the mutex
        # only spares waiting threads SQLite's sleep-and-retry busy handler.
        if self.read_only:
            raise WitnessStateError(f"witness state {self.path} was opened read-only")
        conn = self._conn()
        with self._writer:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # --- followed logs ------------------------------------------------------------------

    def follow(self, vkey: str, origin_prefix: str) -> bool:
        """Follow the log key ``vkey`` for origins under ``origin_prefix``; False if already."""
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO followed (vkey, origin_prefix, added) VALUES (?, ?, ?)",
                (vkey, origin_prefix, _now()),
            )
            return cursor.rowcount == 1

    def followed(self) -> list[FollowedLog]:
        """Every followed (key, prefix), in the order they were added."""
        rows = self._conn().execute(
            "SELECT vkey, origin_prefix FROM followed ORDER BY added, vkey, origin_prefix"
        )
        return [FollowedLog(str(v), str(p)) for v, p in rows]

    # --- checkpoints --------------------------------------------------------------------

    def latest(self, origin: str) -> LatestCheckpoint:
        """The last checkpoint cosigned for ``origin`` (size 0, empty root if none)."""
        return _read_latest(self._conn(), origin)

    def latest_by_origin_hash(self, origin_hash: bytes) -> LatestCheckpoint | None:
        """The last checkpoint cosigned for the origin whose UTF-8 name hashes (SHA-256) to
        ``origin_hash``, or None if this witness never cosigned one for it."""
        with self._hash_lock:
            origin = self._origin_hashes.get(origin_hash)
            now = time.monotonic()
            if origin is None and now - self._origins_scanned >= ORIGIN_RESCAN_SECONDS:
                self._origins_scanned = now
                rows = self._conn().execute("SELECT origin FROM latest")
                self._origin_hashes.update((_origin_hash(str(o)), str(o)) for (o,) in rows)
                origin = self._origin_hashes.get(origin_hash)
        if origin is None:
            return None
        held = self.latest(origin)
        return held if held.note is not None else None

    def origins(self) -> list[LatestCheckpoint]:
        """The last cosigned checkpoint of every origin the witness has seen, by origin."""
        rows = self._conn().execute(
            "SELECT origin, size, root, note, cosignature FROM latest ORDER BY origin"
        )
        return [
            LatestCheckpoint(str(o), int(s), bytes(r), str(n), str(c)) for o, s, r, n, c in rows
        ]

    def history(self, origin: str) -> list[CosignedRecord]:
        """Every distinct checkpoint cosigned for ``origin``, oldest first."""
        rows = self._conn().execute(
            "SELECT origin, size, root, note, cosignature, timestamp, received FROM cosigned "
            "WHERE origin = ? ORDER BY id",
            (origin,),
        )
        return [
            CosignedRecord(str(o), int(s), bytes(r), str(n), str(c), int(t), str(when))
            for o, s, r, n, c, t, when in rows
        ]

    def evidence(self, origin: str | None = None) -> list[RefusedCheckpoint]:
        """Refused inconsistent checkpoints (of ``origin``, or all), oldest first."""
        query = "SELECT origin, size, root, note, kind, reason, received FROM evidence"
        rows = (
            self._conn().execute(query + " WHERE origin = ? ORDER BY id", (origin,))
            if origin is not None
            else self._conn().execute(query + " ORDER BY id")
        )
        return [
            RefusedCheckpoint(str(o), int(s), bytes(r), str(n), str(k), str(why), str(when))
            for o, s, r, n, k, why, when in rows
        ]

    def advance(
        self,
        checkpoint: Checkpoint,
        note: str,
        check: Callable[[LatestCheckpoint], None],
        cosign: Callable[[], tuple[str, int]],
    ) -> str:
        """The atomic step: read what is held for the origin, ``check(held)`` (raises to
        refuse), ``cosign()`` -> (line, timestamp), store, return the line. One transaction.

        The update is a compare-and-swap on the size and root read; under ``BEGIN
        IMMEDIATE`` it cannot miss, and if it ever did the step raises and stores nothing.
        """
        with self._write() as conn:
            held = _read_latest(conn, checkpoint.origin)
            check(held)
            line, timestamp = cosign()
            now = _now()
            if held.note is None:
                conn.execute(
                    "INSERT INTO latest (origin, size, root, note, cosignature, updated) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (checkpoint.origin, checkpoint.size, checkpoint.root, note, line, now),
                )
            else:
                cursor = conn.execute(
                    "UPDATE latest SET size = ?, root = ?, note = ?, cosignature = ?, "
                    "updated = ? WHERE origin = ? AND size = ? AND root = ?",
                    (
                        checkpoint.size,
                        checkpoint.root,
                        note,
                        line,
                        now,
                        checkpoint.origin,
                        held.size,
                        held.root,
                    ),
                )
                if cursor.rowcount != 1:
                    raise WitnessStateError(
                        f"the checkpoint held for {checkpoint.origin} changed during the "
                        "update; nothing was stored"
                    )
            conn.execute(
                "INSERT OR IGNORE INTO cosigned (origin, size, root, note, cosignature, "
                "timestamp, received) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (checkpoint.origin, checkpoint.size, checkpoint.root, note, line, timestamp, now),
            )
        with self._hash_lock:
            self._origin_hashes[_origin_hash(checkpoint.origin)] = checkpoint.origin
        return line

    def record_evidence(self, checkpoint: Checkpoint, note: str, kind: str, reason: str) -> None:
        """Keep a log-signed checkpoint that was refused as inconsistent (once per note:
        the caller gives its smallest form, the text and the log's verified line). At most
        :data:`MAX_BAD_PROOFS` ``bad-proof`` rows are kept per origin: a wrong proof is not
        conclusive, and anyone holding checkpoints the log signed can send one; ``split-view``
        rows, conclusive, are all kept (each is a checkpoint the log signed)."""
        digest = hashlib.sha256(note.encode("utf-8")).digest()
        with self._write() as conn:
            if kind == "bad-proof":
                kept = conn.execute(
                    "SELECT count(*) FROM evidence WHERE origin = ? AND kind = 'bad-proof'",
                    (checkpoint.origin,),
                ).fetchone()[0]
                if kept >= MAX_BAD_PROOFS:
                    return
            conn.execute(
                "INSERT OR IGNORE INTO evidence (origin, size, root, note, note_sha256, kind, "
                "reason, received) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    checkpoint.origin,
                    checkpoint.size,
                    checkpoint.root,
                    note,
                    digest,
                    kind,
                    reason,
                    _now(),
                ),
            )


def _read_latest(conn: sqlite3.Connection, origin: str) -> LatestCheckpoint:
    row = conn.execute(
        "SELECT size, root, note, cosignature FROM latest WHERE origin = ?", (origin,)
    ).fetchone()
    if row is None:
        return LatestCheckpoint(origin, 0, empty_root(), None, None)
    return LatestCheckpoint(origin, int(row[0]), bytes(row[1]), str(row[2]), str(row[3]))


def _cannot_write(exc: sqlite3.Error) -> bool:
    return str(getattr(exc, "sqlite_errorname", "")).startswith("SQLITE_READONLY")


def _cannot_open(exc: sqlite3.Error) -> bool:
    return str(getattr(exc, "sqlite_errorname", "")).startswith("SQLITE_CANTOPEN")


def _origin_hash(origin: str) -> bytes:
    return hashlib.sha256(origin.encode("utf-8")).digest()


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
