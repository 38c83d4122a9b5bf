"""The full-text index over the entries' texts (schema version 9; a derived cache).

What recall (``specs/context.md`` section 4.3) asks before a model call: the entries of a
thread most relevant to a few words, best first, one call per model call. Each engine's own
full-text search, one code path chosen by dialect (``specs/storage.md`` section 2.3):

* **SQLite**: a contentless FTS5 table ``entry_search(text)`` (tokenizer ``porter unicode61
  remove_diacritics 2``) whose rowid is ``num · 2^40 + seq``, ``num`` the thread's number in
  ``search_thread`` (an ``INTEGER PRIMARY KEY``, which ``VACUUM`` keeps; the row also counts
  the thread's indexed entries and their tokens); a thread's entries before ``stop`` are the
  rowid range ``[num · 2^40, num · 2^40 + stop)``, which FTS5 reads as a range of its own.
  Ranked by BM25 with the *thread's* statistics (:func:`search_ranked`): FTS5's own ``bm25``
  takes its document count, mean length and document frequencies from the whole table, every
  thread of the file, so one thread's recall would depend on the others. The ranking reads
  the index itself: which entries hold a word and how often (the ``fts5vocab`` table
  ``entry_search_terms``), each entry's length in tokens (FTS5's ``entry_search_docsize``),
  the query words as the index's tokenizer makes them (a ``temp`` FTS5 table of the same
  tokenizer), and computes FTS5's formula over the thread alone: the score FTS5 gives in a
  file holding only that thread;
* **PostgreSQL**: ``entry_search(thread, seq, tsv)`` with ``tsv = to_tsvector('english',
  text)`` and a GIN index on ``tsv``, queried with ``websearch_to_tsquery`` (the words joined
  by ``or``), ranked by ``ts_rank_cd(tsv, query, 1)`` (normalised by the log of the length),
  which reads the entry's own ``tsvector`` and no statistics of the table: per thread as it is.

Only the kinds of :data:`registre.context.recall.RECALL_KINDS` are indexed, by their entry
text (:func:`registre.context.entry_text`), its first :data:`SEARCH_TEXT_CHARS` characters
(NUL characters read as spaces). Rows are written in the append transaction
(:func:`index_entries`), so they commit or roll back with the entries. Like every derived
table the index can be dropped and rebuilt from the entries (:func:`rebuild_search`); what it
returns is a ranking, which no verifier judges: a recalled text is checked against its entry.
"""

from __future__ import annotations

import json
import math
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
    "search_ranked",
]

SEARCH_TEXT_CHARS: Final = 100_000
"""Characters of an entry's text the index holds (a tsvector holds at most 1 MB)."""

RANKED_ROWS: Final = 1000
"""The most entries one search ranks (:func:`search`)."""

SEARCH_TABLES: Final = ("entry_search", "entry_search_terms", "search_thread")
"""The index's tables (SQLite: ``search_thread``, the FTS5 table and its ``fts5vocab``
table; PostgreSQL: ``entry_search`` only)."""

BM25_K1: Final = 1.2
BM25_B: Final = 0.75
"""FTS5's ``bm25`` constants, which :func:`search_ranked` uses on SQLite."""

_SEQ_BITS: Final = 40
_FTS_TOKENIZER: Final = "porter unicode61 remove_diacritics 2"
_TS_CONFIG: Final = "english"
_KIND_SET: Final = frozenset(RECALL_KINDS)

