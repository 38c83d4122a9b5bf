"""`verify_database(progress=...)`: what a progress bar is told adds up to the entries checked."""

from __future__ import annotations

from pathlib import Path

from registre.attest.notes import Signer
from registre.ledger import Ledger, verify_database


def test_progress_counts_every_entry_once(tmp_path: Path) -> None:
    with Ledger.open(str(tmp_path / "l.db"), Signer.generate("progress.example/l")) as ledger:
        for name, count in (("a", 7), ("b", 3)):
            thread = ledger.create_thread(name)
            for i in range(count):
                thread.append("turn", {"role": "user", "text": f"m{i}"}, "user")
        told: list[int] = []
        reports = verify_database(ledger, batch=2, progress=told.append)
    assert sum(told) == sum(report.size for report in reports) == 10
    assert max(told) <= 2  # once per batch, as the batches go
