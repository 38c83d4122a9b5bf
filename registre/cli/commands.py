"""The `registre` group and the one list of its commands.

Each command module defines its click command(s) or group(s) and touches no global group;
:data:`COMMAND_TABLE` names every top-level command -- its name, its module, the attribute
that holds it and the one-line summary ``registre --help`` shows -- and :data:`cli` is built
from that table alone. A new command is added by defining it in its module and listing it
here.

Startup: a command's module is imported only when that command runs (or its own ``--help``
is asked), so ``registre --help`` and ``registre --version`` import neither the ledger nor
SQLAlchemy nor the witness HTTP stack. ``registre.bench`` is imported only inside
``registre demo`` and ``registre bench``.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from registre.errors import EXIT_CODES

__all__ = ["COMMANDS", "COMMAND_TABLE", "LazyGroup", "cli", "load_command"]

COMMAND_TABLE: tuple[tuple[str, str, str, str], ...] = (
    ("append", "append", "append_command", "Sign and append one entry to THREAD."),
    ("backup", "backup", "backup_command", "Copy a live SQLite ledger to one file, WAL included."),
    ("bench", "bench", "bench_command", "Benchmark registre on long synthetic investigations."),
    ("checkpoint", "checkpoint", "checkpoint_command", "Sign (or print) THREAD's checkpoint."),
    ("compact", "compact", "compact_command", "Fold THREAD's oldest context into a summary."),
    ("conclude", "conclusions", "conclude_command", "Record a compute or final conclusion."),
    ("conclusions", "conclusions", "conclusions_command", "List THREAD's conclusions."),
    ("context", "context", "context_group", "Show a thread's working context, or its diff."),
    ("demo", "demo", "demo", "Run the main job: record, export, verify, report."),
    ("evidence", "evidence", "evidence_group", "Admit, revise and read evidence."),
    ("expand", "expand", "expand_command", "Print entry SEQ of THREAD and its inclusion proof."),
    ("export", "export", "export_command", "Write THREAD (or one claim) as an audit bundle."),
    ("import", "importcmd", "import_transcript", "Append a conversation file to THREAD."),
    ("init", "init", "init_command", "Create the ledger database and the operator key."),
    ("key", "key", "key_group", "Show or export the operator's verifier key."),
    ("log", "log", "log_command", "List THREAD's entries, each re-verified."),
    ("mcp", "mcpcmd", "mcp_group", "Serve registre to MCP clients as their memory."),
    ("pin", "pin", "pin_command", "Pin a text so every projection of THREAD carries it."),
    ("prove", "prove", "prove_group", "Print inclusion and consistency proofs."),
    ("reanchor", "reanchor", "reanchor_command", "Record again a ledger's lost .published file."),
    ("rebuild", "rebuild", "rebuild_command", "Rebuild the derived tables from the entries."),
    ("report", "report", "report_command", "Verify a bundle and write its audit report (HTML)."),
    ("source", "evidence", "source_group", "Register the passages an agent read."),
    ("thread", "thread", "thread_group", "Create and inspect threads."),
    ("trace", "conclusions", "trace_command", "Trace a conclusion to its evidence and sources."),
    ("transcript", "transcript", "transcript_command", "Print THREAD as a readable transcript."),
    ("unpin", "pin", "unpin_command", "Stop carrying a pin in THREAD's projections."),
    ("verify", "verify", "verify_command", "Verify an audit bundle, or a ledger database."),
    ("witness", "witness", "witness_group", "Run a witness that cosigns checkpoints."),
)
"""``(name, module in registre.cli, attribute, summary)`` for every top-level command, in
the order of their names."""

_BY_NAME = {row[0]: row for row in COMMAND_TABLE}

COMMANDS: tuple[click.Command, ...]
"""Every top-level command object, in the order of their names; loaded on first use (this
imports every command module), through the module ``__getattr__`` below."""


def load_command(name: str) -> click.Command:
    """The click command ``name`` of :data:`COMMAND_TABLE`, importing its module."""
    _name, module, attribute, summary = _BY_NAME[name]
    command = getattr(importlib.import_module(f"registre.cli.{module}"), attribute)
    assert isinstance(command, click.Command) and command.name == name, name
    command.short_help = command.short_help or summary
    return command


class LazyGroup(click.Group):
    """A group whose commands are imported when used; its listing comes from the table."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*_BY_NAME, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        return load_command(cmd_name) if cmd_name in _BY_NAME else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, _BY_NAME[name][3]) for name in self.list_commands(ctx) if name in _BY_NAME]
        rows += [
            (name, self.commands[name].get_short_help_str())
            for name in self.list_commands(ctx)
            if name not in _BY_NAME
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(sorted(rows))


def _exit_code_epilog() -> str:
    lines = "\n".join(f"  {code:<4}{meaning}" for code, meaning in EXIT_CODES)
    return f"\b\nExit codes:\n{lines}"


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=_exit_code_epilog(),
)
@click.version_option(package_name="registre")
def cli() -> None:
    """registre: a verifiable memory for long-running AI agents."""


def __getattr__(name: str) -> Any:
    """``COMMANDS``: every top-level command object, loaded (imports every command module)."""
    if name == "COMMANDS":
        return tuple(load_command(row[0]) for row in COMMAND_TABLE)
    raise AttributeError(name)
