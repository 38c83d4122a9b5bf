"""Step 14 of ``registre verify --db --witness VKEY@URL`` (and of ``registre reanchor``): no
verified thread is behind, or forks from, what a pinned witness last cosigned for its origin.

A database cannot vouch for itself here: one restored from an older copy together with its
``.published`` record, or a PostgreSQL database restored by its administrator, agrees with
itself. What it cannot hold is what the witnesses remember. For every verified thread and
every witness, all asked at once:

1. **Ask**: the witness's monitoring view (:mod:`registre.witness.latest`), the checkpoint it
   last cosigned for the thread's origin, opened under the trusted log key with the pinned
   witness's cosignature: evidence signed by both.
2. **Ask by submitting**: when the view answers 404 (nothing cosigned, or no view served)
   and the database holds a signed checkpoint, its largest one is sent to ``add-checkpoint``
   from the size the ledger last knew the witness to hold, with its consistency proof
   (:func:`registre.witness.client.collect_cosignatures_async`). A cosignature says the
   witness's tree leads to it; a 409 naming a larger size, or a 422, is the witness's
   (unsigned) word that it saw another history. The witness records the checkpoint, as
   ``registre checkpoint --witness`` would; the database is never written.
3. **Not behind** (BehindWitnessError): the witness's checkpoint is no larger than the
   thread's head (read again now: a live ledger may have grown meanwhile), and a size named
   in a 409 is no larger than the largest signed checkpoint (a ledger stores every
   checkpoint it signs, so a witness holding a larger one saw a checkpoint this database
   lost).
4. **Not forked** (ForkedFromWitnessError): the database's root at the witness's size is the
   witness's root, and no witness refused the checkpoint as inconsistent with its own.
5. **Quorum** (WitnessQuorumError): every thread was confirmed by at least ``quorum``
   witnesses (3 and 4 held for their answer, or they cosigned nothing for an origin the
   database signed nothing for). An unreachable witness, or an answer that does not open,
   confirms nothing and refutes nothing.

Steps 3, 4 and 5 each look at every thread and witness before the next step; the first
failure raises (threads in id order, witnesses in the order given).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import aiohttp

from registre.attest.notes import Checkpoint, Verifier
from registre.ledger.core.database import Database
from registre.ledger.core.thread_core import ThreadCore
from registre.ledger.verify.errors import BehindWitnessError, ForkedFromWitnessError
from registre.ledger.verify.thread import ThreadReport
from registre.witness.client import (
    WitnessEndpoint,
    WitnessOutcome,
    collect_cosignatures_async,
    cosigned_sizes,
)
from registre.witness.errors import WitnessQuorumError, WitnessSpecError
from registre.witness.latest import latest_cosigned_async

__all__ = ["Verdict", "WitnessCheck", "check_witnesses"]

Verdict = Literal["confirmed", "behind", "forked", "unconfirmed"]

_AT_ONCE = 8
"""Requests in flight at once, over every thread and witness."""


@dataclass(frozen=True)
class WitnessCheck:
    """What one witness said about one thread: the ``verdict`` and one sentence
    (``detail``); ``size`` is the size it cosigned or holds (None: it showed none)."""

    thread: str
    witness: str
    verdict: Verdict
    size: int | None
    detail: str

    @property
    def confirmed(self) -> bool:
        return self.verdict == "confirmed"


def check_witnesses(
    db: Database,
    reports: Sequence[ThreadReport],
    witnesses: Sequence[WitnessEndpoint],
    quorum: int,
    log_keys: Sequence[Verifier],
    timeout: float = 10.0,
) -> list[WitnessCheck]:
    """Steps 1-5 of the module docstring for the threads of ``reports`` (verified by
    :func:`registre.ledger.verify.database.verify_database`); every check, threads in the
    order of ``reports``, witnesses in the order given. ``log_keys``: the keys trusted for
    the log's signature (those verification trusted). ``timeout``: seconds per request.

    Raises WitnessSpecError (no witness, two with one key, a quorum outside
    ``0..len(witnesses)``; 0 refuses only on evidence of step 3 or 4), BehindWitnessError,
    ForkedFromWitnessError, WitnessQuorumError.
    """
    if not witnesses:
        raise WitnessSpecError("name at least one witness to compare with")
    if len({w.verifier.public_key for w in witnesses}) != len(witnesses):
        raise WitnessSpecError("two witnesses share a key; each witness is counted once")
    if not 0 <= quorum <= len(witnesses):
        raise WitnessSpecError(f"quorum {quorum} is outside 0..{len(witnesses)} witnesses")
    checks = asyncio.run(_ask_all(db, reports, witnesses, list(log_keys), timeout))
    # 3. not behind
    for check in checks:
        if check.verdict == "behind":
            raise BehindWitnessError(check.thread, None, check.detail)
    # 4. not forked
    for check in checks:
        if check.verdict == "forked":
            raise ForkedFromWitnessError(check.thread, None, check.detail)
    # 5. quorum, thread by thread
    for report in reports:
        mine = [check for check in checks if check.thread == report.thread]
        confirmed = sum(check.confirmed for check in mine)
        if confirmed < quorum:
            failed = "; ".join(check.detail for check in mine if not check.confirmed)
            raise WitnessQuorumError(
                f"thread {report.thread}: {confirmed} of {len(witnesses)} witness(es) "
                f"confirmed the database; quorum is {quorum} ({failed})",
                checks,
            )
    return checks


async def _ask_all(
    db: Database,
    reports: Sequence[ThreadReport],
    witnesses: Sequence[WitnessEndpoint],
    log_keys: list[Verifier],
    timeout: float,
) -> list[WitnessCheck]:
    gate = asyncio.Semaphore(_AT_ONCE)
    client_timeout = aiohttp.ClientTimeout(total=timeout)
    async with aiohttp.ClientSession(timeout=client_timeout) as session:

        async def one(report: ThreadReport, witness: WitnessEndpoint) -> WitnessCheck:
            async with gate:
                return await _check(session, db, report, witness, log_keys, timeout)

        return list(
            await asyncio.gather(*(one(report, w) for report in reports for w in witnesses))
        )


async def _check(
    session: aiohttp.ClientSession,
    db: Database,
    report: ThreadReport,
    witness: WitnessEndpoint,
    log_keys: list[Verifier],
    timeout: float,
) -> WitnessCheck:
    core = ThreadCore(db, report.thread, report.origin)
    name = witness.name
    # 1. what it last cosigned, signed by the log and by the witness
    latest = await latest_cosigned_async(session, witness, report.origin, log_keys)
    if latest.problem is not None:
        detail = f"{name} ({witness.url}): {latest.problem}"
        return WitnessCheck(report.thread, name, "unconfirmed", None, detail)
    if latest.checkpoint is not None:
        return _compare(core, name, latest.checkpoint, latest.timestamp)
    # 2. nothing shown: submit the largest signed checkpoint, if there is one
    stored = core.latest_checkpoint()
    if stored is None:
        detail = f"{name} cosigned nothing for {report.origin}, and the database signed nothing"
        return WitnessCheck(report.thread, name, "confirmed", None, detail)
    known = cosigned_sizes(((c.size, c.note) for c in core.checkpoints()), [witness])

    def proof_for(old_size: int) -> list[bytes]:
        return core.prove_consistency(old_size, stored.size).hashes

    collected = await collect_cosignatures_async(
        stored.note, proof_for, [witness], 0, timeout, known
    )
    return _judge(report, collected.outcomes[0], stored.size)


def _compare(
    core: ThreadCore, name: str, cosigned: Checkpoint, timestamp: int | None
) -> WitnessCheck:
    """Steps 3 and 4 for a checkpoint the witness showed (signed by log and witness)."""
    said = f"{name} cosigned size {cosigned.size} of {cosigned.origin} at {_when(timestamp)}"
    head = core.head()
    if cosigned.size > head.size:
        detail = (
            f"witness {said}, but the database holds {head.size} entries: it is behind what "
            "was published"
        )
        return WitnessCheck(core.id, name, "behind", cosigned.size, detail)
    root = core.prove_consistency(cosigned.size, head.size).old_root
    if root != cosigned.root:
        detail = (
            f"witness {said} with root {_b64(cosigned.root)}, but the database's root at that "
            f"size is {_b64(root)}: it holds another history"
        )
        return WitnessCheck(core.id, name, "forked", cosigned.size, detail)
    detail = f"{said}; the database holds it"
    return WitnessCheck(core.id, name, "confirmed", cosigned.size, detail)


def _judge(report: ThreadReport, outcome: WitnessOutcome, size: int) -> WitnessCheck:
    """Steps 3 and 4 for the answer to the database's largest signed checkpoint (``size``)."""
    name = outcome.name
    if outcome.cosignature is not None:
        detail = f"{name} cosigned the database's checkpoint at size {size} of {report.origin}"
        return WitnessCheck(report.thread, name, "confirmed", size, detail)
    if outcome.conflict == "ahead":
        detail = (
            f"witness {name} holds size {outcome.held_size} of {report.origin} by its answer, "
            f"beyond the database's largest signed checkpoint (size {size}): it is behind what "
            "was published"
        )
        return WitnessCheck(report.thread, name, "behind", outcome.held_size, detail)
    if outcome.conflict == "fork":
        detail = (
            f"witness {name} refused the database's checkpoint at size {size} of "
            f"{report.origin}: {outcome.problem}"
        )
        return WitnessCheck(report.thread, name, "forked", outcome.held_size, detail)
    detail = f"{name} ({outcome.url}): {outcome.problem}"
    return WitnessCheck(report.thread, name, "unconfirmed", None, detail)


def _when(timestamp: int | None) -> str:
    if timestamp is None:
        return "time unknown"
    try:
        return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, ValueError, OSError):
        return f"time {timestamp}"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
