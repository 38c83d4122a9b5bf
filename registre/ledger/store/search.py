"""The full-text index over the entries' texts (schema version 7; a derived cache).

What recall (``specs/context.md`` section 4.2) asks before a model call: the entries of a
thread most relevant to a few words, best first, one query per call. Each engine's own
full-text search, one code path chosen by dialect (``specs/storage.md`` section 2.3):

* **SQLite**: a contentless FTS5 table ``entry_search(text)`` (tokenizer ``porter unicode61
  remove_diacritics 2``) whose rowid is ``num · 2^40 + seq``, ``num`` the thread's number in
  ``search_thread`` (an ``INTEGER PRIMARY KEY``, which ``VACUUM`` keeps); a thread's entries
  before ``stop`` are the rowid range ``[num · 2^40, num · 2^40 + stop)``, which FTS5 reads
  as a range of its own. Ranked by ``bm25``;
* **PostgreSQL**: ``entry_search(thread, seq, tsv)`` with ``tsv = to_tsvector('english',
  text)`` and a GIN index on ``tsv``, queried with ``websearch_to_tsquery`` (the words joined
  by ``or``), ranked by ``ts_rank_cd(tsv, query, 1)`` (normalised by the log of the length).

Only the kinds of :data:`registre.context.recall.RECALL_KINDS` are indexed, by their entry
text (:func:`registre.context.entry_text`), its first :data:`SEARCH_TEXT_CHARS` characters
(NUL characters read as spaces). Rows are written in the append transaction
(:func:`index_entries`), so they commit or roll back with the entries. Like every derived
table the index can be dropped and rebuilt from the entries (:func:`rebuild_search`); what it
returns is a ranking, which no verifier judges: a recalled text is checked against its entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Final

from sqlalchemy import Connection

from registre.attest.entries import Entry
from registre.context import entry_text
from registre.context.recall import RECALL_KINDS
from registre.lifecycle.errors import LifecycleFormatError

__all__ = [
    "RANKED_ROWS",
    "SEARCH_TABLES",
    "SEARCH_TEXT_CHARS",
    "create_search",
    "index_entries",
    "indexed_rows",
    "rebuild_search",
    "search",
]

SEARCH_TEXT_CHARS: Final = 100_000
"""Characters of an entry's text the index holds (a tsvector holds at most 1 MB)."""

RANKED_ROWS: Final = 1000
"""The most entries one search ranks (:func:`search`)."""

SEARCH_TABLES: Final = ("entry_search", "search_thread")
"""The index's tables (SQLite: ``search_thread`` and the FTS5 table; PostgreSQL:
``entry_search`` only)."""

_SEQ_BITS: Final = 40
_FTS_TOKENIZER: Final = "porter unicode61 remove_diacritics 2"
_TS_CONFIG: Final = "english"
_KIND_SET: Final = frozenset(RECALL_KINDS)

