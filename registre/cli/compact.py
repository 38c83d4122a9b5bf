"""`registre compact THREAD --budget N [--policy JSON|@FILE|-]`: record the compaction due now.

Plans with the policy (``--budget`` sets its ``budget_tokens``; the other fields default, or
come from ``--policy``), summarizes with the default extractive summarizer, and appends ONE
``context.compaction`` entry with its context snapshot (``Thread.compact``). When there is
nothing to fold -- the context is not above the high-water mark, or no compaction the policy
allows would make it smaller -- nothing is written and the command prints one line starting
``nothing to fold:`` saying which (exit 0). A context that no compaction can bring within the
budget is refused (exit 2, nothing written), saying by how many tokens. Before a compaction
that folds the thread's system prompt or first user turn, they are pinned as task
parameters (``specs/context.md`` section 5.1; a line ``seq N\tpin\t...`` each), unless
``--no-task-pin``.
"""

from __future__ import annotations

from pathlib import Path

import click

from registre.cli.options import (
    actor_option,
    echo_json,
    json_option,
    ledger_options,
    open_ledger,
    read_body,
)
from registre.context import Policy, context_tokens, default_counter, parse_policy
from registre.context.events import COMPACTION_ACTOR

__all__ = ["compact_command"]


@click.command("compact")
@click.argument("thread_id", metavar="THREAD")
@click.option("--budget", type=click.IntRange(min=1), required=True, help="Token budget.")
@click.option(
    "--policy",
    "policy_text",
    default=None,
    help="Full policy JSON (six integer fields), @FILE or -; --budget overrides its budget.",
)
@click.option(
    "--no-task-pin",
    is_flag=True,
    help="Do not pin the system prompt and first user turn before folding them.",
)
@actor_option(default=COMPACTION_ACTOR)
@json_option
@ledger_options
def compact_command(
    thread_id: str,
    budget: int,
    policy_text: str | None,
    no_task_pin: bool,
    actor: str,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Fold THREAD's oldest context into a summary if the policy calls for it."""
    policy = Policy()
    if policy_text is not None:
        policy = parse_policy(read_body(policy_text, "--policy"), "--policy")
    with open_ledger(db, key_file, need_key=True) as ledger:
        thread = ledger.thread(thread_id)
        pins = len(thread.pins())
        entry = thread.compact(budget, policy, actor=actor, task_pin=not no_task_pin)
        for pin in thread.pins()[pins:]:
            click.echo(f"seq {pin.seq}\tpin\t{pin.id} {pin.kind} of entry {pin.source_seq}")
        if entry is None:
            state = thread.context_state()
    if entry is None:
        tokens = context_tokens(state, default_counter())
        mark = policy.with_budget(budget).compact_above_tokens
        why = (
            f"not above the high-water mark of {mark}"
            if tokens <= mark
            else f"above the high-water mark of {mark}, but no compaction would make it smaller"
        )
        if as_json:
            echo_json({"seq": None, "tokens": tokens, "high_water": mark, "nothing_to_fold": why})
        else:
            click.echo(f"nothing to fold: the context of {thread_id} takes {tokens} tokens, {why}")
        return
    body = entry.body
    if as_json:
        echo_json(
            {
                "seq": entry.seq,
                "folded": body.get("folded"),
                "stubbed": body.get("stubbed") or [],
                "tokens_before": body["tokens_before"],
                "tokens_after": body["tokens_after"],
            }
        )
        return
    parts = []
    if "folded" in body:
        parts.append(f"folded {body['folded']['from']}-{body['folded']['to']}")
    if body.get("stubbed"):
        parts.append("stubbed " + ",".join(str(seq) for seq in body["stubbed"]))
    click.echo(
        f"seq {entry.seq}\tcompaction\t{'; '.join(parts)}\t"
        f"tokens {body['tokens_before']} -> {body['tokens_after']}"
    )
