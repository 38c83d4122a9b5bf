"""Step 2.5 of bundle verification: how recent the head is, by its witness cosignatures.

A log's own times (entry ``time`` fields, the checkpoint itself) are claims of the operator
(THREATS row 15). What independently dates a checkpoint is the timestamp a pinned witness
signs in its ``cosignature/v1`` line: the witness saw this tree head no earlier than then.
:func:`check_freshness` takes the timestamps of the head's verified pinned-witness
cosignatures and the verifier's clock, returns the age of the newest one, and with a
``max_age`` refuses an old head (:class:`CheckpointTooOldError`) or one nothing dates
(:class:`FreshnessUnprovenError`). An old checkpoint replayed with its old, genuine
cosignatures (THREATS row 7) thus fails a verifier that says how recent it must be.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from registre.errors import VerificationError

__all__ = [
    "CLOCK_SKEW_SECONDS",
    "CheckpointTooOldError",
    "CosignatureFromTheFutureError",
    "FreshnessUnprovenError",
    "check_freshness",
    "duration",
    "utc",
]

CLOCK_SKEW_SECONDS = 300
"""How far past the verifier's clock a cosignature may be dated (clocks disagree a little);
anything later is no evidence of freshness (issue 29 item 10)."""


class CheckpointTooOldError(VerificationError):
    """A head whose newest pinned-witness cosignature is older than ``--max-age``."""


class CosignatureFromTheFutureError(VerificationError):
    """``--max-age`` asked for, and a pinned witness's cosignature is dated more than
    :data:`CLOCK_SKEW_SECONDS` after the verifier's clock: a wrong clock or a forged date,
    either way no proof of how recent the head is."""


class FreshnessUnprovenError(VerificationError):
    """``--max-age`` asked for, but no pinned witness cosigned the head, so nothing dates it."""


def check_freshness(
    times: Sequence[int], *, now: int, max_age: int | None
) -> tuple[int | None, str | None]:
    """``(age, sentence)`` of the newest of ``times`` (Unix seconds) at ``now``; ``(None,
    None)`` without any. Raises :class:`CheckpointTooOldError` when the age exceeds
    ``max_age`` and :class:`FreshnessUnprovenError` when ``max_age`` is set and ``times`` is
    empty. A timestamp up to :data:`CLOCK_SKEW_SECONDS` after ``now`` gives a negative age
    (reported as "in the future"); a later one raises :class:`CosignatureFromTheFutureError`
    when ``max_age`` is set, and is otherwise left out of the age (the sentence says so)."""
    future = sorted(t for t in times if t > now + CLOCK_SKEW_SECONDS)
    if future and max_age is not None:
        raise CosignatureFromTheFutureError(
            f"a pinned witness's cosignature of the head is dated "
            f"{duration(future[-1] - now)} in the future ({utc(future[-1])}), beyond the "
            f"{duration(CLOCK_SKEW_SECONDS)} clock skew allowed: it proves nothing about "
            f"--max-age {duration(max_age)}"
        ).with_hint("check this machine's clock, then ask the witness's operator about its own")
    times = [t for t in times if t <= now + CLOCK_SKEW_SECONDS]
    if not times and future:
        return None, f"every pinned-witness cosignature is dated in the future ({utc(future[0])})"
    if not times:
        if max_age is not None:
            raise FreshnessUnprovenError(
                f"--max-age {duration(max_age)} asks how recent the head is, but no pinned "
                "witness cosigned it: nothing dates the checkpoint"
            ).with_hint("pin the log's witnesses with --witness")
        return None, None
    newest = max(times)
    age = now - newest
    if max_age is not None and age > max_age:
        raise CheckpointTooOldError(
            f"the head's newest pinned-witness cosignature is {duration(age)} old ("
            f"{utc(newest)}), older than --max-age {duration(max_age)}: the log may have grown "
            "since, and this bundle may not show its present state"
        ).with_hint("ask the exporter for a bundle against a freshly cosigned checkpoint")
    sentence = f"newest pinned-witness cosignature {duration(age)} old ({utc(newest)})"
    if max_age is not None:
        sentence += f", within --max-age {duration(max_age)}"
    return age, sentence


def utc(timestamp: int) -> str:
    """``timestamp`` (Unix seconds) as RFC 3339 UTC, ``2026-12-03T10:00:00Z``; a time no
    calendar holds as ``time T``."""
    try:
        return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return f"time {timestamp}"


def duration(seconds: int) -> str:
    """``seconds`` as ``3d 4h``, ``2h 5m``, ``1m 30s``, ``40s`` (negative: in the future)."""
    if seconds < 0:
        return f"{duration(-seconds)} in the future"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"
