"""Registre's side of a real-data run: a thread replayed through the public ledger API.

:class:`LedgerReplay` owns one fresh SQLite ledger file (in a directory of the caller's) with
one thread; entries are appended as an agent platform would (``thread.append``), and
:meth:`LedgerReplay.call` makes the model call an agent loop makes before each assistant
turn: ``thread.model_call`` at the budget, with the default policy for that budget
(``Policy(budget_tokens=budget)``), the default counter and summarizer, compaction as the
policy says -- exactly what a user of the library gets. A call the context cannot fit is
a refusal (:class:`~registre.context.ContextBudgetError`): counted, nothing recorded.

:meth:`LedgerReplay.ask` asks a question without touching the thread: on a copy of the
ledger file (SQLite's online backup), the question appended as the next user turn and the
model call made there; the copy is then deleted.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from registre.attest.notes import Signer
from registre.context import ContextBudgetError, Policy, Projection, TokenCounter
from registre.ledger import Ledger

__all__ = [
    "MODEL",
    "Call",
    "LedgerReplay",
    "baseline_rooms",
    "scratch_dir",
]

MODEL: Final = "bench/replay"
"""The model name recorded in each ``model.call``."""
_THREAD: Final = "replay"


@dataclass(frozen=True)
class Call:
    """A model call's outcome: the projection sent, or the refusal's class name."""

    projection: Projection | None
    refused: str | None = None


class LedgerReplay:
    """One thread on a fresh ledger file ``directory/NAME.db`` (module docstring). Use as a
    context manager, or :meth:`close`."""

    def __init__(
        self, directory: Path, name: str, budget: int, counter: TokenCounter, signer: Signer
    ) -> None:
        self.path = directory / f"{name}.db"
        for stale in _files(self.path):
            stale.unlink(missing_ok=True)
        self.budget = budget
        self.policy = Policy(budget_tokens=budget)
        self.counter = counter
        self.signer = signer
        self.ledger = Ledger.open(str(self.path), signer)
        self.thread = self.ledger.create_thread(_THREAD)
        self.calls = 0
        self.refused = 0
        self.tokens = 0  # sent by the calls made, in total

    def __enter__(self) -> LedgerReplay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the ledger and delete its file."""
        self.ledger.close()
        for path in _files(self.path):
            path.unlink(missing_ok=True)

    def append(self, kind: str, body: Mapping[str, object], actor: str) -> int:
        """Append one entry; its seq."""
        return self.thread.append(kind, dict(body), actor).seq

    def call(self) -> Call:
        """The model call before an assistant turn (module docstring)."""
        self.calls += 1
        try:
            projection, _entry = self.thread.model_call(
                MODEL, self.budget, self.policy, self.counter
            )
        except ContextBudgetError as refusal:
            self.refused += 1
            return Call(None, type(refusal).__name__)
        self.tokens += projection.tokens
        return Call(projection)

    def ask(self, kind: str, body: Mapping[str, object], actor: str) -> tuple[int, Call]:
        """Append ``(kind, body, actor)`` to a copy of the thread and make the model call
        there; the seq it got and the call. The thread itself is left as it was."""
        copy = self.path.with_name(self.path.stem + "-ask.db")
        for stale in _files(copy):
            stale.unlink(missing_ok=True)
        source = sqlite3.connect(self.path)
        target = sqlite3.connect(copy)
        try:
            source.backup(target)
        finally:
            target.close()
            source.close()
        try:
            with Ledger.open(str(copy), self.signer) as ledger:
                thread = ledger.thread(_THREAD)
                seq = thread.append(kind, dict(body), actor).seq
                try:
                    projection, _entry = thread.model_call(
                        MODEL, self.budget, self.policy, self.counter
                    )
                except ContextBudgetError as refusal:
                    return seq, Call(None, type(refusal).__name__)
                return seq, Call(projection)
        finally:
            for path in _files(copy):
                path.unlink(missing_ok=True)


def baseline_rooms(budgets: Sequence[int], full: bool) -> dict[str, int]:
    """The tokens the baselines may send at each budget: the whole budget (``full``), or
    what registre's default policy for that budget leaves beside its output reserve."""
    return {
        str(budget): budget if full else Policy(budget_tokens=budget).window_tokens()
        for budget in budgets
    }


@contextmanager
def scratch_dir() -> Iterator[Path]:
    """A temporary directory for throwaway ledgers, removed after: in ``/dev/shm`` when it
    is writable (the replays append every entry durably; memory spares the disk's syncs)."""
    shm = "/dev/shm"
    root = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="registre-bench-real-", dir=root) as path:
        yield Path(path)


def _files(path: Path) -> tuple[Path, ...]:
    """A SQLite file and its journal files."""
    return (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"))
