"""specs/storage.md section 11 and specs/lifecycle.md "On the ledger": the vectors' events,
appended to a thread, give the documented derived rows and the vectors' final state."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from registre.ledger.ledger import Ledger
from tests.ledger.lifecycle_helpers import derived_rows

ROOT = Path(__file__).resolve().parents[3]
STORAGE = (ROOT / "specs" / "storage.md").read_text(encoding="utf-8")
VECTORS: dict[str, Any] = json.loads(
    (ROOT / "specs" / "vectors" / "lifecycle-bodies.json").read_text(encoding="utf-8")
)


def documented() -> list[list[str]]:
    section = STORAGE.split("## 11. Worked example: derived lifecycle rows", 1)[1]
    blocks = re.findall(r"```text\n(.*?)```", section, re.DOTALL)
    return [block.strip().splitlines() for block in blocks]


def _value(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value.startswith("["):
        return "[" + ",".join(json.loads(value)) + "]"
    return str(value)


def _lines(rows: dict[Any, dict[str, Any]], columns: tuple[str, ...]) -> list[str]:
    ordered = sorted(rows.values(), key=lambda row: (row.get("num", 0), row.get("seq", 0)))
    return [" ".join(_value(row[column]) for column in columns) for row in ordered]


def test_vectors_give_the_documented_rows(ledger: Ledger) -> None:
    thread = ledger.create_thread("vectors")
    items = [(e["kind"], e["body"], "agent") for e in VECTORS["events"]]
    assert [entry.seq for entry in thread.append_many(items)] == list(range(len(items)))
    assert thread.lifecycle_state().snapshot() == VECTORS["final_state"]
    rows = derived_rows(ledger, "vectors")
    evidence, conclusions, transitions = documented()
    columns = ("id", "status", "seq", "changed_seq", "successor", "predecessor", "cites")
    assert _lines(rows["lifecycle_evidence"], columns) == evidence
    columns = ("id", "kind", "status", "stale", "seq", "changed_seq", "successor", "cites")
    assert _lines(rows["lifecycle_conclusion"], (*columns, "relies_on")) == conclusions
    columns = ("seq", "kind", "accepted", "rejected", "created", "changed", "reasons")
    assert _lines(rows["lifecycle_transition"], columns) == transitions
