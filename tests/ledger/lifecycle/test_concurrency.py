"""Two processes deciding against one thread (both engines): every decision is made at the
locked head, so the recorded history always replays and the derived tables match it.

Both writers hammer the same ids -- each revises ``ev-k`` and cites ``ev-k`` in a final
right after -- so one of them regularly decides on evidence the other just changed. A writer
deciding on a stale cached state would record an outcome the replay contradicts.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os

import pytest

from registre.attest.notes import Signer
from registre.ledger.ledger import Ledger
from registre.ledger.lifecycle.api import ConclusionRefusedError, RevisionRefusedError
from registre.ledger.verify.database import verify_database
from tests.ledger.lifecycle_helpers import derived_rows, folded_rows, ref
from tests.ledger.test_reliability import _fork, _read_all

pytestmark = pytest.mark.slow

ROUNDS = 60


def test_two_processes_never_record_a_stale_decision(
    db_url: str, signer: Signer, ledger: Ledger
) -> None:
    thread = ledger.create_thread("t1")
    thread.read_source([ref("r1"), ref("r2")])
    ledger.engine.dispose()  # children must not inherit open connections

    barrier = multiprocessing.get_context("fork").Barrier(2)

    def writer(fd: int, actor: str) -> None:
        with Ledger.open(db_url, signer, create=False) as mine:
            target = mine.thread("t1")
            for k in range(1, ROUNDS + 1):
                barrier.wait(timeout=30)  # both writers enter every round together
                accepted = target.evidence.upsert(
                    [{"text": f"{actor} {k}", "cites": ["r1"]}], actor=actor
                )
                os.write(fd, f"ev {accepted.accepted[0]}\n".encode())
                replacement = {"text": f"restated {k}", "cites": ["r2"]}
                with contextlib.suppress(RevisionRefusedError):
                    target.evidence.revise(f"ev-{k}", replacement, actor=actor)
                with contextlib.suppress(ConclusionRefusedError):
                    target.conclude("final", f"answer {k}", [f"ev-{k}", f"ev-{k + 1}"], actor=actor)

    children = [_fork(lambda fd, a=actor: writer(fd, a)) for actor in ("w1", "w2")]
    lines: list[str] = []
    for pid, fd in children:
        lines += _read_all(fd).splitlines()
        assert os.waitpid(pid, 0)[1] == 0, "a writer failed"
    evidence = [line.split()[1] for line in lines if line.startswith("ev ")]
    assert len(evidence) == 2 * ROUNDS and len(set(evidence)) == len(evidence)  # never reused
    actors = [entry.actor for entry in ledger.thread("t1").entries(1)]
    switches = sum(a != b for a, b in itertools.pairwise(actors))
    assert switches >= ROUNDS, "the writers did not interleave"
    (report,) = verify_database(ledger, keys=[signer.verifier()])  # replays every decision
    assert report.size == 1 + 2 * 3 * ROUNDS
    assert derived_rows(ledger, "t1") == folded_rows(ledger, ledger.thread("t1"))
