"""Every command that opens a ledger, against every database fault a user can meet: one
``registre: error:`` line (and at most a hint), the exit code of the fault's family (2 for a
database that is not one registre can use, 3 for one out of reach), no traceback, and the
database exactly as it was (its dump hash).

The fault classes are those of issue 14: a file that is not SQLite, a truncated file, a
directory, an empty file, unsupported and malformed URLs, a PostgreSQL server on a closed
port, a missing database or role, the write lock held past the timeout, a read-only ledger
(reads work, writes refuse), a full disk during an append, and a text holding NUL.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import make_url

from registre.ledger.store import engine as engine_module
from tests.cli.conftest import Result, Run

TURN = '{"role":"user","text":"x"}'
SHA = "a" * 64
SOURCE = ("--source", "doc", "--location", "p1", "--sha256", SHA)

# Commands that write, then commands that only read; every one opens the ledger. The
# arguments are valid for the ledger the `ready` fixture builds.
WRITES: list[tuple[str, ...]] = [
    ("append", "t1", "--kind", "turn", "--body", TURN),
    ("checkpoint", "t1"),
    ("compact", "t1", "--budget", "100"),
    ("conclude", "t1", "--kind", "compute", "--text", "x", "--cite", "ev-1"),
    ("evidence", "upsert", "t1", "--body", '{"statements":[{"text":"s","cites":["r1"]}]}'),
    ("evidence", "revise", "t1", "ev-1", "--retract"),
    ("source", "read", "t1", "--ref", "r2", *SOURCE),
    ("import", "t1", "transcript.json", "--format", "openai"),
    ("pin", "t1", "--kind", "decision", "--text", "x", "--seq", "0"),
    ("unpin", "t1", "pin-1", "--reason", "x"),
    ("thread", "create", "t2"),
    ("rebuild",),
    ("reanchor", "--unwitnessed"),
]
READS: list[tuple[str, ...]] = [
    ("conclusions", "t1"),
    ("trace", "t1", "c-1"),
    ("context", "show", "t1"),
    ("context", "diff", "t1", "--at", "1"),
    ("evidence", "list", "t1"),
    ("evidence", "show", "t1", "ev-1"),
    ("evidence", "history", "t1", "ev-1"),
    ("expand", "t1", "0"),
    ("export", "t1", "-o", "out.zip"),
    ("log", "t1"),
    ("prove", "inclusion", "t1", "0"),
    ("prove", "consistency", "t1", "1", "2"),
    ("thread", "list"),
    ("thread", "show", "t1"),
    ("transcript", "t1", "--format", "md"),
    ("verify",),
]
OPENERS = [*WRITES, *READS, ("init",)]


def _shape(result: Result, codes: tuple[int, ...]) -> str | None:
    """What is wrong with a failure's shape (None if it is right)."""
    if result.code not in codes:
        return f"exit {result.code}, expected {codes}: {result.err[-300:]!r}"
    if "Traceback" in result.err:
        return "traceback"
    lines = [line for line in result.err.splitlines() if not line.startswith("registre: wait")]
    if not 1 <= len(lines) <= 2 or not lines[0].startswith("registre: error: "):
        return f"not one error line: {result.err!r}"
    if len(lines) == 2 and not lines[1].startswith("registre: hint: "):
        return f"second line is not a hint: {result.err!r}"
    return None


def _battery(
    run: Run, db: str, commands: list[tuple[str, ...]], codes: tuple[int, ...]
) -> list[str]:
    problems = []
    for command in commands:
        result = run(*command, "--db", db)
        problem = _shape(result, codes)
        if problem is not None:
            problems.append(f"{' '.join(command)}: {problem}")
    return problems


def _file_hash(path: Path) -> str:
    if path.is_dir():
        return "dir:" + ",".join(sorted(p.name for p in path.iterdir()))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sqlite_dump_hash(path: Path) -> str:
    """The hash of a SQLite ledger's content (its SQL dump), read without writing."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()
    finally:
        conn.close()


def pg_dump_hash(url: str) -> str:
    """The hash of every row of every table a PostgreSQL ledger schema holds."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            names = conn.execute(
                text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            ).scalars()
            digest = hashlib.sha256()
            for name in sorted(names):
                rows = conn.execute(text(f'SELECT * FROM "{name}"')).all()
                digest.update(f"{name}:{sorted(repr(tuple(r)) for r in rows)}".encode())
            return digest.hexdigest()
    finally:
        engine.dispose()