_DDL: Final = {
    "sqlite": (
        "CREATE TABLE IF NOT EXISTS search_thread "
        "(num INTEGER PRIMARY KEY, thread VARCHAR NOT NULL UNIQUE)",
        "CREATE VIRTUAL TABLE IF NOT EXISTS entry_search USING fts5"
        f"(text, content='', tokenize='{_FTS_TOKENIZER}')",
    ),
    "postgresql": (
        "CREATE TABLE IF NOT EXISTS entry_search (thread VARCHAR NOT NULL, seq BIGINT NOT NULL, "
        "tsv TSVECTOR NOT NULL, PRIMARY KEY (thread, seq))",
        "CREATE INDEX IF NOT EXISTS entry_search_tsv ON entry_search USING GIN (tsv)",
    ),
}
_DROP: Final = {
    "sqlite": ("DROP TABLE IF EXISTS entry_search", "DROP TABLE IF EXISTS search_thread"),
    "postgresql": ("DROP TABLE IF EXISTS entry_search",),
}
_SQLITE_NUM: Final = "SELECT num FROM search_thread WHERE thread = ?"
_SQLITE_NEW_THREAD: Final = "INSERT INTO search_thread (thread) VALUES (?)"
_SQLITE_INSERT: Final = "INSERT INTO entry_search (rowid, text) VALUES (?, ?)"
_SQLITE_QUERY: Final = (
    "SELECT rowid FROM entry_search WHERE entry_search MATCH ? AND rowid >= ? AND rowid < ? "
    "ORDER BY rank, rowid DESC LIMIT ?"
)
_SQLITE_COUNT: Final = (
    "SELECT {index}, count(*) FROM (SELECT 1 FROM entry_search WHERE entry_search MATCH ? "
    "AND rowid >= ? AND rowid < ? LIMIT ?)"
)
_PG_COUNT: Final = (
    "SELECT {index}, count(*) FROM (SELECT 1 FROM entry_search WHERE thread = %s AND seq < %s "
    f"AND tsv @@ plainto_tsquery('{_TS_CONFIG}', %s) LIMIT %s) AS c{{index}}"
)
_PG_INSERT: Final = (
    "INSERT INTO entry_search (thread, seq, tsv) "
    f"SELECT %s::varchar, s, to_tsvector('{_TS_CONFIG}', t) "
    "FROM unnest(%s::bigint[], %s::text[]) AS u(s, t)"
)
_PG_QUERY: Final = (
    f"SELECT seq FROM entry_search, websearch_to_tsquery('{_TS_CONFIG}', %s) AS q "
    "WHERE thread = %s AND seq < %s AND tsv @@ q "
    "ORDER BY ts_rank_cd(tsv, q, 1) DESC, seq DESC LIMIT %s"
)


def create_search(conn: Connection) -> None:
    """Create the index's tables (in the caller's transaction), if they are not there."""
    for statement in _DDL[conn.dialect.name]:
        conn.exec_driver_sql(statement)


def indexed_text(kind: str, body: dict[str, Any]) -> str | None:
    """What the index holds for an entry: the first :data:`SEARCH_TEXT_CHARS` characters of
    its text, NULs as spaces; None for a kind not indexed or an empty text."""
    if kind not in _KIND_SET:
        return None
    try:
        text = entry_text(kind, body)
    except LifecycleFormatError:
        return None
    text = text[:SEARCH_TEXT_CHARS].replace("\x00", " ")
    return text if text.strip() else None


def indexed_rows(entries: Iterable[Entry]) -> list[tuple[int, str]]:
    """``(seq, text)`` for the entries the index holds."""
    rows = []
    for entry in entries:
        if entry.kind in _KIND_SET:
            text = indexed_text(entry.kind, entry.body)
            if text is not None:
                rows.append((entry.seq, text))
    return rows


def index_entries(cursor: Any, dialect: str, thread: str, entries: Sequence[Entry]) -> None:
    """Index ``entries`` of ``thread`` on the driver's ``cursor``, inside the append's
    transaction."""
    rows = indexed_rows(entries)
    if rows:
        _insert(cursor, dialect, thread, rows)


def _insert(cursor: Any, dialect: str, thread: str, rows: Sequence[tuple[int, str]]) -> None:
    if dialect == "postgresql":
        cursor.execute(_PG_INSERT, (thread, [seq for seq, _ in rows], [t for _, t in rows]))
        return
    base = _thread_number(cursor, thread) << _SEQ_BITS
    cursor.executemany(_SQLITE_INSERT, [(base + seq, text) for seq, text in rows])


def _thread_number(cursor: Any, thread: str) -> int:
    cursor.execute(_SQLITE_NUM, (thread,))
    row = cursor.fetchone()
    if row is None:
        cursor.execute(_SQLITE_NEW_THREAD, (thread,))
        return int(cursor.lastrowid)
    return int(row[0])


