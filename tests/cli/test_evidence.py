"""`registre source read` and `registre evidence ...`: records, reads, and the bad-input
promise (one line, exit 2, nothing written). Thread t1 starts with three turns (seq 0-2)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from registre.ledger.ledger import Ledger
from tests.cli.conftest import Run, one_line_error
from tests.ledger.helpers import dump

DIGEST = hashlib.sha256(b"x").hexdigest()
STATEMENTS = json.dumps(
    [
        {"text": "Revenue in 2023 was EUR 4.2 million.", "cites": ["r1"]},
        {"text": "Revenue in 2022 was EUR 3.8 million.", "cites": ["r2"]},
    ]
)


def read(run: Run, ref: str, digest: str = DIGEST, location: str = "p. 1") -> None:
    result = run(
        "source", "read", "t1", "--ref", ref, "--source", "report.pdf",
        "--location", location, "--sha256", digest,
    )  # fmt: skip
    assert result.code == 0, result.err


@pytest.fixture
def with_evidence(initialised: str, run: Run) -> str:
    """t1 with r1, r2 read (seq 3, 4) and ev-1, ev-2 admitted (seq 5)."""
    read(run, "r1")
    read(run, "r2", location="p. 2")
    assert run("evidence", "upsert", "t1", "--body", STATEMENTS).code == 0
    return initialised


def test_source_read(initialised: str, run: Run, workdir: Path, db_url: str) -> None:
    (workdir / "passage.txt").write_bytes(b"Revenue was EUR 4.2 million.\n")
    result = run(
        "source", "read", "t1", "--ref", "r1", "--source", "report.pdf", "--location", "p. 4",
        "--passage-file", "passage.txt", "--actor", "reader",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.out == "seq 3\treference 0\taccepted\tr1\n"
    with Ledger.open(db_url) as ledger:
        entry = ledger.thread("t1").entry(3)
    assert entry.kind == "source.read" and entry.actor == "reader"
    (registered,) = entry.body["request"]["refs"]
    assert registered["sha256"] == hashlib.sha256(b"Revenue was EUR 4.2 million.\n").hexdigest()
    # Re-reading r1 as another passage is refused by the rules, and the refusal recorded.
    result = run(
        "source", "read", "t1", "--ref", "r1", "--source", "report.pdf", "--location", "p. 5",
        "--sha256", DIGEST,
    )  # fmt: skip
    message = one_line_error(result)
    assert "1 of 1 references rejected (recorded as seq 4)" in message
    assert "Reference 'r1' is already registered with a different source" in message
    assert result.out == "seq 4\treference 0\trejected\treference_conflict\n"


def test_evidence_upsert_partly_accepted(initialised: str, run: Run, workdir: Path) -> None:
    read(run, "r1")
    body = '{"statements": [{"text": "A.", "cites": ["r1"]}, {"text": "B.", "cites": ["r7"]}]}'
    result = run("evidence", "upsert", "t1", "--body", body)
    assert result.out.splitlines() == [
        "seq 4\tstatement 0\taccepted\tev-1",
        "seq 4\tstatement 1\trejected\tunregistered_reference",
    ]
    assert "1 of 2 statements rejected (recorded as seq 4); statement 1: Reference 'r7'" in (
        one_line_error(result)
    )
    (workdir / "s.json").write_text('[{"text": "C.", "cites": ["r1"]}]')
    assert run("evidence", "upsert", "t1", "--body", "@s.json").out == (
        "seq 5\tstatement 0\taccepted\tev-2\n"
    )
    result = run("evidence", "upsert", "t1", "--body", "-", stdin=b'[{"text":"D.","cites":["r1"]}]')
    assert result.code == 0 and result.out.endswith("accepted\tev-3\n")


def test_evidence_revise_list_show_history(with_evidence: str, run: Run) -> None:
    replacement = '{"text": "Revenue in 2022 was EUR 3.9 million.", "cites": ["r2"]}'
    result = run("evidence", "revise", "t1", "ev-2", "--replacement", replacement)
    assert result.out == "seq 6\tev-2 superseded by ev-3\tstale: none\n"
    assert run("evidence", "revise", "t1", "ev-1", "--retract").out == (
        "seq 7\tev-1 retracted\tstale: none\n"
    )
    message = one_line_error(run("evidence", "revise", "t1", "ev-1", "--retract"))
    assert message == (
        "registre: error: Evidence 'ev-1' is retracted and can no longer be cited or revised; "
        "use active evidence. (refused inactive_evidence; recorded as seq 8)"
    )
    assert run("evidence", "list", "t1").out.splitlines() == [
        "ev-1\tretracted\tseq 5\tr1\tRevenue in 2023 was EUR 4.2 million.",
        "ev-2\tsuperseded\tseq 5\tr2\tRevenue in 2022 was EUR 3.8 million.",
        "ev-3\tactive\tseq 6\tr2\tRevenue in 2022 was EUR 3.9 million.",
    ]
    listed = json.loads(run("evidence", "list", "t1", "--status", "superseded", "--json").out)
    assert listed == [
        {
            "id": "ev-2",
            "status": "superseded",
            "text": "Revenue in 2022 was EUR 3.8 million.",
            "cites": ["r2"],
            "successor": "ev-3",
            "predecessor": None,
            "seq": 5,
            "changed_seq": 6,
        }
    ]
    shown = run("evidence", "show", "t1", "ev-2").out.splitlines()
    assert shown[:6] == [
        "id: ev-2",
        "status: superseded",
        "text: Revenue in 2022 was EUR 3.8 million.",
        "admitted: seq 5",
        "changed: seq 6",
        "successor: ev-3",
    ]
    assert shown[6] == f"cites: r2\treport.pdf\tp. 2\tsha256 {DIGEST}\tread at seq 4"
    assert json.loads(run("evidence", "show", "t1", "ev-2", "--json").out) == listed[0]
    assert run("evidence", "history", "t1", "ev-3").out.splitlines() == [
        "ev-2\tadmitted at seq 5\tsuperseded at seq 6\tRevenue in 2022 was EUR 3.8 million.",
        "ev-3\tadmitted at seq 6\tactive\tRevenue in 2022 was EUR 3.9 million.",
    ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["source", "read", "t1", "--ref", "r3", "--source", "s", "--location", "l"],
            "exactly one",
        ),
        (
            ["source", "read", "t1", "--ref", "r3", "--source", "s", "--location", "l",
             "--sha256", DIGEST, "--passage-file", "p.txt"],
            "exactly one",
        ),
        (
            ["source", "read", "t1", "--ref", "r3", "--source", "s", "--location", "l",
             "--sha256", DIGEST.upper()],
            "--sha256: expected the SHA-256 of the passage as 64 lowercase hex digits",
        ),
        (
            ["source", "read", "t1", "--ref", "r3", "--source", "s", "--location", "l\n",
             "--sha256", DIGEST],
            "--location:",
        ),
        (
            ["source", "read", "t1", "--ref", "r3", "--source", "s", "--location", "l",
             "--passage-file", "missing.txt"],
            "cannot read passage file missing.txt",
        ),
        (
            ["source", "read", "t9", "--ref", "r3", "--source", "s", "--location", "l",
             "--sha256", DIGEST],
            "no thread 't9'",
        ),
        (["evidence", "upsert", "t1", "--body", "{nope"], "not strict JSON"),
        (["evidence", "upsert", "t1", "--body", '{"statements": []}'], "--body.statements"),
        (["evidence", "upsert", "t1", "--body", '[{"text": "x"}]'], "--body.statements[0]"),
        (["evidence", "upsert", "t1", "--body", STATEMENTS, "--key-file", "k"], "no operator key"),
        (["evidence", "revise", "t1", "ev-1"], "exactly one of --replacement and --retract"),
        (["evidence", "revise", "t1", "cc-1", "--retract"], "request.id"),
        (["evidence", "revise", "t1", "ev-1", "--replacement", "[]"], "request.replacement"),
        (["evidence", "show", "t1", "ev-9"], "thread t1 has no evidence 'ev-9'"),
        (["evidence", "history", "t1", "ev-9"], "no evidence 'ev-9'"),
        (["evidence", "list", "t1", "--status", "stale"], "Invalid value for '--status'"),
        (["evidence", "list", "t9"], "no thread 't9'"),
    ],
)  # fmt: skip
def test_bad_input_fail(
    with_evidence: str, run: Run, db_url: str, args: list[str], expected: str
) -> None:
    with Ledger.open(db_url) as ledger:
        before = dump(ledger.engine)
    assert expected in one_line_error(run(*args))
    with Ledger.open(db_url) as ledger:
        assert dump(ledger.engine) == before