_DDL: Final = {
    "sqlite": (
        "CREATE TABLE IF NOT EXISTS search_thread (num INTEGER PRIMARY KEY, "
        "thread VARCHAR NOT NULL UNIQUE, docs INTEGER NOT NULL DEFAULT 0, "
        "tokens INTEGER NOT NULL DEFAULT 0)",
        "CREATE VIRTUAL TABLE IF NOT EXISTS entry_search USING fts5"
        f"(text, content='', tokenize='{_FTS_TOKENIZER}')",
        "CREATE VIRTUAL TABLE IF NOT EXISTS entry_search_terms "
        "USING fts5vocab(entry_search, instance)",
    ),
    "postgresql": (
        "CREATE TABLE IF NOT EXISTS entry_search (thread VARCHAR NOT NULL, seq BIGINT NOT NULL, "
        "tsv TSVECTOR NOT NULL, PRIMARY KEY (thread, seq))",
        "CREATE INDEX IF NOT EXISTS entry_search_tsv ON entry_search USING GIN (tsv)",
    ),
}
_DROP: Final = {
    "sqlite": (
        "DROP TABLE IF EXISTS entry_search_terms",
        "DROP TABLE IF EXISTS entry_search",
        "DROP TABLE IF EXISTS search_thread",
    ),
    "postgresql": ("DROP TABLE IF EXISTS entry_search",),
}
_SQLITE_NUM: Final = "SELECT num, docs, tokens FROM search_thread WHERE thread = ?"
_SQLITE_NEW_THREAD: Final = "INSERT INTO search_thread (thread) VALUES (?)"
_SQLITE_INSERT: Final = "INSERT INTO entry_search (rowid, text) VALUES (?, ?)"
_SQLITE_SIZES: Final = "SELECT sz FROM entry_search_docsize WHERE id >= ? AND id <= ?"
_SQLITE_COUNT_THREAD: Final = (
    "UPDATE search_thread SET docs = docs + ?, tokens = tokens + ? WHERE num = ?"
)
_SQLITE_WORDS: Final = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.search_words USING fts5"
    f"(word, tokenize='{_FTS_TOKENIZER}')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.search_word_terms "
    "USING fts5vocab(temp, search_words, instance)",
)
_SQLITE_TERMS: Final = (
    "SELECT term, doc, count(*) FROM entry_search_terms WHERE term IN ({marks}) "
    "AND doc >= ? AND doc < ? GROUP BY term, doc"
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
    "SELECT seq, ts_rank_cd(tsv, q, 1) "
    f"FROM entry_search, websearch_to_tsquery('{_TS_CONFIG}', %s) AS q "
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
    num = _thread_number(cursor, thread)
    base = num << _SEQ_BITS
    cursor.executemany(_SQLITE_INSERT, [(base + seq, text) for seq, text in rows])
    # the thread's own statistics for BM25: its entries, and their tokens as FTS5 counted them
    seqs = [seq for seq, _ in rows]
    cursor.execute(_SQLITE_SIZES, (base + min(seqs), base + max(seqs)))
    tokens = sum(_varint(bytes(size)) for (size,) in cursor.fetchall())
    cursor.execute(_SQLITE_COUNT_THREAD, (len(rows), tokens, num))


def _thread_number(cursor: Any, thread: str) -> int:
    cursor.execute(_SQLITE_NUM, (thread,))
    row = cursor.fetchone()
    if row is None:
        cursor.execute(_SQLITE_NEW_THREAD, (thread,))
        return int(cursor.lastrowid)
    return int(row[0])


def _varint(blob: bytes) -> int:
    """The first varint of an FTS5 ``docsize`` blob (SQLite's varint: big-endian groups of
    7 bits, the high bit set on all but the last, the ninth byte whole): with one column, the
    entry's length in tokens."""
    if blob and blob[0] < 0x80:
        return blob[0]
    value = 0
    for index, byte in enumerate(blob[:9]):
        if index == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    raise ValueError("entry_search_docsize: a size that ends early")


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
    kept from ``terms`` (plain words), best first, at most ``limit``
    (:func:`search_ranked`)."""
    return [seq for seq, _score in search_ranked(conn, thread, terms, stop, limit, rows=rows)]


def search_ranked(
    conn: Connection,
    thread: str,
    terms: Sequence[str],
    stop: int,
    limit: int,
    *,
    rows: int = RANKED_ROWS,
) -> list[tuple[int, float]]:
    """``(seq, score)`` of ``thread``'s indexed entries before ``stop`` that hold any of the
    words kept from ``terms`` (plain words), best first (ties: the later entry first), at
    most ``limit``. The score depends on the thread's entries alone, never on another
    thread's. SQLite: FTS5's ``bm25`` (negative, lower is better) with the thread's
    statistics; PostgreSQL: ``ts_rank_cd`` (higher is better).

    First, one statement counts the entries before ``stop`` holding each word (up to
    ``rows + 1``); the words are kept rarest first while the entries they match add up to at
    most ``rows`` (a word matching more says little about which entry matters, and ranking
    costs per matched entry); then the entries holding any kept word are ranked. So a call
    ranks at most ``rows`` entries, however long the thread."""
    words = list(dict.fromkeys(term for term in terms if term.isalnum()))
    if not words or stop <= 0 or limit <= 0:
        return []
    cursor = conn.connection.cursor()
    try:
        if conn.dialect.name == "postgresql":
            kept = _rarest(cursor, True, words, (thread, stop), rows)
            if not kept:
                return []
            cursor.execute(_PG_QUERY, (" or ".join(kept), thread, stop, limit))
            return [(int(seq), float(score)) for seq, score in cursor.fetchall()]
        cursor.execute(_SQLITE_NUM, (thread,))
        found = cursor.fetchone()
        if found is None:
            return []
        num, docs, tokens = (int(value) for value in found)
        base = num << _SEQ_BITS
        index_terms = _index_terms(cursor, words)
        words = [word for word in words if word in index_terms]
        if not words:
            return []
        kept = _rarest(cursor, False, words, (base, base + stop), rows)
        if not kept:
            return []
        scored = _bm25(cursor, base, stop, [index_terms[word] for word in kept], docs, tokens)
        scored.sort(key=lambda item: (item[0], -item[1]))  # FTS5's ORDER BY rank, rowid DESC
        return [(rowid - base, score) for score, rowid in scored[:limit]]
    finally:
        cursor.close()


def _index_terms(cursor: Any, words: Sequence[str]) -> dict[str, str]:
    """Each of ``words`` that the index's tokenizer makes one term of, to that term (as the
    index holds it: ``running`` -> ``run``), through a ``temp`` FTS5 table of the same
    tokenizer and its ``fts5vocab`` (no schema change to the database, no tokenizer of
    ours)."""
    for statement in _SQLITE_WORDS:
        cursor.execute(statement)
    cursor.execute("DELETE FROM temp.search_words")
    cursor.executemany(
        "INSERT INTO temp.search_words (rowid, word) VALUES (?, ?)", list(enumerate(words))
    )
    cursor.execute("SELECT doc, term FROM temp.search_word_terms")
    made: dict[int, list[str]] = {}
    for doc, term in cursor.fetchall():
        made.setdefault(int(doc), []).append(str(term))
    cursor.execute("DELETE FROM temp.search_words")
    return {words[doc]: found[0] for doc, found in made.items() if len(found) == 1}


def _bm25(
    cursor: Any, base: int, stop: int, terms: Sequence[str], docs: int, tokens: int
) -> list[tuple[float, int]]:
    """``(bm25, rowid)`` of the thread's entries before ``stop`` holding any of ``terms``
    (the query's phrases, in its order): FTS5's ``bm25`` computed as FTS5 computes it
    (``fts5_aux.c``: k1 1.2, b 0.75, idf ``log((N - n + 0.5) / (n + 0.5))``, at least
    1e-6), with N, the mean length and each term's n taken over the thread's indexed entries
    (all of them, as a table holding only the thread would), never the whole table."""
    places: dict[str, list[int]] = {}
    for place, term in enumerate(terms):
        places.setdefault(term, []).append(place)
    marks = ", ".join("?" for _ in places)
    cursor.execute(_SQLITE_TERMS.format(marks=marks), (*places, base, base + (1 << _SEQ_BITS)))
    holding = dict.fromkeys(places, 0)
    held: dict[int, list[tuple[int, int]]] = {}  # rowid -> (place in the query, count)
    end = base + stop
    for term, rowid, count in cursor.fetchall():
        holding[term] += 1
        if rowid < end:
            held.setdefault(rowid, []).extend((place, count) for place in places[term])
    if not held or docs <= 0:
        return []
    average = float(tokens) / float(docs)
    idf = []
    for term in terms:
        weight = math.log((docs - holding[term] + 0.5) / (holding[term] + 0.5))
        idf.append(weight if weight > 0.0 else 1e-6)
    lengths = _lengths(cursor, sorted(held))
    saturation = BM25_K1 + 1.0
    scored = []
    for rowid, counts in held.items():
        # FTS5 adds each phrase in the query's order; one the entry lacks adds 0.0, left out
        norm = BM25_K1 * (1 - BM25_B + BM25_B * float(lengths.get(rowid, 0)) / average)
        if len(counts) > 1:
            counts.sort()
        score = 0.0
        for place, count in counts:
            tf = float(count)
            score += idf[place] * ((tf * saturation) / (tf + norm))
        scored.append((-1.0 * score, rowid))
    return scored


def _lengths(cursor: Any, rowids: Sequence[int], chunk: int = 500) -> dict[int, int]:
    """Each entry's length in tokens, as FTS5 counted it (``entry_search_docsize``)."""
    lengths: dict[int, int] = {}
    for start in range(0, len(rowids), chunk):
        part = rowids[start : start + chunk]
        marks = ", ".join("?" for _ in part)
        cursor.execute(f"SELECT id, sz FROM entry_search_docsize WHERE id IN ({marks})", part)
        for rowid, size in cursor.fetchall():
            lengths[int(rowid)] = _varint(bytes(size))
    return lengths


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
