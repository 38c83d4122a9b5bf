"""Generate synthetic investigations on a real ledger: the entry points of ``bench``.

::

    from registre.bench import InvestigationConfig, policy_for, record_investigation

    config = InvestigationConfig(entries=5000, seed=7, policy=policy_for(32000))
    stats = record_investigation(ledger.create_thread("review"), config)

:func:`investigation_steps` gives the steps lazily, for a harness that times each one
(:mod:`registre.bench.run`); :func:`record_investigation` simply runs them all. The storyline is
described in :mod:`registre.bench.investigation`, the words in :mod:`registre.bench.textgen`.

Run as ``python -m registre.bench.generate --entries N [--seed S] [--budget B] --db FILE``
it records one investigation on a fresh SQLite ledger with a throw-away key and prints its
tallies.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING

from registre.bench.agent import InvestigationConfig, InvestigationStats
from registre.bench.investigation import Investigation
from registre.bench.steps import Step, StepOutcome
from registre.context import Policy

if TYPE_CHECKING:
    from registre.ledger import Thread

__all__ = ["investigation_steps", "main", "policy_for", "record_investigation"]


def policy_for(budget: int) -> Policy:
    """The compaction policy the benchmark uses at ``budget`` tokens: the default marks
    (compact past 80%, down to 50%, summaries at most 25%), the most recent turns kept
    verbatim growing with the budget (2 up to 8k, 4 up to 32k, 6 above), and tool outputs
    over 1/16 of the budget eligible for a stub."""
    if budget <= 8192:
        keep = 2
    elif budget <= 32768:
        keep = 4
    else:
        keep = 6
    return Policy(
        budget_tokens=budget,
        keep_recent_turns=keep,
        bulky_tool_output_tokens=max(1, budget // 16),
    )


def investigation_steps(config: InvestigationConfig) -> tuple[Investigation, Iterator[Step]]:
    """The investigation and its steps; run each step before asking for the next."""
    investigation = Investigation(config)
    return investigation, investigation.steps()


def record_investigation(
    thread: Thread,
    config: InvestigationConfig,
    on_step: Callable[[Step, StepOutcome], None] | None = None,
) -> InvestigationStats:
    """Run every step of the investigation ``config`` describes on ``thread``; call
    ``on_step`` after each. Returns the storyline's tallies. Errors of the API other than
    its normal refusals (:mod:`registre.bench.steps`) propagate; what was written stays written."""
    investigation, steps = investigation_steps(config)
    for step in steps:
        outcome = step.run(thread)
        if on_step is not None:
            on_step(step, outcome)
    return investigation.stats


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m registre.bench.generate``: see the module docstring."""
    from registre.attest.notes import Signer
    from registre.ledger import Ledger

    parser = argparse.ArgumentParser(prog="python -m registre.bench.generate")
    parser.add_argument("--entries", type=lambda s: int(float(s)), required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=32000)
    parser.add_argument("--db", required=True, help="a new SQLite file")
    parser.add_argument("--thread", default="investigation")
    args = parser.parse_args(argv)
    config = InvestigationConfig(args.entries, args.seed, policy_for(args.budget))
    with Ledger.open(args.db, Signer.generate("bench.registre.example")) as ledger:
        stats = record_investigation(ledger.create_thread(args.thread), config)
    for name, value in asdict(stats).items():
        print(f"{name:>22}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
