"""`registre import` / `registre transcript --format PROVIDER`: files in, threads out, bad input
refused with one line and nothing written (specs/entries.md section 6)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from sqlalchemy import create_engine

from registre.ledger.ledger import Ledger
from tests.cli.conftest import Run, one_line_error
from tests.importers.helpers import FIXTURES, REAL, STEM, values
from tests.ledger.helpers import dump


def _dump() -> object:
    engine = create_engine(os.environ["REGISTRE_DB"])
    try:
        return dump(engine)
    finally:
        engine.dispose()


def _entries(thread: str) -> list[tuple[str, dict[str, object], str]]:
    with Ledger.open(os.environ["REGISTRE_DB"], create=False) as ledger:
        return [(e.kind, e.body, e.actor) for e in ledger.thread(thread).entries()]


def test_continuation_across_two_imports_pairs_the_result(initialised: str, run: Run) -> None:
    first = run("import", "t1", str(FIXTURES / "openai_chat.jsonl"))
    assert first.code == 0, first.err
    assert "format openai" in first.err and "imported 12 entries into t1 (seq 3..14)" in first.out
    second = run("import", "t1", str(FIXTURES / "openai_chat_continued.jsonl"))
    assert second.code == 0, second.err
    kind, body, actor = _entries("t1")[15]
    assert (kind, body["call_id"], actor) == ("tool.result", "call_c", "tool:restart")


def test_several_files_into_one_thread_read_in_order(initialised: str, run: Run) -> None:
    files = [str(FIXTURES / name) for name in ("openai_chat.jsonl", "openai_chat_continued.jsonl")]
    result = run("import", "t1", *files, "--json")
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert summary["entries"] == 14 and summary["threads"]["t1"]["last_seq"] == 16
    assert [file["fmt"] for file in summary["files"]] == ["openai", "openai"]


def test_small_batches_give_the_same_entries(initialised: str, run: Run) -> None:
    assert run("thread", "create", "t2").code == 0
    name = str(FIXTURES / "claude_code.jsonl")
    assert run("import", "t1", name).code == 0
    assert run("import", "t2", name, "--batch", "2", "--quiet").code == 0
    assert _entries("t2") == _entries("t1")[3:]


def test_thread_per_file_and_tau_bench_tasks(initialised: str, run: Run, tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    for name in ("swe_agent.traj", "tau_bench.json", "langchain.json"):
        shutil.copy(FIXTURES / name, folder / name)
    result = run("import", "--thread-per-file", *sorted(str(p) for p in folder.iterdir()), "--json")
    assert result.code == 0, result.err
    threads = json.loads(result.out)["threads"]
    assert sorted(threads) == ["langchain", "swe_agent", "tau_bench-0", "tau_bench-1"]
    assert all(thread["created"] for thread in threads.values())
    only = run("import", "t1", str(folder / "tau_bench.json"), "--task", "1")
    assert only.code == 0, only.err
    assert "imported 8 entries into t1" in only.out


def test_transcript_writes_back_what_was_imported(
    initialised: str, run: Run, workdir: Path
) -> None:
    assert run("thread", "create", "t2").code == 0
    assert run("import", "t2", str(FIXTURES / "anthropic.json")).code == 0
    result = run("transcript", "t2", "--format", "anthropic", "-o", "back.json")
    assert result.code == 0, result.err
    assert json.loads((workdir / "back.json").read_text()) == values("anthropic.json")[0]
    openai = run("transcript", "t1", "--format", "openai")
    assert [json.loads(line) for line in openai.out.splitlines()] == [
        {"role": "user", "content": text} for text in ("one", "two", "three")
    ]


def test_verify_accepts_imported_threads(initialised: str, run: Run) -> None:
    for name in ("anthropic.json", "claude_code.jsonl", "openhands.json"):
        assert run("import", "t1", str(FIXTURES / name)).code == 0
    result = run("verify", "--db")
    assert result.code == 0, result.err


def test_truncated_line_fail(initialised: str, run: Run, tmp_path: Path) -> None:
    bad = tmp_path / "cut.jsonl"
    data = (REAL / f"{STEM}.openai.jsonl").read_bytes()
    bad.write_bytes(data[: len(data) - 40])
    before = _dump()
    error = one_line_error(run("import", "t1", str(bad)))
    assert f"{bad}: line 378: invalid JSON" in error
    assert _dump() == before


def test_result_with_no_call_anywhere_fail(initialised: str, run: Run, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    data = (REAL / f"{STEM}.openai.jsonl").read_bytes()
    bad.write_bytes(data + b'{"role": "tool", "tool_call_id": "nobody", "content": ""}\n')
    before = _dump()
    error = one_line_error(run("import", "t1", str(bad)))
    assert error == (
        f"registre: error: {bad}: line 379: result for tool call 'nobody', which no call in "
        "this file or earlier in the thread issued"
    )
    assert _dump() == before


def test_wrong_format_fail(initialised: str, run: Run) -> None:
    before = _dump()
    name = FIXTURES / "claude_code.jsonl"
    error = one_line_error(run("import", "t1", str(name), "--format", "openai"))
    assert "--format openai given, but the file looks like claude-code" in error
    assert _dump() == before


def test_bad_second_file_writes_nothing_from_the_first_fail(
    initialised: str, run: Run, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"role": "user", "content": "fine"}\n{"role": \n')
    before = _dump()
    one_line_error(run("import", "t1", str(FIXTURES / "openai_chat.jsonl"), str(bad)))
    assert _dump() == before


def test_unknown_thread_fail(initialised: str, run: Run) -> None:
    error = one_line_error(run("import", "nope", str(FIXTURES / "openai_chat.jsonl")))
    assert "no thread 'nope'" in error


def test_check_writes_nothing(initialised: str, run: Run, tmp_path: Path) -> None:
    before = _dump()
    result = run("import", "--thread-per-file", str(FIXTURES / "anthropic.json"), "--check")
    assert result.code == 0, result.err
    assert result.out == "checked 18 entries; nothing written (--check)\n"
    assert _dump() == before


def test_unknown_task_fail(initialised: str, run: Run) -> None:
    before = _dump()
    error = one_line_error(run("import", "t1", str(FIXTURES / "tau_bench.json"), "--task", "9"))
    assert error.endswith("tau_bench.json: $: no task '9'; the file holds 0, 1")
    assert _dump() == before


def test_bad_last_line_of_a_big_file_writes_no_batch_fail(
    initialised: str, run: Run, tmp_path: Path
) -> None:
    bad = tmp_path / "big.jsonl"
    data = (REAL / f"{STEM}.openai.jsonl").read_bytes()
    bad.write_bytes(data + b'{"role": "user", "content": "cut\n')
    before = _dump()
    error = one_line_error(run("import", "t1", str(bad), "--batch", "50"))
    assert f"{bad}: line 379: invalid JSON" in error
    assert _dump() == before
