"""`registre.cli.main`: the one command list, and how an error reaches stderr -- its message
on one line, then its hint (if it has one) on a line of its own, and its exit code."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import click
import pytest

import registre.cli
from registre.cli import COMMANDS
from registre.cli.commands import cli
from registre.errors import MalformedError, RefusedError, RegistreError, VerificationError
from tests.cli.conftest import Run, error_and_hint, one_line_error

CLI_DIR = Path(registre.cli.__file__).parent
# Modules that hold no command: the package, the list itself, and the shared helpers.
NOT_COMMANDS = {"__init__", "commands", "options", "files", "bundle_options"}
SHARED = ("registre.cli.options", "registre.cli.files", "registre.cli.bundle_options")

TOP_LEVEL = [
    *("append", "backup", "bench", "checkpoint", "compact", "conclude", "conclusions"),
    *("context", "demo", "evidence", "expand", "export", "import", "init", "key", "log", "mcp"),
    *("pin", "prove", "reanchor", "rebuild", "report", "source", "thread", "trace"),
    *("transcript", "unpin"),
    *("verify", "witness"),
]


@pytest.fixture
def raising(monkeypatch: pytest.MonkeyPatch) -> Callable[[RegistreError], None]:
    """Give `cli` a command `boom` that raises the error passed (for this test only)."""

    def install(error: RegistreError) -> None:
        @click.command("boom")
        def boom() -> None:
            raise error

        monkeypatch.setitem(cli.commands, "boom", boom)

    return install


@pytest.mark.parametrize(
    "error",
    [
        VerificationError("root mismatch at seq 3").with_hint("re-export the bundle"),
        RefusedError("the thread is closed").with_hint("create another thread"),
        MalformedError("bad JSON", position=7).with_hint("check the quoting"),
    ],
)
def test_hinted_error_is_two_lines_and_its_exit_code(
    raising: Callable[[RegistreError], None], run: Run, error: RegistreError
) -> None:
    raising(error)
    result = run("boom")
    assert result.code == error.exit_code
    assert result.out == ""
    assert result.err == f"registre: error: {error}\nregistre: hint: {error.hint}\n"
    assert error_and_hint(result, error.exit_code) == (
        f"registre: error: {error}",
        f"registre: hint: {error.hint}",
    )


@pytest.mark.parametrize(
    "error", [VerificationError("root mismatch at seq 3"), RefusedError("the thread is closed")]
)
def test_unhinted_error_is_one_line_and_its_exit_code(
    raising: Callable[[RegistreError], None], run: Run, error: RegistreError
) -> None:
    raising(error)
    result = run("boom")
    assert result.err == f"registre: error: {error}\n"
    assert one_line_error(result, error.exit_code) == f"registre: error: {error}"
    assert error_and_hint(result, error.exit_code)[1] is None


def test_empty_hint_prints_no_hint_line(raising: Callable[[RegistreError], None], run: Run) -> None:
    raising(RefusedError("the thread is closed").with_hint(""))
    assert run("boom").err == "registre: error: the thread is closed\n"


def test_a_cli_hint_reaches_stderr(workdir: Path, run: Run) -> None:
    result = run("key", "show")
    assert result.err == (
        f"registre: error: no operator key at {Path('.registre/operator.key')}\n"
        "registre: hint: run `registre init`, or pass --key-file (env REGISTRE_KEY)\n"
    )
    assert result.code == 2


def test_usage_errors_keep_their_one_line(run: Run) -> None:
    result = run("append")
    message, hint = error_and_hint(result)
    assert message.endswith("(see --help)") and hint is None


def test_help_lists_every_command_of_the_one_list(run: Run) -> None:
    assert sorted(command.name or "" for command in COMMANDS) == TOP_LEVEL
    assert cli.list_commands(click.Context(cli)) == TOP_LEVEL
    listed = run("--help").out.split("Commands:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split()[0] for line in listed] == TOP_LEVEL


def test_help_shows_the_exit_code_table(run: Run) -> None:
    from registre.errors import EXIT_CODES

    text = run("--help").out.split("Exit codes:\n", 1)[1]
    for code, meaning in EXIT_CODES:
        assert f"{code:<4}{meaning}" in text


def test_help_and_version_import_no_ledger() -> None:
    """`registre --help` and `--version` stay fast: no SQLAlchemy, no ledger, no aiohttp."""
    import subprocess
    import sys

    for flag in ("--help", "--version"):
        probe = (
            "import sys; from registre.cli import main\n"
            f"try:\n    main([{flag!r}])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('sqlalchemy', 'registre.ledger', 'aiohttp', 'cryptography')"
            " if m in sys.modules]\n"
            "print('HEAVY:' + ','.join(heavy))"
        )
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.rstrip().endswith("HEAVY:"), (flag, done.stdout[-200:])


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def _shared(name: str) -> bool:
    return any(name == m or name.startswith(f"{m}.") for m in SHARED)


def test_command_modules_import_no_other_command_module_nor_the_group() -> None:
    modules = sorted(p.stem for p in CLI_DIR.glob("*.py") if p.stem not in NOT_COMMANDS)
    assert modules, CLI_DIR
    for module in modules:
        imported = _imports(CLI_DIR / f"{module}.py")
        wrong = {name for name in imported if name.startswith("registre.cli") and not _shared(name)}
        assert not wrong, (module, wrong)


def test_only_demo_and_bench_import_the_bench_package() -> None:
    for path in sorted(CLI_DIR.glob("*.py")):
        uses_bench = any(name.startswith("registre.bench") for name in _imports(path))
        assert uses_bench == (path.stem in {"demo", "bench"}), path.name