def search(
    conn: Connection,
    thread: str,
    terms: Sequence[str],
    stop: int,
    limit: int,
    *,
    rows: int = RANKED_ROWS,
) -> list[int]:
    """The seqs of ``thread``'s indexed entries before ``stop`` that hold any of the words
    kept from ``terms`` (plain words), best first, at most ``limit``.

    Two statements: the first counts, in one pass, the entries holding each word (up to
    ``rows + 1``); the words are then kept rarest first while the entries they match add up
    to at most ``rows`` (a word matching more says little about which entry matters, and
    ranking costs per matched entry), and the second ranks the entries holding any kept
    word. So a call ranks at most ``rows`` entries, however long the thread."""
    words = list(dict.fromkeys(term for term in terms if term.isalnum()))
    if not words or stop <= 0 or limit <= 0:
        return []
    cursor = conn.connection.cursor()
    try:
        postgres = conn.dialect.name == "postgresql"
        base = 0
        if postgres:
            scope: tuple[object, ...] = (thread, stop)
        else:
            cursor.execute(_SQLITE_NUM, (thread,))
            found = cursor.fetchone()
            if found is None:
                return []
            base = int(found[0]) << _SEQ_BITS
            scope = (base, base + stop)
        kept = _rarest(cursor, postgres, words, scope, rows)
        if not kept:
            return []
        if postgres:
            cursor.execute(_PG_QUERY, (" or ".join(kept), thread, stop, limit))
            return [int(row[0]) for row in cursor.fetchall()]
        match = " OR ".join(f'"{word}"' for word in kept)
        cursor.execute(_SQLITE_QUERY, (match, base, base + stop, limit))
        return [int(row[0]) - base for row in cursor.fetchall()]
    finally:
        cursor.close()


def _rarest(
    cursor: Any, postgres: bool, words: Sequence[str], scope: tuple[object, ...], rows: int
) -> list[str]:
    """``words`` that match some entry in ``scope``, rarest first (ties: in the order
    given), while their matches add up to at most ``rows``; one statement."""
    part = _PG_COUNT if postgres else _SQLITE_COUNT
    sql = " UNION ALL ".join(part.format(index=index) for index in range(len(words)))
    params: list[object] = []
    for word in words:
        params += [*scope, word, rows + 1] if postgres else [f'"{word}"', *scope, rows + 1]
    cursor.execute(sql, params)
    counts = {int(index): int(count) for index, count in cursor.fetchall()}
    kept: list[str] = []
    total = 0
    for index in sorted(range(len(words)), key=lambda i: (counts.get(i, 0), i)):
        count = counts.get(index, 0)
        if count == 0:
            continue
        if total + count > rows:
            break
        kept.append(words[index])
        total += count
    return kept


def rebuild_search(conn: Connection, batch: int = 2000) -> int:
    """Drop the index and build it again from every thread's entries within its head, in
    the caller's transaction; the number of entries indexed."""
    for statement in _DROP[conn.dialect.name]:
        conn.exec_driver_sql(statement)
    create_search(conn)
    kinds = ", ".join(f"'{kind}'" for kind in RECALL_KINDS)
    result = conn.exec_driver_sql(  # rows past a head (planted) are not the thread's
        "SELECT entry.thread, entry.seq, entry.leaf FROM entry JOIN thread "
        f"ON thread.id = entry.thread WHERE entry.kind IN ({kinds}) AND entry.seq < thread.size "
        "ORDER BY entry.thread, entry.seq"
    )
    cursor = conn.connection.cursor()
    count = 0
    try:
        while True:
            chunk = result.fetchmany(batch)
            if not chunk:
                break
            by_thread: dict[str, list[tuple[int, str]]] = {}
            for thread, seq, leaf in chunk:
                text = _leaf_text(leaf)
                if text is not None:
                    by_thread.setdefault(str(thread), []).append((int(seq), text))
            for thread, rows in by_thread.items():
                _insert(cursor, conn.dialect.name, thread, rows)
                count += len(rows)
    finally:
        cursor.close()
    return count


def _leaf_text(leaf: object) -> str | None:
    try:
        envelope = json.loads(bytes(leaf))["entry"]  # type: ignore[call-overload]
        return indexed_text(str(envelope["kind"]), envelope["body"])
    except (TypeError, ValueError, KeyError):
        return None
