"""A real investigation, exported: the bundle every report test reads.

Built through the public ``registre.ledger`` API on a SQLite file (turns, tool calls with
bulky results, a source read, evidence, a supersession, computes and a final, a final refused
for citing superseded evidence, a pin, model calls at a small budget so that compactions fold
and refold), checkpointed and exported.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from registre.attest.notes import Signer
from registre.attest.verify import TrustPolicy
from registre.ledger import ConclusionRefusedError, Ledger, export_thread, source_ref


@dataclass(frozen=True)
class Investigation:
    bundle: Path
    db: Path
    policy: TrustPolicy
    vkey: str
    final_id: str
    superseded_id: str
    model_calls: int


def build(
    folder: Path,
    *,
    steps: int = 24,
    marker: str = "",
    stale: bool = False,
    signer: Signer | None = None,
) -> Investigation:
    signer = signer or Signer.generate("report.example/ledger")
    db = folder / "ledger.db"
    calls = 0
    with Ledger.open(str(db), signer) as ledger:
        thread = ledger.create_thread("q3-review")
        task = thread.append(
            "turn",
            {"role": "user", "text": "Reconcile the Q3 ECL by segment; threshold EUR 2m."},
            "user",
        )
        thread.pin("task_parameter", "threshold EUR 2m", task.seq)
        read = thread.read_source(
            [
                source_ref("r1", "book.csv", "rows 1-40", passage="Offices ECL 12.4m"),
                source_ref("r2", "tape.csv", "rows 1-90", passage="Retail ECL 41.2m"),
            ]
        )
        assert read.all_accepted
        first = thread.evidence.upsert([{"text": "Offices ECL is 12.4m", "cites": ["r1"]}])
        offices = first.accepted[0]
        retail = thread.evidence.upsert([{"text": "Retail ECL is 41.2m", "cites": ["r2"]}])
        for step in range(steps):
            call_id = f"call-{step}"
            thread.append(
                "tool.call",
                {
                    "name": "sql",
                    "arguments": {"query": f"select * from risk where seg={step}"},
                    "call_id": call_id,
                },
                "agent",
            )
            rows = "\n".join(f"row {step}.{i}: exposure {100 + i} ECL {i % 7}" for i in range(40))
            thread.append(
                "tool.result", {"name": "sql", "call_id": call_id, "content": rows}, "tool"
            )
            thread.append(
                "turn",
                {
                    "role": "assistant",
                    "text": f"Segment {step} reconciles within tolerance.{marker}",
                },
                "agent",
            )
            thread.model_call("scripted-model", budget=2000)
            calls += 1
        revised = thread.evidence.revise(
            offices, replacement={"text": "Offices ECL is 12.9m", "cites": ["r1"]}
        )
        with contextlib.suppress(ConclusionRefusedError):  # recorded, refused: superseded
            thread.conclude("final", "Offices ECL is 12.4m", [offices])
        compute = thread.conclude(
            "compute", "Offices and Retail sum to 54.1m", [retail.accepted[0]]
        )
        final = thread.conclude(
            "final", "The Q3 ECL reconciles except Offices", [revised.successor or "", compute.id]
        )
        if stale:  # the evidence the final relies on is retracted after it
            thread.evidence.revise(revised.successor or "")
        thread.model_call("scripted-model", budget=2000)
        calls += 1
        thread.checkpoint()
        bundle = folder / "bundle.zip"
        export_thread(ledger, "q3-review", bundle)
    vkey = signer.verifier().vkey()
    return Investigation(
        bundle, db, TrustPolicy(log_key=signer.verifier()), vkey, final.id, offices, calls
    )


@pytest.fixture(scope="session")
def investigation(tmp_path_factory: pytest.TempPathFactory) -> Investigation:
    return build(tmp_path_factory.mktemp("report"))
