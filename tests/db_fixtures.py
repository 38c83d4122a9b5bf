"""Database fixtures, shared by tests/ledger and tests/cli: every test that takes ``db_url`` runs
on SQLite and on PostgreSQL.

The PostgreSQL half uses the server named by REGISTRE_TEST_PG (a SQLAlchemy URL such as
``postgresql+psycopg://root@127.0.0.1:5432/test``). When the variable is set and the server
cannot be reached, those tests FAIL: a CI run that silently skipped half the suite would
prove nothing. When it is unset they skip, saying so. Each PostgreSQL test gets a fresh
schema (``search_path`` set through the connection options in the URL), dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from registre.attest.notes import Signer
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread

PG_ENV = "REGISTRE_TEST_PG"
LOG_NAME = "registre.test/log"


def _admin_conninfo(url: str) -> str:
    parsed = make_url(url).set(drivername="postgresql")
    return parsed.render_as_string(hide_password=False)


@pytest.fixture(
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database URL on each engine."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'registre.db'}"
        return
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"{PG_ENV} is not set: PostgreSQL tests skipped (set it to run them)")
    import psycopg

    schema = f"registre_test_{uuid.uuid4().hex[:16]}"
    try:
        admin = psycopg.connect(_admin_conninfo(base), autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"{PG_ENV} is set but the PostgreSQL server cannot be reached: {exc}")
    with admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with psycopg.connect(_admin_conninfo(base), autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(scope="session")
def signer() -> Signer:
    return Signer.from_seed(LOG_NAME, bytes(range(32)))


@pytest.fixture
def ledger(db_url: str, signer: Signer) -> Iterator[Ledger]:
    opened = Ledger.open(db_url, signer)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def thread(ledger: Ledger) -> Thread:
    return ledger.create_thread("t1")