def dump_hash(url: str) -> str:
    if url.startswith("sqlite:///"):
        return sqlite_dump_hash(Path(url[len("sqlite:///") :]))
    return pg_dump_hash(url)


@pytest.fixture
def keyed(workdir: Path, run: Run) -> Path:
    """A working folder with an operator key (and a ledger beside it) and the small input
    files the commands name."""
    assert run("init", "--db", str(workdir / "good.db")).code == 0
    (workdir / "transcript.json").write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
    return workdir


def _ready(run: Run, db: str) -> None:
    """Thread t1 with three turns, a source, an evidence entry and a checkpoint."""
    assert run("init", "--db", db).code == 0
    assert run("thread", "create", "t1", "--db", db).code == 0
    for _ in range(3):
        assert run("append", "t1", "--kind", "turn", "--body", TURN, "--db", db).code == 0
    assert run("source", "read", "t1", "--ref", "r1", *SOURCE, "--db", db).code == 0
    body = '{"statements":[{"text":"s","cites":["r1"]}]}'
    assert run("evidence", "upsert", "t1", "--body", body, "--db", db).code == 0
    assert run("checkpoint", "t1", "--db", db).code == 0


# --- files and URLs that are not a ledger registre can use --------------------------------


def _not_sqlite(folder: Path) -> Path:
    path = folder / "notes.db"
    path.write_text("these are notes, not a database\n" * 200)
    return path


def _truncated(folder: Path) -> Path:
    path = folder / "truncated.db"
    path.write_bytes((folder / "good.db").read_bytes()[:2000])
    return path


def _directory(folder: Path) -> Path:
    path = folder / "a-folder"
    path.mkdir()
    return path


FILE_FAULTS = {"not-sqlite": _not_sqlite, "truncated": _truncated, "directory": _directory}


@pytest.mark.parametrize("fault", sorted(FILE_FAULTS))
def test_file_that_is_not_a_ledger_is_one_line_exit_2(keyed: Path, run: Run, fault: str) -> None:
    path = FILE_FAULTS[fault](keyed)
    before = _file_hash(path)
    assert _battery(run, str(path), OPENERS, (2,)) == []
    assert _file_hash(path) == before


def test_empty_file_is_no_ledger_for_every_command_but_init(keyed: Path, run: Run) -> None:
    path = keyed / "empty.db"
    path.touch()
    assert _battery(run, str(path), [*WRITES, *READS], (2,)) == []
    assert path.read_bytes() == b""


URL_FAULTS = {
    "mysql": ("mysql://root@127.0.0.1/registre", 2),
    "unknown-scheme": ("foo://bar/baz", 2),
    "malformed": ("postgresql+psycopg://root@127.0.0.1:port/x", 2),
    "no-driver-name": ("://nowhere", 2),
    "closed-port": ("postgresql+psycopg://root@127.0.0.1:1/test", 3),
}


@pytest.mark.parametrize("fault", sorted(URL_FAULTS))
def test_database_url_fault_is_one_line(keyed: Path, run: Run, fault: str) -> None:
    url, code = URL_FAULTS[fault]
    assert _battery(run, url, OPENERS, (code,)) == []


@pytest.mark.parametrize("fault", sorted(URL_FAULTS))
def test_bench_db_fault_is_one_line(keyed: Path, run: Run, fault: str) -> None:
    url, code = URL_FAULTS[fault]
    result = run("bench", "--db", url, "--sizes", "100", "--budgets", "1k", "--out", "b")
    assert _shape(result, (code,)) is None


def test_ledger_open_raises_registre_errors(tmp_path: Path) -> None:
    """A Python caller gets registre errors, never raw SQLAlchemy or driver exceptions."""
    from registre.errors import RegistreError
    from registre.ledger.ledger import Ledger

    for url in [str(_not_sqlite(tmp_path)), str(tmp_path), *(u for u, _ in URL_FAULTS.values())]:
        with pytest.raises(RegistreError):
            Ledger.open(url, create=False)


