"""`registre conclude`, `conclusions`, `trace` and `rebuild` (with `verify --db`)."""

from __future__ import annotations

import hashlib
import json

import pytest

from registre.ledger.ledger import Ledger
from tests.cli.conftest import Run, error_and_hint, one_line_error
from tests.cli.test_evidence import DIGEST, STATEMENTS, read
from tests.ledger.helpers import dump, execute


@pytest.fixture
def concluded(initialised: str, run: Run) -> str:
    """t1: three turns, r1 (seq 3), r2 (seq 4), ev-1 and ev-2 (seq 5), compute cc-1 (seq 6)
    and final cc-2 (seq 7), then ev-2 superseded by ev-3 (seq 8) leaving both stale."""
    read(run, "r1")
    read(run, "r2", location="p. 2")
    assert run("evidence", "upsert", "t1", "--body", STATEMENTS).code == 0
    result = run(
        "conclude", "t1", "--kind", "compute", "--text", "Revenue grew 10.5%.",
        "--cite", "ev-1", "--cite", "ev-2",
    )  # fmt: skip
    assert result.out == "seq 6\tcc-1\tcompute accepted\n"
    result = run("conclude", "t1", "--kind", "final", "--text", "It grew.", "--cite", "cc-1")
    assert result.out == "seq 7\tcc-2\tfinal accepted\n"
    replacement = '{"text": "Revenue in 2022 was EUR 3.9 million.", "cites": ["r2"]}'
    assert run("evidence", "revise", "t1", "ev-2", "--replacement", replacement).code == 0
    return initialised


def test_refused_final_is_recorded(concluded: str, run: Run, db_url: str) -> None:
    result = run("conclude", "t1", "--kind", "final", "--text", "It grew.", "--cite", "cc-1")
    assert one_line_error(result) == (
        "registre: error: Conclusion 'cc-1' is stale because evidence it relies on changed; "
        "revise it before a final answer cites it. (refused stale_citation; recorded as seq 9)"
    )
    with Ledger.open(db_url) as ledger:
        entry = ledger.thread("t1").entry(9)
    assert entry.kind == "conclusion.final"
    assert entry.body["outcome"]["reason"] == "stale_citation"


def test_conclusions_listing(concluded: str, run: Run) -> None:
    assert run("conclusions", "t1").out.splitlines() == [
        "cc-1\tcompute\tactive\tstale\tseq 6\tev-1,ev-2\tRevenue grew 10.5%.",
        "cc-2\tfinal\tactive\tstale\tseq 7\tcc-1\tIt grew.",
    ]
    listed = json.loads(run("conclusions", "t1", "--stale", "--json").out)
    assert [(c["id"], c["stale"], c["changed_seq"], c["relies_on"]) for c in listed] == [
        ("cc-1", True, 8, ["ev-1", "ev-2"]),
        ("cc-2", True, 8, ["ev-1", "ev-2"]),
    ]


def test_trace(concluded: str, run: Run) -> None:
    digest = DIGEST[:12]
    assert run("trace", "t1", "cc-2").out.splitlines() == [
        "cc-2 final active stale (seq 7) It grew.",
        "└── cc-1 compute active stale (seq 6) Revenue grew 10.5%.",
        "    ├── ev-1 active (seq 5) Revenue in 2023 was EUR 4.2 million.",
        f"    │   └── r1 report.pdf p. 1 sha256 {digest}… (source.read seq 3)",
        "    └── ev-2 superseded (seq 5) -> ev-3 Revenue in 2022 was EUR 3.8 million.",
        f"        └── r2 report.pdf p. 2 sha256 {digest}… (source.read seq 4)",
    ]
    tree = json.loads(run("trace", "t1", "cc-2", "--json").out)
    evidence = tree["cites"][0]["cites"]
    assert [e["id"] for e in evidence] == ["ev-1", "ev-2"]
    assert evidence[1]["references"] == [
        {
            "ref": "r2",
            "source": "report.pdf",
            "location": "p. 2",
            "sha256": hashlib.sha256(b"x").hexdigest(),
            "read_seq": 4,
        }
    ]


def test_rebuild_repairs_what_verify_finds(concluded: str, run: Run, db_url: str) -> None:
    with Ledger.open(db_url) as ledger:
        execute(ledger.engine, "UPDATE lifecycle_evidence SET status = 'active' WHERE id = 'ev-2'")
    failure, hint = error_and_hint(run("verify", "--db"), code=1)
    assert "thread t1 seq 5: lifecycle_evidence row ev-2: column status is 'active'" in failure
    assert (
        hint == "registre: hint: run `registre rebuild --thread t1` to rebuild it from the entries"
    )
    assert run("rebuild", "--thread", "t1").out == "rebuilt t1: 6 lifecycle entries of 9\n"
    assert run("verify", "--db").code == 0
    assert run("rebuild").out == "rebuilt t1: 6 lifecycle entries of 9\n"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["conclude", "t1", "--kind", "answer", "--text", "x", "--cite", "ev-1"], "'--kind'"),
        (["conclude", "t1", "--kind", "final", "--text", "x", "--cite", "e-1"], "--cite[0]:"),
        (
            [
                "conclude",
                "t1",
                "--kind",
                "final",
                "--text",
                "x",
                "--cite",
                "ev-1",
                "--cite",
                "ev-1",
            ],
            "--cite[1]: 'ev-1' appears twice",
        ),
        (["conclude", "t9", "--kind", "final", "--text", "x", "--cite", "ev-1"], "no thread"),
        (["conclude", "t1", "--kind", "final", "--cite", "ev-1"], "Missing option '--text'"),
        (["conclusions", "t9"], "no thread 't9'"),
        (["trace", "t1", "cc-9"], "thread t1 has no conclusion 'cc-9'"),
        (["trace", "t1"], "Missing argument 'CONCLUSION'"),
        (["rebuild", "--thread", "t9"], "no thread 't9'"),
    ],
)
def test_bad_input_fail(
    concluded: str, run: Run, db_url: str, args: list[str], expected: str
) -> None:
    with Ledger.open(db_url) as ledger:
        before = dump(ledger.engine)
    assert expected in one_line_error(run(*args))
    with Ledger.open(db_url) as ledger:
        assert dump(ledger.engine) == before
