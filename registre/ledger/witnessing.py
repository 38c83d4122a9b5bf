"""Witnessing a ledger thread's checkpoint: collect cosignatures and store them with it.

:func:`witness_checkpoint` is what ``registre checkpoint THREAD --witness VKEY@URL`` runs:

1. the stored checkpoint at the requested size (signed and stored first if new);
2. for each witness, the size it was last known to hold: the largest stored checkpoint of
   the thread carrying a valid cosignature from its key (0 if none);
3. :func:`~registre.witness.client.collect_cosignatures`, with consistency proofs from the
   ledger's stored subtree hashes;
4. the verified cosignatures appended to the stored note
   (:meth:`registre.ledger.thread.Thread.add_cosignatures`) -- also when the quorum is not met,
   before WitnessQuorumError is raised again, so nothing a witness signed is lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from registre.ledger.core.thread_core import StoredCheckpoint
from registre.ledger.thread import Thread
from registre.witness.client import (
    CollectedCosignatures,
    WitnessEndpoint,
    WitnessOutcome,
    collect_cosignatures,
    cosigned_sizes,
)
from registre.witness.errors import WitnessQuorumError

__all__ = ["WitnessedCheckpoint", "last_cosigned_sizes", "witness_checkpoint"]


@dataclass(frozen=True)
class WitnessedCheckpoint:
    """The stored checkpoint after witnessing (its note with every cosignature kept) and
    each witness's outcome."""

    checkpoint: StoredCheckpoint
    outcomes: list[WitnessOutcome]


def last_cosigned_sizes(thread: Thread, witnesses: Sequence[WitnessEndpoint]) -> dict[str, int]:
    """Per witness vkey, the largest stored checkpoint size with a valid cosignature from it."""
    return cosigned_sizes(((c.size, c.note) for c in thread.checkpoints()), witnesses)


def witness_checkpoint(
    thread: Thread,
    witnesses: Sequence[WitnessEndpoint],
    quorum: int,
    *,
    size: int | None = None,
    timeout: float = 10.0,
) -> WitnessedCheckpoint:
    """Steps 1-4 of the module docstring. Raises what :meth:`Thread.checkpoint` raises,
    WitnessSpecError for an unusable witness list or quorum, and WitnessQuorumError (after
    storing what was obtained) when fewer than ``quorum`` witnesses cosigned."""
    # 1. the checkpoint
    stored = thread.checkpoint(size)
    # 2. what each witness holds, as far as this ledger knows
    known = last_cosigned_sizes(thread, witnesses)

    def proof_for(old_size: int) -> list[bytes]:
        return thread.prove_consistency(old_size, stored.size).hashes

    # 3. collect
    try:
        collected = collect_cosignatures(stored.note, proof_for, witnesses, quorum, timeout, known)
    except WitnessQuorumError as exc:
        # 4. keep what was obtained, then fail
        partial = exc.result
        assert isinstance(partial, CollectedCosignatures)
        thread.add_cosignatures(stored.size, partial.cosignatures)
        raise
    # 4. store
    cosigned = thread.add_cosignatures(stored.size, collected.cosignatures)
    return WitnessedCheckpoint(cosigned, collected.outcomes)