# --- PostgreSQL: a missing database or role -------------------------------------------------


@pytest.fixture
def pg_base() -> str:
    base = os.environ.get("REGISTRE_TEST_PG")
    if not base:
        pytest.skip("REGISTRE_TEST_PG is not set: PostgreSQL tests skipped")
    return base


@pytest.mark.postgres
def test_missing_postgres_database_is_one_line_exit_2(keyed: Path, run: Run, pg_base: str) -> None:
    url = make_url(pg_base).set(database="registre_no_such_database")
    rendered = url.render_as_string(hide_password=False)
    assert _battery(run, rendered, [*WRITES, *READS], (2,)) == []


@pytest.mark.postgres
def test_missing_postgres_role_is_one_line_exit_3(keyed: Path, run: Run, pg_base: str) -> None:
    url = make_url(pg_base).set(username="registre_no_such_role", password=None)
    assert _battery(run, url.render_as_string(hide_password=False), OPENERS, (3,)) == []


# --- the lock, held past the timeout ---------------------------------------------------------


@pytest.fixture
def locked_sqlite(keyed: Path, run: Run) -> Iterator[str]:
    """A ready SQLite ledger whose write lock another connection holds."""
    db = str(keyed / "ledger.db")
    _ready(run, db)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield db
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_write_lock_held_past_timeout_is_one_line_exit_3(
    locked_sqlite: str, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module.lock_policy, "timeout", engine_module.LOCK_TIMEOUT_S)
    before = sqlite_dump_hash(Path(locked_sqlite))
    # compact: three turns are nothing to fold, so it never asks for the lock
    writes = [(*c, "--lock-timeout", "0.2") for c in WRITES if c[0] not in ("import", "compact")]
    assert _battery(run, locked_sqlite, writes, (3,)) == []
    assert sqlite_dump_hash(Path(locked_sqlite)) == before


def test_reads_do_not_wait_for_the_write_lock(
    locked_sqlite: str, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module.lock_policy, "timeout", 0.2)
    for command in (("log", "t1"), ("thread", "list"), ("verify",), ("evidence", "list", "t1")):
        result = run(*command, "--db", locked_sqlite)
        assert result.code == 0, (command, result.err)


def test_waiting_writer_says_what_it_waits_for(
    locked_sqlite: str, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "LOCK_NOTICE_S", 0.1)
    result = run("append", "t1", "--kind", "turn", "--body", TURN, "--db", locked_sqlite,
                 "--lock-timeout", "0.6")  # fmt: skip
    assert result.code == 3
    assert "registre: waiting for the write lock on" in result.err
    assert "--lock-timeout" in result.err


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "1e9"])
def test_lock_timeout_out_of_range_is_refused(keyed: Path, run: Run, value: str) -> None:
    result = run("log", "t1", "--db", str(keyed / "good.db"), "--lock-timeout", value)
    assert _shape(result, (2,)) is None
    assert "--lock-timeout" in result.err


