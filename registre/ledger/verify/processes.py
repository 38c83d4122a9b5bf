"""``verify --db --jobs N``: the threads verified in shares by worker processes, each share in
its own read snapshot (:func:`verify_in_processes`); a failure in a worker comes back by value
and is raised here as it was raised there.
"""

from __future__ import annotations

import multiprocessing
import pickle
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import DataError, ProgrammingError

from registre.attest.notes import Verifier
from registre.context import TokenCounter
from registre.ledger.core.database import Database
from registre.ledger.store.engine import make_engine, read_transaction
from registre.ledger.verify.snapshot import (
    check_database,
    column_type_error,
    read_heads,
    verify_threads,
)
from registre.ledger.verify.thread import ThreadReport

__all__ = ["verify_in_processes"]


@dataclass(frozen=True)
class _Share:
    """What one verifying process needs (picklable): the database, the keys, its threads."""

    url: str
    vkeys: tuple[str, ...]
    threads: tuple[str, ...]
    batch: int
    counters: tuple[TokenCounter, ...]
    published_record: bool


@dataclass(frozen=True)
class _Failure:
    """An exception raised in a verifying process, carried back by value."""

    kind: type[BaseException]
    args: tuple[Any, ...]
    state: dict[str, Any]

    def rebuild(self) -> BaseException:
        error = self.kind.__new__(self.kind)
        error.args = self.args
        error.__dict__.update(self.state)
        return error


def _portable(exc: BaseException) -> _Failure:
    state = {}
    for name, value in vars(exc).items():
        try:
            pickle.dumps(value)
        except Exception:
            continue
        state[name] = value
    return _Failure(type(exc), exc.args, state)


def _verify_share(share: _Share) -> list[ThreadReport] | _Failure:
    """One process's share (runs in the child): its threads verified in one snapshot."""
    engine = make_engine(share.url)
    try:
        db = Database(engine, None, ())
        trusted = [Verifier.from_vkey(vkey) for vkey in share.vkeys]
        try:
            return verify_threads(
                db,
                share.threads,
                trusted,
                share.batch,
                share.counters,
                database_checks=False,
                published_record=share.published_record,
            )
        except (DataError, ProgrammingError) as exc:
            return _portable(column_type_error(exc))
        except Exception as exc:
            return _portable(exc)
    finally:
        engine.dispose()


def verify_in_processes(
    db: Database,
    wanted: Sequence[str] | None,
    trusted: list[Verifier],
    batch: int,
    counters: Sequence[TokenCounter],
    progress: Callable[[int], None] | None,
    jobs: int,
    published_record: bool = True,
) -> list[ThreadReport]:
    """:func:`registre.ledger.verify.snapshot.verify_threads` for the ``wanted`` threads in
    about ``4 x jobs`` shares of consecutive ids run by ``jobs`` processes, then steps 11 and
    12 here; the reports in id order. Raises the first failing share's error."""
    with read_transaction(db.engine) as conn:
        sizes = [(str(row.id), int(row.size)) for row in read_heads(conn, wanted)]
    # Shares of about equal numbers of entries, several per process so that the processes
    # finish together; each is a run of consecutive ids, so the reports come back in order.
    total = sum(size + 1 for _thread_id, size in sizes)
    target = max(1, total // (jobs * 4))
    shares: list[list[tuple[str, int]]] = [[]]
    weight = 0
    for thread_id, size in sizes:
        if weight >= target:
            shares.append([])
            weight = 0
        shares[-1].append((thread_id, size))
        weight += size + 1
    url = db.engine.url.render_as_string(hide_password=False)
    vkeys = tuple(key.vkey() for key in trusted)
    results: list[list[ThreadReport] | _Failure | None] = [None] * len(shares)
    # fork where there is one: the children start with registre imported (a spawned child
    # imports it again, seconds on a busy machine); they open their own engine, never the
    # parent's connections, and leave through os._exit.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, len(shares)), mp_context=context) as pool:
        pending = {
            pool.submit(
                _verify_share,
                _Share(
                    url,
                    vkeys,
                    tuple(t for t, _ in share),
                    batch,
                    tuple(counters),
                    published_record,
                ),
            ): index
            for index, share in enumerate(shares)
            if share
        }
        for future in as_completed(pending):
            index = pending[future]
            results[index] = future.result()
            if progress is not None:
                progress(sum(size for _thread_id, size in shares[index]))
    reports: list[ThreadReport] = []
    for result in results:
        if isinstance(result, _Failure):
            raise result.rebuild()
        reports += result or []
    with read_transaction(db.engine, snapshot=True) as conn:
        check_database(conn, wanted)
    return reports
