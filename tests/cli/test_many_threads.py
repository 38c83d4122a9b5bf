"""Many threads (issue 17, item 5): `thread list` pages by id with a cursor, `verify --db`
takes `--thread` (repeatable) and `--jobs`, its result lines in thread order."""

from __future__ import annotations

import json

from tests.cli.conftest import Run, one_line_error


def _threads(run: Run, *ids: str) -> None:
    for thread_id in ids:
        assert run("thread", "create", thread_id).code == 0


def test_thread_list_pages(initialised: str, run: Run) -> None:
    _threads(run, "t3", "t2", "a0")
    assert [line.split("\t")[0] for line in run("thread", "list").out.splitlines()] == [
        "a0",
        "t1",
        "t2",
        "t3",
    ]
    first = run("thread", "list", "--limit", "2").out.splitlines()
    assert [line.split("\t")[0] for line in first[:2]] == ["a0", "t1"] and first[2] == "next: t1"
    last = run("thread", "list", "--limit", "2", "--after", "t1").out.splitlines()
    assert [line.split("\t")[0] for line in last] == ["t2", "t3"]  # no next: the last page
    page = json.loads(run("thread", "list", "--limit", "3", "--json").out)
    assert list(page) == ["threads", "next"] and page["next"] == "t2"
    assert [t["id"] for t in page["threads"]] == ["a0", "t1", "t2"]
    assert list(page["threads"][1]) == ["id", "size", "origin"] and page["threads"][1]["size"] == 3
    rest = json.loads(run("thread", "list", "--limit", "3", "--after", "t2", "--json").out)
    assert rest == {
        "threads": [{"id": "t3", "size": 0, "origin": rest["threads"][0]["origin"]}],
        "next": None,
    }
    one_line_error(run("thread", "list", "--limit", "0"))


def test_verify_some_threads_with_jobs(initialised: str, run: Run) -> None:
    _threads(run, "t3", "t2")
    result = run("verify", "--db", "--thread", "t3", "--thread", "t1", "--jobs", "2")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("ok t1: 3 entries") and lines[1].startswith("ok t3: 0 entries")
    assert lines[2].startswith("verified 2 thread(s)")
    every = json.loads(run("verify", "--db", "--jobs", "2", "--json").out)
    assert [t["thread"] for t in every["threads"]] == ["t1", "t2", "t3"]
    assert "t9" in one_line_error(run("verify", "--db", "--thread", "t1", "--thread", "t9"))
