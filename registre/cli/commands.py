"""The `registre` group and the one list of its commands.

Each command module defines its click command(s) or group(s) and touches no global group;
:data:`COMMANDS` names every top-level command, and :data:`cli` is built from that list
alone. A new command is added by defining it in its module and listing it here.

Heavy dependencies stay out of this import: ``registre.bench`` is imported only inside
``registre demo`` and ``registre bench``, the witness HTTP stack only inside the commands that
serve or ask witnesses.
"""

from __future__ import annotations

import click

from registre.cli import (
    append,
    backup,
    bench,
    checkpoint,
    compact,
    conclusions,
    context,
    demo,
    evidence,
    expand,
    export,
    importcmd,
    init,
    key,
    log,
    pin,
    prove,
    rebuild,
    thread,
    transcript,
    verify,
    witness,
)

__all__ = ["COMMANDS", "cli"]

COMMANDS: tuple[click.Command, ...] = (
    append.append_command,
    backup.backup_command,
    bench.bench_command,
    checkpoint.checkpoint_command,
    compact.compact_command,
    conclusions.conclude_command,
    conclusions.conclusions_command,
    context.context_group,
    demo.demo,
    evidence.evidence_group,
    expand.expand_command,
    export.export_command,
    importcmd.import_transcript,
    init.init_command,
    key.key_group,
    log.log_command,
    pin.pin_command,
    prove.prove_group,
    rebuild.rebuild_command,
    evidence.source_group,
    thread.thread_group,
    conclusions.trace_command,
    transcript.transcript_command,
    pin.unpin_command,
    verify.verify_command,
    witness.witness_group,
)
"""Every top-level command of `registre`, in the order of their names."""


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="registre")
def cli() -> None:
    """registre: a verifiable memory for long-running AI agents."""


for _command in COMMANDS:
    cli.add_command(_command)
del _command
