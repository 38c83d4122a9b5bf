"""What the append path remembers between appends is never served stale (issue 17, item 4).

* the frontier of a stored head (:func:`registre.ledger.core.append._frontier_of`): used only
  when the row read under the write lock holds exactly the bytes it was made from, so a head
  moved by another connection or process, a group rolled back after its head moved, another
  database's thread of the same id and a tampered frontier are all read afresh;
* the published-checkpoint record (:mod:`registre.ledger.store.published`): a record another
  process writes between two appends refuses the second;
* the envelope members of a thread, and the key's vkey: pure functions of the key and the
  thread id (covered byte for byte by tests/attest/entries/test_entry_batch.py).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registre.attest.notes import Signer
from registre.ledger.core import append as append_module
from registre.ledger.core.group_commit import _Request, queue_for
from registre.ledger.errors import StoreCorruptError, UnknownThreadError
from registre.ledger.ledger import Ledger
from registre.ledger.store.published import DatabaseBehindError
from registre.ledger.verify.database import verify_database
from tests.ledger.helpers import execute, turn


def _open(path: Path, signer: Signer) -> Ledger:
    return Ledger.open(f"sqlite:///{path}", signer)


def test_another_process_appends_between_two_appends(tmp_path: Path, signer: Signer) -> None:
    path = tmp_path / "p.db"
    with _open(path, signer) as ledger:
        thread = ledger.create_thread("t")
        assert thread.append(*turn("mine 0")).seq == 0
        child = (
            "import sys\n"
            "from registre.attest.notes.keys import Signer\n"
            "from registre.ledger.ledger import Ledger\n"
            "signer = Signer.from_skey(sys.argv[2])\n"
            "with Ledger.open(sys.argv[1], signer, create=False) as other:\n"
            "    for i in range(3):\n"
            "        other.thread('t').append('turn', {'role': 'user', 'text': 'x'}, 'other')\n"
        )
        subprocess.run(
            [sys.executable, "-c", child, f"sqlite:///{path}", signer.skey()], check=True
        )
        entry = thread.append(*turn("mine 1"))
        assert entry.seq == 4 and entry.prev_size == 4
        assert [e.actor for e in thread.entries()] == ["agent", "other", "other", "other", "agent"]
        (report,) = verify_database(ledger)
        assert report.size == 5


def test_another_connection_appends_between_two_appends(tmp_path: Path, signer: Signer) -> None:
    """Another engine on the file (a ledger opened beside this one) moves the head: the next
    append of this one signs on top of it."""
    path = tmp_path / "c.db"
    with _open(path, signer) as one, _open(path, signer) as two:
        one.create_thread("t")
        for i in range(6):
            writer = one if i % 3 else two
            assert writer.thread("t").append(*turn(f"{i}")).seq == i
        verify_database(one)


def test_a_group_rolled_back_after_its_head_moved(tmp_path: Path, signer: Signer) -> None:
    """The group transaction moves thread a's head, then fails on an unknown thread and rolls
    back; the retry and the next append sign on the head that was committed."""
    with _open(tmp_path / "r.db", signer) as ledger:
        thread = ledger.create_thread("a")
        thread.append(*turn("first"))
        queue = queue_for(ledger)
        assert queue is not None
        group = [_Request("a", [turn("kept")], 0), _Request("nope", [turn("lost")], 0)]
        queue._lead(group)
        assert isinstance(group[1].error, UnknownThreadError)
        assert [e.seq for e in group[0].entries] == [1]
        assert thread.append(*turn("after")).seq == 2
        assert [e.body["text"] for e in thread.entries()] == ["first", "kept", "after"]
        verify_database(ledger)


def test_two_databases_with_one_thread_id(tmp_path: Path, signer: Signer) -> None:
    """The memo is by thread id; two databases hold two different threads 't' of the same
    sizes, appended to in turn: each entry signs its own database's head."""
    with _open(tmp_path / "x.db", signer) as x, _open(tmp_path / "y.db", signer) as y:
        tx, ty = x.create_thread("t"), y.create_thread("t")
        for i in range(5):
            ex = tx.append(*turn(f"x {i}"))
            ey = ty.append(*turn(f"y {i}"))
            assert ex.seq == ey.seq == i and (i == 0 or ex.prev_root != ey.prev_root)
        verify_database(x)
        verify_database(y)


def test_a_tampered_frontier_is_refused_after_an_append(tmp_path: Path, signer: Signer) -> None:
    with _open(tmp_path / "f.db", signer) as ledger:
        thread = ledger.create_thread("t")
        thread.append_many([turn(f"{i}") for i in range(3)])
        execute(ledger.engine, "UPDATE thread SET frontier = zeroblob(64) WHERE id = 't'")
        with pytest.raises(StoreCorruptError, match="does not match the stored frontier"):
            thread.append(*turn("on a forged head"))


def test_a_checkpoint_published_by_another_process_refuses_the_next_append(
    tmp_path: Path, signer: Signer
) -> None:
    """The published record is read again when the file changes: a record another process
    wrote between two appends (here: a larger checkpoint of a later history) is seen."""
    path = tmp_path / "b.db"
    with _open(path, signer) as ledger:
        thread = ledger.create_thread("t")
        thread.append(*turn("one"))
        thread.checkpoint()
        thread.append(*turn("two"))
        record = json.loads((tmp_path / "b.db.published").read_text())
        record["threads"][thread.origin] = {
            "size": 9,
            "root": base64.b64encode(bytes(32)).decode(),
        }
        (tmp_path / "b.db.published").write_text(json.dumps(record))
        with pytest.raises(DatabaseBehindError, match="size 9"):
            thread.append(*turn("three"))
        assert thread.head().size == 2


_STEPS = st.lists(
    st.sampled_from(["one", "two", "group", "failed_group", "batch"]), min_size=1, max_size=12
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=_STEPS)
def test_any_interleaving_of_writers_and_rollbacks(
    tmp_path_factory: pytest.TempPathFactory, signer: Signer, steps: list[str]
) -> None:
    """Appends by two engines on one file, groups that commit and groups that roll back
    after moving the head, in any order: the thread holds exactly the entries acknowledged,
    gap-free, and verifies; a cleared memo changes nothing."""
    path = tmp_path_factory.mktemp("memo") / "h.db"
    with _open(path, signer) as one, _open(path, signer) as two:
        one.create_thread("t")
        queue = queue_for(one)
        assert queue is not None
        expected: list[str] = []
        for index, step in enumerate(steps):
            text = f"{index} {step}"
            if step == "one":
                one.thread("t").append(*turn(text))
                expected.append(text)
            elif step == "two":
                two.thread("t").append(*turn(text))
                expected.append(text)
            elif step == "batch":
                two.thread("t").append_many([turn(text), turn(text + " b")])
                expected += [text, text + " b"]
            else:
                group = [_Request("t", [turn(text)], 0, one.engine)]
                if step == "failed_group":
                    group.append(_Request("missing", [turn("lost")], 0, one.engine))
                queue._lead(group, two.engine)
                expected.append(text)
            if index % 4 == 3:
                append_module._HEADS.clear()
        entries = list(one.thread("t").entries())
        assert [e.body["text"] for e in entries] == expected
        assert [e.seq for e in entries] == list(range(len(expected)))
        verify_database(one)
