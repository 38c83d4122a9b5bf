"""What a witness last cosigned for an origin, read from its monitoring view.

C2SP ``tlog-witness``, "Monitor Retrieval Mechanism": ``GET <prefix>/<hex sha256(origin)>/
checkpoint`` answers the latest checkpoint the witness cosigned for the origin, with the log's
signature it verified and its own cosignature, or 404 if it never cosigned one (the text says
SHOULD: a witness may serve no such view, and then answers 404 too). ``specs/witness.md`` 2a.

:func:`latest_cosigned_async`, for one witness and one origin:

1. ``GET`` the view (one request, the client's timeout, at most ``MAX_RESPONSE_BYTES`` read);
2. 404: nothing cosigned (or no view) -- :attr:`LatestCosigned.found` is False, no problem;
3. 200: the note must open under one of ``log_keys`` for ``origin`` and carry a valid
   cosignature from the pinned witness key (``open_checkpoint(..., witnesses=[key],
   quorum=1)``): evidence signed by the log and by the witness, whoever relays it;
4. anything else -- another status, a note that does not open, a timeout, a refused
   connection -- is a ``problem``, said in one line: it proves nothing either way.

Nothing is sent to the witness but the request line: the view has no side effect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import aiohttp

from registre.attest.notes import Checkpoint, Verifier, open_checkpoint
from registre.errors import RegistreError
from registre.witness.client import WitnessEndpoint
from registre.witness.protocol import MAX_RESPONSE_BYTES, monitor_path

__all__ = ["LatestCosigned", "latest_cosigned_async"]


@dataclass(frozen=True)
class LatestCosigned:
    """One witness's answer for one origin: the checkpoint it last cosigned (``checkpoint``,
    cosigned at ``timestamp``), or none (``checkpoint`` None: a 404), or a ``problem``."""

    name: str
    url: str
    checkpoint: Checkpoint | None
    timestamp: int | None
    problem: str | None

    @property
    def found(self) -> bool:
        """Whether the witness showed a checkpoint it cosigned (signed by log and witness)."""
        return self.checkpoint is not None


async def latest_cosigned_async(
    session: aiohttp.ClientSession,
    witness: WitnessEndpoint,
    origin: str,
    log_keys: Sequence[Verifier],
) -> LatestCosigned:
    """Steps 1-4 of the module docstring; never raises for what the witness answers."""
    url = witness.url.rstrip("/") + monitor_path(origin)

    def problem(text: str) -> LatestCosigned:
        return LatestCosigned(witness.name, witness.url, None, None, text)

    # 1. the view
    try:
        async with session.get(url) as response:
            status = response.status
            data = await response.content.read(MAX_RESPONSE_BYTES + 1)
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        return problem(f"unreachable: {str(exc) or type(exc).__name__}")
    # 2. nothing cosigned
    if status == 404:
        return LatestCosigned(witness.name, witness.url, None, None, None)
    if status != 200:
        return problem(f"its monitoring view answered HTTP {status}")
    if len(data) > MAX_RESPONSE_BYTES:
        return problem(f"its monitoring view answered more than {MAX_RESPONSE_BYTES} bytes")
    # 3. signed by the log and cosigned by the pinned witness key
    failure = "no log key to check it with"
    for key in log_keys:
        try:
            opened = open_checkpoint(
                data, key, origin=origin, witnesses=[witness.verifier], quorum=1
            )
        except RegistreError as exc:
            failure = str(exc)
            continue
        timestamp = max(c.timestamp for c in opened.cosignatures)
        return LatestCosigned(witness.name, witness.url, opened.checkpoint, timestamp, None)
    # 4. proves nothing
    return problem(
        f"the checkpoint its monitoring view serves for {origin} does not open: {failure}"
    )
