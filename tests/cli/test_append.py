"""`registre append` and the bad-input promise: one line, exit 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from registre.ledger.ledger import Ledger
from tests.cli.conftest import Run, error_and_hint, one_line_error
from tests.ledger.helpers import dump

TURN = '{"role":"user","text":"four"}'


def test_append_inline_file_and_stdin(initialised: str, run: Run, workdir: Path) -> None:
    result = run("append", "t1", "--kind", "turn", "--body", TURN)
    assert result.code == 0 and result.out.startswith("t1 seq 3 leaf hash ")
    (workdir / "body.json").write_text('{"text": "Use IFRS 9.", "refs": [0, 2]}')
    result = run("append", "t1", "--kind", "decision", "--body", "@body.json", "--json")
    leaf = json.loads(result.out)
    assert leaf["entry"]["seq"] == 4 and leaf["entry"]["kind"] == "decision"
    result = run(
        "append",
        "t1",
        "--kind",
        "turn",
        "--actor",
        "alice",
        "--body",
        "-",
        stdin=b'{"role": "assistant", "text": "five"}',
    )
    assert result.code == 0 and "seq 5" in result.out


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["t1", "--kind", "turn", "--body", "{not json"], "not strict JSON"),
        (["t1", "--kind", "turn", "--body", '{"role":"user","role":"user"}'], "duplicate"),
        (["t1", "--kind", "turn", "--body", '{"role":"user","text":NaN}'], "JSON"),
        (["t1", "--kind", "shell", "--body", TURN], "unknown entry kind"),
        (["t1", "--kind", "turn", "--body", '{"role":"robot","text":"x"}'], "body.role"),
        (["t2", "--kind", "turn", "--body", TURN], "no thread 't2'"),
        (["t1", "--kind", "turn", "--body", "@missing.json"], "cannot read --body file"),
        (["t1", "--kind", "turn", "--body", TURN, "--actor", ""], "actor"),
        (["t1", "--kind", "turn", "--body", TURN, "--key-file", "nope.key"], "no operator key"),
        (["t1", "--kind", "turn"], "Missing option '--body'"),
    ],
)
def test_bad_input_fail(
    initialised: str, run: Run, db_url: str, args: list[str], expected: str
) -> None:
    with Ledger.open(db_url) as ledger:
        before = dump(ledger.engine)
    assert expected in one_line_error(run("append", *args))
    with Ledger.open(db_url) as ledger:
        assert dump(ledger.engine) == before


def test_missing_database_fail(workdir: Path, run: Run) -> None:
    message, hint = error_and_hint(run("append", "t1", "--kind", "turn", "--body", TURN))
    assert "registre init" in f"{message}\n{hint}"  # the advice: in the hint, or the message
    assert not (workdir / ".registre").exists()


def test_bad_input_in_a_real_process_fail(workdir: Path) -> None:
    # The console script path end to end: stderr is one error line (and at most one hint
    # line), never a traceback.
    import subprocess
    import sys

    command = [sys.executable, "-c", "from registre.cli import main; main()"]
    repo = Path(__file__).resolve().parents[3]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo)}
    subprocess.run([*command, "init"], cwd=workdir, env=env, check=True, capture_output=True)
    for args in (
        ["append", "t1", "--kind", "turn", "--body", TURN],
        ["thread", "create", "t1"],
        ["append", "t1", "--kind", "turn", "--body", "[1,"],
    ):
        done = subprocess.run([*command, *args], cwd=workdir, env=env, capture_output=True)
        if args[0] == "thread":
            assert done.returncode == 0
            continue
        lines = done.stderr.decode().splitlines()
        assert done.returncode == 2 and lines[0].startswith("registre: error: ")
        assert [line.split(": ", 2)[1] for line in lines] in (["error"], ["error", "hint"])
        assert b"Traceback" not in done.stderr


def test_orphan_tool_result_error_one_line_exit_2(initialised: str, run: Run) -> None:
    body = '{"call_id":"c9","content":"rows"}'
    message, hint = error_and_hint(run("append", "t1", "--kind", "tool.result", "--body", body))
    assert message == (
        "registre: error: the result answers no tool call: no earlier tool.call of thread t1 "
        "has call_id 'c9'"
    )
    assert hint is not None and hint.startswith("registre: hint: append the tool.call first")
    call = '{"call_id":"c9","name":"sql","arguments":{}}'
    assert run("append", "t1", "--kind", "tool.call", "--body", call).code == 0
    assert run("append", "t1", "--kind", "tool.result", "--body", body).code == 0


def test_actor_name_error_one_line_exit_2(initialised: str, run: Run) -> None:
    result = run("append", "t1", "--kind", "turn", "--actor", "bob smith", "--body", TURN)
    message, hint = error_and_hint(result)
    assert message == (
        "registre: error: actor 'bob smith' is not an actor name (U+0020 at character 3)"
    )
    assert hint is not None and hint.endswith("write 'bob_smith'")
    assert run("log", "t1", "--json").out.count("\n") == 3  # nothing written


def test_float_in_body_error_hint_names_the_helper(initialised: str, run: Run) -> None:
    call = '{"call_id":"c7","name":"set_threshold","arguments":{"ratio":0.25}}'
    message, hint = error_and_hint(run("append", "t1", "--kind", "tool.call", "--body", call))
    assert message.startswith("registre: error: body.arguments.ratio: expected no float")
    assert hint is not None and "decimal_strings" in hint
