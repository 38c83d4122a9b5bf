"""Properties of the lifecycle on the ledger (Hypothesis, both engines).

Random sequences of thread API calls -- reads (with conflicting re-reads), upserts (valid,
invalid, mixed), revisions and retractions of evidence and conclusions, computes and finals
citing anything, pins (some of later entries), unpins, plain turns, raw appends of decided
events, and dropping the writer's cache -- then:

* every call that records wrote exactly one entry, every refusal before writing none;
* the derived tables written call by call equal the fold of the entries computed in memory,
  and equal what ``rebuild`` writes;
* the writer's state equals ``registre.lifecycle.replay`` of the recorded events;
* ``verify --db`` accepts the thread.

Each example gets a new thread in the same database.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registre.ledger.ledger import Ledger
from registre.ledger.lifecycle.api import LifecycleRefusedError
from registre.ledger.lifecycle.store import rebuild
from registre.ledger.store.lifecycle_fold import PinSourceRefusedError
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.lifecycle import (
    LifecycleState,
    Statement,
    UpsertRequest,
    event_to_body,
    parse_body,
    replay,
    step,
)
from tests.examples_budget import examples
from tests.ledger.lifecycle_helpers import derived_rows, folded_rows, ref

_THREADS = itertools.count()

REF_IDS = ("r1", "r2", "r3", "r4")
TEXTS = (
    "Revenue was EUR 4.2m.",
    "Costs fell.",
    "Headcount rose to 41.",
    "Revenue grew 10%.",
    "The auditor's opinion was unqualified.",
    " ",
)
texts = st.sampled_from(TEXTS)
KINDS = (  # repeated kinds are drawn more often
    "read",
    "upsert",
    "upsert",
    "revise_evidence",
    "revise_evidence",
    "compute",
    "compute",
    "final",
    "final",
    "revise_conclusion",
    "pin",
    "unpin",
    "turn",
    "raw_upsert",
    "forget",
)


def _some(items: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    """One to three distinct items; one time in ten none at all (refused: no citation)."""
    return st.integers(0, 9).flatmap(
        lambda n: st.just([]) if n == 0 else st.lists(items, min_size=1, max_size=3, unique=True)
    )


def _ids(known: list[str], unknown: str) -> st.SearchStrategy[str]:
    """Mostly ids the thread has (in any status); one time in eight one it does not."""
    if not known:
        return st.just(unknown)
    return st.integers(0, 7).flatmap(
        lambda n: st.just(unknown) if n == 0 else st.sampled_from(known)
    )


def action(state: LifecycleState) -> st.SearchStrategy[tuple[Any, ...]]:
    """One call, its arguments drawn from what ``state`` holds (so most calls are accepted
    and every kind of transition happens), with unknown ids and blanks mixed in."""
    refs = [r.ref for r in state.iter_references()]
    evidence = [e.id for e in state.iter_evidence()]
    conclusions = [c.id for c in state.iter_conclusions()]
    pins = [p.id for p in state.iter_pins()]
    statement = st.fixed_dictionaries({"text": texts, "cites": _some(_ids(refs, "r9"))})
    cited = _ids(evidence + conclusions, "cc-99")
    conclusion = st.fixed_dictionaries({"text": texts, "cites": _some(cited)})
    locations = st.sampled_from(("p. 1", "p. 2"))
    return st.sampled_from(KINDS).flatmap(
        lambda kind: {
            "read": st.tuples(
                st.just(kind),
                st.lists(st.tuples(st.sampled_from(REF_IDS), locations), min_size=1, max_size=3),
            ),
            "upsert": st.tuples(st.just(kind), st.lists(statement, min_size=1, max_size=4)),
            "revise_evidence": st.tuples(
                st.just(kind), _ids(evidence, "ev-99"), st.none() | statement
            ),
            "compute": st.tuples(st.just(kind), conclusion),
            "final": st.tuples(st.just(kind), conclusion),
            "revise_conclusion": st.tuples(
                st.just(kind), _ids(conclusions, "cc-99"), st.none() | conclusion
            ),
            "pin": st.tuples(st.just(kind), texts, st.integers(0, 3)),
            "unpin": st.tuples(st.just(kind), _ids(pins, "pin-99"), texts),
            "turn": st.tuples(st.just(kind)),
            "raw_upsert": st.tuples(st.just(kind), statement),
            "forget": st.tuples(st.just(kind)),
        }[kind]
    )


def run(ledger: Ledger, thread: Thread, action: tuple[Any, ...]) -> bool:
    """Carry out ``action``; return whether it was meant to record one entry."""
    name = action[0]
    try:
        if name == "read":
            thread.read_source([ref(r, location=loc) for r, loc in action[1]])
        elif name == "upsert":
            thread.evidence.upsert(action[1])
        elif name == "revise_evidence":
            thread.evidence.revise(action[1], action[2])
        elif name in ("compute", "final"):
            thread.conclude(name, action[1]["text"], action[1]["cites"])
        elif name == "revise_conclusion":
            thread.conclusions.revise(action[1], action[2])
        elif name == "pin":
            size = thread.head().size
            thread.pin("decision", action[1], max(0, size - action[2]))  # offset 0: a later entry
        elif name == "unpin":
            thread.unpin(action[1], action[2])
        elif name == "turn":
            thread.append("turn", {"role": "user", "text": "go on"}, "alice")
        elif name == "raw_upsert":
            statement = Statement(action[1]["text"], tuple(action[1]["cites"]))
            event, _ = step(thread.lifecycle_state(), UpsertRequest((statement,)))
            thread.append("evidence.upsert", event_to_body(event), "importer")
        else:
            ledger.lifecycle.forget(thread.id)
            return False
    except LifecycleRefusedError:
        return True  # refused, and the refusal recorded
    except PinSourceRefusedError:
        return False
    return True


# Each example is up to ~30 signed, committed transactions plus a rebuild and a verify: the
# profile's count under deep, 40 in make test (CI's 300 would take minutes per engine).
@settings(
    max_examples=examples(40),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), prelude=st.booleans(), steps=st.integers(0, 24))
def test_random_calls_keep_tables_fold_and_replay_equal(
    ledger: Ledger, data: st.DataObject, prelude: bool, steps: int
) -> None:
    thread = ledger.create_thread(f"p{next(_THREADS)}")
    if prelude:  # start from a thread with evidence, a compute and a final
        thread.read_source([ref(r) for r in REF_IDS[:3]])
        thread.evidence.upsert([{"text": t, "cites": ["r1", "r2"]} for t in TEXTS[:3]])
        thread.conclude("compute", TEXTS[3], ["ev-1", "ev-2"])
        thread.conclude("final", TEXTS[3], ["cc-1", "ev-3"])
    for _ in range(steps):
        size = thread.head().size
        chosen = data.draw(action(thread.lifecycle_state()))
        records = run(ledger, thread, chosen)
        assert thread.head().size == size + records, chosen
    incremental = derived_rows(ledger, thread.id)
    assert incremental == folded_rows(ledger, thread)
    rebuild(ledger, thread.id)
    assert derived_rows(ledger, thread.id) == incremental
    events = [parse_body(e.kind, e.body) for e in thread.entries() if e.kind != "turn"]
    assert thread.lifecycle_state() == replay(events)
    verify_database(ledger, thread=thread.id)