@pytest.mark.postgres
def test_postgres_lock_held_past_timeout_is_one_line_exit_3(
    keyed: Path, run: Run, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("the PostgreSQL half")
    monkeypatch.setattr(engine_module.lock_policy, "timeout", engine_module.LOCK_TIMEOUT_S)
    _ready(run, db_url)
    before = pg_dump_hash(db_url)
    holder = create_engine(db_url)
    done = threading.Event()
    try:
        with holder.connect() as conn:
            conn.execute(text("LOCK TABLE thread IN ACCESS EXCLUSIVE MODE"))
            result = run("append", "t1", "--kind", "turn", "--body", TURN, "--db", db_url,
                         "--lock-timeout", "0.3")  # fmt: skip
            conn.rollback()
            done.set()
    finally:
        holder.dispose()
    assert _shape(result, (3,)) is None
    assert "locked" in result.err
    assert pg_dump_hash(db_url) == before


# --- read-only storage ------------------------------------------------------------------------


@pytest.fixture
def read_only(keyed: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> str:
    """A ready SQLite ledger this process cannot write (as on read-only media: the test may
    run as root, which ignores file modes, so the check that sees it is made to say so)."""
    db = str(keyed / "ledger.db")
    _ready(run, db)
    monkeypatch.setattr(engine_module, "_writable", lambda _path: False)
    return db


def test_read_only_ledger_reads_work(read_only: str, run: Run) -> None:
    before = sqlite_dump_hash(Path(read_only))
    for command in (*READS[:7], *READS[9:]):
        if command[0] == "export":
            continue  # export writes a file beside, tested on its own
        result = run(*command, "--db", read_only)
        assert result.code in (0, 2), (command, result.err)
        assert "read-only" not in result.err, (command, result.err)
    assert run("export", "t1", "-o", "b.zip", "--db", read_only).code == 0
    assert run("verify", "--db", read_only).code == 0
    assert sqlite_dump_hash(Path(read_only)) == before


def test_read_only_ledger_writes_are_one_line_exit_3(read_only: str, run: Run) -> None:
    before = sqlite_dump_hash(Path(read_only))
    # checkpoint: the head is already checkpointed, so it has nothing to write; reanchor:
    # the record beside the ledger reaches its checkpoint, so neither has it
    writes = [c for c in WRITES if c[0] not in ("import", "checkpoint", "reanchor")]
    problems = _battery(run, read_only, writes, (2, 3))
    assert problems == []
    result = run("append", "t1", "--kind", "turn", "--body", TURN, "--db", read_only)
    assert _shape(result, (3,)) is None and "read-only" in result.err
    assert sqlite_dump_hash(Path(read_only)) == before


def test_ledger_in_a_read_only_folder_opens_immutable(
    read_only: str, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No -shm file can be made beside it: the ledger is opened immutable and still reads."""
    for suffix in ("-wal", "-shm"):
        Path(read_only + suffix).unlink(missing_ok=True)
    assert engine_module._read_only_mode(Path(read_only)) == (True, True)
    result = run("log", "t1", "--db", read_only)
    assert result.code == 0, result.err
    assert len(result.out.splitlines()) >= 3


# --- a full disk during an append ------------------------------------------------------------


def test_disk_full_during_append_is_one_line_exit_3(
    keyed: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(keyed / "ledger.db")
    _ready(run, db)
    before = sqlite_dump_hash(Path(db))
    real = engine_module.create_engine

    def full(*args: object, **kwargs: object) -> object:
        made = real(*args, **kwargs)  # type: ignore[arg-type]

        @event.listens_for(made, "connect")
        def _no_room(dbapi_connection: sqlite3.Connection, _record: object) -> None:
            pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
            dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

        return made

    monkeypatch.setattr(engine_module, "create_engine", full)
    big = json.dumps({"role": "user", "text": "y" * 60_000})
    result = run("append", "t1", "--kind", "turn", "--body", big, "--db", db)
    assert _shape(result, (3,)) is None
    assert "full" in result.err
    monkeypatch.undo()
    assert sqlite_dump_hash(Path(db)) == before


# --- NUL in texts: the same on both engines --------------------------------------------------


def test_nul_in_texts_is_refused_on_every_engine(
    workdir: Path, run: Run, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REGISTRE_DB", db_url)
    _ready(run, db_url)
    before = dump_hash(db_url)
    nul = "a\\u0000b"
    attempts = [
        ("evidence", "upsert", "t1", "--body",
         '{"statements":[{"text":"' + nul + '","cites":["r1"]}]}'),
        ("source", "read", "t1", "--ref", "r9", "--source", "a\x00b", *SOURCE[2:]),
        ("pin", "t1", "--kind", "decision", "--text", "a\x00b", "--seq", "0"),
        ("conclude", "t1", "--kind", "compute", "--text", "a\x00b", "--cite", "ev-1"),
    ]  # fmt: skip
    for command in attempts:
        result = run(*command)
        assert _shape(result, (2,)) is None, (command, result.err)
        assert "U+0000" in result.err, (command, result.err)
    assert dump_hash(db_url) == before
    # an entry body is stored as its canonical JSON bytes: NUL is escaped there, and kept
    body = '{"role":"user","text":"' + nul + '"}'
    assert run("append", "t1", "--kind", "turn", "--body", body).code == 0
    assert "\\u0000" in run("log", "t1", "--json").out
