"""`registre context THREAD [--at SEQ] [--budget N] [--json]` and `registre context diff
THREAD --at SEQ [--json]`: the working context, and what it leaves out.

``context`` prints the projection of the thread's entries ``0..SEQ`` (default: the head): the
messages a model would be sent, in order, with the stable prefix, the token count and the
projection's SHA-256 (``--json``: the projection as ``specs/context.md`` section 8 writes it,
with its digest). Without ``--budget`` the budget is the context's own size, so it is always
shown; with one, a context that does not fit is refused (exit 2: compact first).

``context diff`` says what the model was not seeing verbatim after entry SEQ: entries it saw
only as a summary line (which compaction, which line, what it says), tool results it saw as
stubs, and entries folded without mention (``registre.ledger.context.views``).

``registre context THREAD`` is short for ``registre context show THREAD`` (a thread called
``diff`` or ``show`` needs the long form).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from registre.attest.projection_digest import projection_digest
from registre.cli.files import terminal_text
from registre.cli.options import ledger_options, open_ledger
from registre.context import Policy, Projection, context_tokens, default_counter, project
from registre.ledger import ContextDiff, DiffRun, context_diff

__all__ = ["context_group", "diff_lines", "projection_lines"]


class _ShowByDefault(click.Group):
    """A group whose first argument, when it is not a subcommand, is ``show``'s."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["show", *args]
        return super().parse_args(ctx, args)


@click.group("context", cls=_ShowByDefault)
def context_group() -> None:
    """Show a thread's working context (`context THREAD`) or what it leaves out (`diff`)."""


@context_group.command("show")
@click.argument("thread_id", metavar="THREAD")
@click.option("--at", "at", type=int, default=None, help="Context after this seq (default: head).")
@click.option("--budget", type=click.IntRange(min=1), default=None, help="Token budget.")
@click.option(
    "--no-lifecycle-block",
    "no_block",
    is_flag=True,
    help="Leave out the lifecycle block a model call ends with (shown with --budget).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the projection as JSON.")
@ledger_options
def show_command(
    thread_id: str,
    at: int | None,
    budget: int | None,
    no_block: bool,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Print the context a model is sent from THREAD's entries up to --at. With --budget it
    ends, as a model call does, with the lifecycle block (active evidence, stale conclusions,
    open questions); without one the context is sized to itself and has no room for it."""
    counter = default_counter()
    with open_ledger(db, key_file) as ledger:
        thread = ledger.thread(thread_id)
        if budget is None:
            state = thread.context_state(at)
            size = max(1, context_tokens(state, counter))
            projection = project(state, size, Policy(budget_tokens=size), counter)
        else:
            projection = thread.project(
                at, budget, Policy(budget_tokens=budget), counter, lifecycle_block=not no_block
            )
    if as_json:
        data = {
            "projection": projection.to_json(),
            "projection_sha256": projection_digest(projection),
        }
        click.echo(json.dumps(data, ensure_ascii=False, indent=1))
        return
    for line in projection_lines(thread_id, projection):
        click.echo(terminal_text(line))


@context_group.command("diff")
@click.argument("thread_id", metavar="THREAD")
@click.option("--at", "at", type=int, required=True, help="The context after this seq.")
@click.option("--json", "as_json", is_flag=True, help="Print the diff as JSON.")
@ledger_options
def diff_command(
    thread_id: str, at: int, as_json: bool, db: str | None, key_file: Path | None
) -> None:
    """Print what the model was not seeing verbatim after entry --at of THREAD."""
    with open_ledger(db, key_file) as ledger:
        diff = context_diff(ledger.thread(thread_id), at)
    if as_json:
        click.echo(json.dumps(diff.to_json(), ensure_ascii=False, indent=1))
        return
    for line in diff_lines(thread_id, diff):
        click.echo(terminal_text(line))


def projection_lines(thread_id: str, projection: Projection) -> list[str]:
    """The human-readable form of ``projection``: a header, then one block per message."""
    manifest = projection.manifest
    lines = [
        f"context of {thread_id} after seq {projection.at}: {len(projection.messages)} "
        f"messages, {projection.tokens} of {projection.budget} tokens "
        f"({projection.counter}); stable prefix {manifest.stable_prefix_messages} messages, "
        f"{manifest.stable_prefix_tokens} tokens",
        f"projection sha256 {projection_digest(projection)}",
    ]
    for index, message in enumerate(projection.messages):
        label = message.role + (f" {message.name}" if message.name else "")
        label += f" ({message.call_id})" if message.call_id else ""
        text = message.content.replace("\n", "\n    ")
        lines.append(f"[{index}] {label}: {text}")
    return lines


def diff_lines(thread_id: str, diff: ContextDiff) -> list[str]:
    """The human-readable form of ``diff``."""
    lines = [
        f"context of {thread_id} after seq {diff.at}: {len(diff.projection.messages)} messages, "
        f"{diff.projection.tokens} tokens"
    ]
    sections: list[tuple[str, tuple[DiffRun, ...], Any]] = [
        ("summarized (seen only as a summary line)", diff.summarized, _summarized),
        ("stubbed (seen only as a one-line stub)", diff.stubbed, lambda run: ""),
        ("folded without mention", diff.folded, _kinds),
    ]
    for title, runs, describe in sections:
        lines.append(f"{title}: {len(runs) and sum(r.last - r.first + 1 for r in runs)} entries")
        lines += [f"  {_span(run):<12}{describe(run)}".rstrip() for run in runs]
    lines.append(f"compactions and model calls (never in a context): {diff.records} entries")
    return lines


def _span(run: DiffRun) -> str:
    return str(run.first) if run.first == run.last else f"{run.first}-{run.last}"


def _summarized(run: DiffRun) -> str:
    return f"compaction {run.compaction} line {run.line}: {run.text}"


def _kinds(run: DiffRun) -> str:
    return ", ".join(f"{count} {kind}" for kind, count in sorted(run.kinds.items()))
