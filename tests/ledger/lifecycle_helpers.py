"""Helpers for the tests of the lifecycle on the ledger (plain functions, not fixtures)."""

from __future__ import annotations

import hashlib
from typing import Any

from registre.ledger.ledger import Ledger
from registre.ledger.store.engine import read_transaction
from registre.ledger.store.lifecycle_fold import DerivedRows, ThreadFold, catch_up, read_derived
from registre.ledger.thread import Thread
from registre.lifecycle import SourceRef


def ref(ref_id: str, source: str = "report.pdf", location: str = "p. 1") -> SourceRef:
    """A reference whose digest is that of a passage made from its fields."""
    passage = f"{source}|{location}|{ref_id}".encode()
    return SourceRef(ref_id, source, location, hashlib.sha256(passage).hexdigest())


def derived_rows(ledger: Ledger, thread: str) -> DerivedRows:
    """Every derived row of ``thread``, as stored."""
    with read_transaction(ledger.engine) as conn:
        return read_derived(conn, thread)


def folded_rows(ledger: Ledger, thread: Thread) -> DerivedRows:
    """The derived rows the fold of ``thread``'s entries gives (computed in memory)."""
    fold = ThreadFold(thread.id, keep_rows=True)
    with read_transaction(ledger.engine) as conn:
        catch_up(conn, fold, thread.head().size)
    assert fold.rows is not None
    return fold.rows


def investigation(thread: Thread) -> dict[str, Any]:
    """The worked investigation of specs/lifecycle.md, through the thread API: two reads,
    a partly accepted upsert, a compute and a final, a pin, a supersession that leaves both
    stale, and the compute's repair. Returns the results by name."""
    thread.append("turn", {"role": "user", "text": "Did revenue grow in 2023?"}, "alice")
    results: dict[str, Any] = {}
    results["read"] = thread.read_source([ref("r1"), ref("r2", location="p. 7")])
    results["upsert"] = thread.evidence.upsert(
        [
            {"text": "Revenue in 2023 was EUR 4.2 million.", "cites": ["r1"]},
            {"text": "Revenue in 2022 was EUR 3.8 million.", "cites": ["r2"]},
            {"text": "The auditor's opinion was unqualified.", "cites": ["r1"]},
            {"text": "Costs fell in 2023.", "cites": []},
            {"text": "Headcount rose to 41.", "cites": ["r9"]},
        ],
        partial=True,
    )
    results["compute"] = thread.conclude("compute", "Revenue grew 10.5%.", ["ev-1", "ev-2"])
    results["final"] = thread.conclude("final", "Revenue grew by about 10%.", ["cc-1"])
    results["pin"] = thread.pin("definition", "Revenue means net sales.", 0)
    results["read2"] = thread.read_source([ref("r3", location="p. 9")])
    results["revise"] = thread.evidence.revise(
        "ev-2", {"text": "Revenue in 2022 was EUR 3.9 million (restated).", "cites": ["r3"]}
    )
    results["repair"] = thread.conclusions.revise(
        "cc-1", {"text": "Revenue grew 7.7%.", "cites": ["ev-1", "ev-4"]}
    )
    return results
