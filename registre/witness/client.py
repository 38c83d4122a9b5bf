"""The log side of C2SP ``tlog-witness``: send a checkpoint to witnesses, collect cosignatures.

A witness is named on the command line as ``VKEY@URL``: its ``cosignature/v1`` verifier key
(pinned: only lines from that key are kept, and only after they verify) and its submission
prefix (``POST URL/add-checkpoint``).

:func:`collect_cosignatures` asks every witness at once. Per witness:

1. send ``old K`` with the consistency proof from K to the checkpoint's size, where K is the
   size the log last knew this witness to hold (0 if it knows none);
2. on 409 the body says the size the witness holds: if it differs from K, and is not beyond
   the checkpoint's size, build the proof from there and send once more; a witness that
   holds more than the checkpoint, or answers 409 twice, is reported;
3. on 200 the answer's lines are read as note signature lines; the one from the pinned key
   must verify over the checkpoint's text (other lines are ignored);
4. anything else -- a refusal, a timeout, a closed port -- is reported by name with the reason.
   A witness that holds another root at the checkpoint's size answers 422 (C2SP tlog-witness
   since July 2026); witnesses built on the earlier text answer 409, with an empty body
   (transparency-dev/witness) or with the size sent: both are reported as that conflict.

The outcome of every witness is kept; fewer cosignatures than the quorum raises
WitnessQuorumError carrying that outcome, so the caller can store what it got.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

import aiohttp

from registre.attest.notes import (
    Checkpoint,
    CosignatureVerifier,
    DuplicateSignatureError,
    append_signature,
    parse_note,
)
from registre.errors import RegistreError, VerificationError
from registre.witness.errors import WitnessQuorumError, WitnessSpecError
from registre.witness.protocol import (
    ADD_CHECKPOINT_PATH,
    MAX_RESPONSE_BYTES,
    AddCheckpointRequest,
    parse_cosignature_lines,
    parse_size_body,
)

__all__ = [
    "CollectedCosignatures",
    "Conflict",
    "WitnessEndpoint",
    "WitnessOutcome",
    "collect_cosignatures",
    "collect_cosignatures_async",
    "cosigned_sizes",
]

ProofFor = Callable[[int], Sequence[bytes]]


@dataclass(frozen=True)
class WitnessEndpoint:
    """A witness the log asks: its pinned verifier key and its submission URL prefix."""

    verifier: CosignatureVerifier
    url: str

    @property
    def name(self) -> str:
        return self.verifier.name

    @property
    def endpoint(self) -> str:
        """The ``add-checkpoint`` URL."""
        return self.url.rstrip("/") + ADD_CHECKPOINT_PATH

    @classmethod
    def parse(cls, spec: str) -> WitnessEndpoint:
        """Read ``NAME+KEYID+BASE64KEY@URL``; WitnessSpecError (or BadKeyError) if malformed.

        The key's base64 never holds ``@`` and a key name never holds ``+``, so the first
        ``@`` after the second ``+`` ends the key.
        """
        name_and_id, plus, rest = spec.partition("+")
        key_id, plus2, rest = rest.partition("+")
        blob, at, url = rest.partition("@")
        if not plus or not plus2 or not at:
            raise WitnessSpecError(
                f"witness {spec[:80]!r} must be VKEY@URL: the witness's verifier key "
                "(NAME+KEYID+BASE64), '@', and its URL, e.g. "
                "witness.example/w1+1a2b3c4d+BK...@http://127.0.0.1:7380"
            )
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise WitnessSpecError(f"witness URL {url!r} must be http:// or https:// with a host")
        if parts.query or parts.fragment:
            raise WitnessSpecError(f"witness URL {url!r} must have no query or fragment")
        verifier = CosignatureVerifier.from_vkey(f"{name_and_id}+{key_id}+{blob}")
        return cls(verifier, url)


Conflict = Literal["ahead", "fork"]
"""Why a witness refused, when its answer says it saw another history of the log:
``ahead``, it holds a larger tree than the checkpoint sent; ``fork``, it holds another root
at a size the checkpoint's tree has (a 422, or the earlier text's 409 for the size sent)."""


@dataclass(frozen=True)
class WitnessOutcome:
    """What one witness did. Exactly one of ``cosignature`` and ``problem`` is set.

    ``cosignature`` is the verified line and ``timestamp`` its time; ``problem`` says why
    there is none. ``old_size`` is the old size of the last request sent (None if none was).
    ``conflict`` and ``held_size`` are set when the refusal says the witness saw another
    history: its kind, and the size it said it holds (the witness's unsigned word).
    """

    name: str
    url: str
    cosignature: str | None
    timestamp: int | None
    problem: str | None
    old_size: int | None
    conflict: Conflict | None = None
    held_size: int | None = None

    def describe(self) -> str:
        """One line for people: ``cosigned by NAME at T`` or ``NAME (URL): problem``."""
        if self.cosignature is not None:
            return f"cosigned by {self.name} (time {self.timestamp}, from size {self.old_size})"
        return f"no cosignature from {self.name} ({self.url}): {self.problem}"


@dataclass(frozen=True)
class CollectedCosignatures:
    """The note with every verified cosignature appended, and each witness's outcome."""

    note: str
    outcomes: list[WitnessOutcome]

    @property
    def cosignatures(self) -> list[str]:
        return [o.cosignature for o in self.outcomes if o.cosignature is not None]


class _Problem(Exception):
    """One witness's failure, turned into its outcome's ``problem`` (and ``conflict``)."""

    def __init__(
        self, message: str, conflict: Conflict | None = None, held: int | None = None
    ) -> None:
        super().__init__(message)
        self.conflict = conflict
        self.held = held


def cosigned_sizes(
    checkpoints: Iterable[tuple[int, str]], witnesses: Sequence[WitnessEndpoint]
) -> dict[str, int]:
    """Per witness vkey, the largest size among ``checkpoints`` (size, signed note) whose note
    carries a valid cosignature from that witness's pinned key: the size the log last knew it
    to hold (step 1's ``old``). Witnesses with none are left out."""
    sizes: dict[str, int] = {}
    wanted = {(w.verifier.name, w.verifier.key_id): w for w in witnesses}
    for size, note in sorted(checkpoints, key=lambda pair: pair[0], reverse=True):
        if len(sizes) == len(wanted):
            break
        text, signatures = parse_note(note)
        for signature in signatures:
            witness = wanted.get((signature.name, signature.key_id))
            if witness is None or witness.verifier.vkey() in sizes:
                continue
            try:
                witness.verifier.verify(text.encode("utf-8"), signature.signature)
            except VerificationError:
                continue
            sizes[witness.verifier.vkey()] = size
    return sizes


def collect_cosignatures(
    note: str,
    proof_for: ProofFor,
    witnesses: Sequence[WitnessEndpoint],
    quorum: int,
    timeout: float = 10.0,
    known_sizes: Mapping[str, int] | None = None,
) -> CollectedCosignatures:
    """Ask ``witnesses`` to cosign the signed checkpoint ``note`` (see the module docstring).

    ``proof_for(old)`` returns the consistency proof from ``old`` to the checkpoint's size;
    ``known_sizes`` maps a witness vkey to the size it is believed to hold. ``timeout`` is
    per request, in seconds. Runs its own event loop (use
    :func:`collect_cosignatures_async` inside one). Raises NoteFormatError or
    CheckpointFormatError for a malformed note, WitnessSpecError for a quorum outside
    ``0..len(witnesses)`` or two witnesses with one key, and WitnessQuorumError (with the
    result) when fewer than ``quorum`` witnesses cosigned.
    """
    return asyncio.run(
        collect_cosignatures_async(note, proof_for, witnesses, quorum, timeout, known_sizes)
    )


async def collect_cosignatures_async(
    note: str,
    proof_for: ProofFor,
    witnesses: Sequence[WitnessEndpoint],
    quorum: int,
    timeout: float = 10.0,
    known_sizes: Mapping[str, int] | None = None,
) -> CollectedCosignatures:
    """:func:`collect_cosignatures` for callers already in an event loop."""
    text, _signatures = parse_note(note)
    checkpoint = Checkpoint.parse(text)
    keys = {w.verifier.public_key for w in witnesses}
    if len(keys) != len(witnesses):
        raise WitnessSpecError("two witnesses share a key; each witness is counted once")
    if not 0 <= quorum <= len(witnesses):
        raise WitnessSpecError(f"quorum {quorum} is outside 0..{len(witnesses)} witnesses")
    proofs: dict[int, Sequence[bytes]] = {}

    def cached_proof(old_size: int) -> Sequence[bytes]:
        if old_size not in proofs:
            proofs[old_size] = proof_for(old_size)
        return proofs[old_size]

    sizes = known_sizes or {}
    client_timeout = aiohttp.ClientTimeout(total=timeout)
    async with aiohttp.ClientSession(timeout=client_timeout) as session:
        outcomes = await asyncio.gather(
            *(
                _ask(
                    session,
                    w,
                    note,
                    text,
                    checkpoint,
                    cached_proof,
                    sizes.get(w.verifier.vkey(), 0),
                )
                for w in witnesses
            )
        )
    cosigned = note
    for outcome in outcomes:
        if outcome.cosignature is not None:
            # a note that already carries this witness's (earlier) cosignature keeps it
            with contextlib.suppress(DuplicateSignatureError):
                cosigned = append_signature(cosigned, outcome.cosignature)
    result = CollectedCosignatures(cosigned, list(outcomes))
    if len(result.cosignatures) < quorum:
        failed = "; ".join(o.describe() for o in outcomes if o.cosignature is None)
        raise WitnessQuorumError(
            f"{len(result.cosignatures)} of {len(witnesses)} witness(es) cosigned; quorum is "
            f"{quorum} ({failed})",
            result,
        )
    return result


async def _ask(
    session: aiohttp.ClientSession,
    witness: WitnessEndpoint,
    note: str,
    text: str,
    checkpoint: Checkpoint,
    proof_for: ProofFor,
    old_size: int,
) -> WitnessOutcome:
    sent: int | None = None
    try:
        for attempt in (1, 2):
            # 1. old size and proof
            if old_size > checkpoint.size:
                raise _Problem(
                    f"it holds size {old_size} of {checkpoint.origin}, beyond this checkpoint's "
                    f"size {checkpoint.size}: it saw a longer history of this log (fork or "
                    "rollback of this ledger)",
                    "ahead",
                    old_size,
                )
            body = AddCheckpointRequest.build(old_size, proof_for(old_size), note).encode()
            sent = old_size
            status, data = await _post(session, witness.endpoint, body)
            # 3. cosigned
            if status == 200:
                line, timestamp = _verified_line(witness, text, data)
                return WitnessOutcome(witness.name, witness.url, line, timestamp, None, sent)
            # 2. conflict: retry once from the size the witness holds
            if status == 409:
                if not data.strip():  # the earlier text's answer to another root
                    raise _other_root(old_size, checkpoint, 409)
                held = parse_size_body(data)
                if held == old_size:
                    raise _other_root(held, checkpoint, 409)
                if attempt == 2:
                    raise _Problem(f"409 twice; it now holds size {held}")
                old_size = held
                continue
            # 4. any other refusal
            if status == 422 and old_size == checkpoint.size:
                raise _other_root(old_size, checkpoint, 422)
            first = data[:200].decode("utf-8", "replace").strip().splitlines()
            # a 422 from the size it holds: the proof from its root does not verify
            conflict: Conflict | None = "fork" if status == 422 else None
            raise _Problem(
                f"refused with HTTP {status}: {first[0] if first else '(no body)'}",
                conflict,
                old_size if conflict else None,
            )
        raise AssertionError("unreachable")  # pragma: no cover
    except _Problem as problem:
        return WitnessOutcome(
            witness.name,
            witness.url,
            None,
            None,
            str(problem),
            sent,
            problem.conflict,
            problem.held,
        )
    except RegistreError as exc:
        return WitnessOutcome(witness.name, witness.url, None, None, str(exc), sent)
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        reason = str(exc) or type(exc).__name__
        return WitnessOutcome(witness.name, witness.url, None, None, f"unreachable: {reason}", sent)


def _other_root(size: int, checkpoint: Checkpoint, status: int) -> _Problem:
    return _Problem(
        f"it holds another checkpoint of size {size} for {checkpoint.origin} ({status}): "
        "this log showed it a different history",
        "fork",
        size,
    )


async def _post(session: aiohttp.ClientSession, url: str, body: bytes) -> tuple[int, bytes]:
    async with session.post(
        url, data=body, headers={"Content-Type": "text/plain; charset=utf-8"}
    ) as response:
        data = await response.content.read(MAX_RESPONSE_BYTES + 1)
        return response.status, data


def _verified_line(witness: WitnessEndpoint, text: str, data: bytes) -> tuple[str, int]:
    for signature in parse_cosignature_lines(text, data):
        if (signature.name, signature.key_id) == (witness.verifier.name, witness.verifier.key_id):
            try:
                timestamp = witness.verifier.verify(text.encode("utf-8"), signature.signature)
            except VerificationError as exc:
                raise _Problem(f"its cosignature does not verify: {exc}") from None
            return signature.line(), timestamp
    raise _Problem(
        f"it answered 200 without a cosignature from its pinned key "
        f"{witness.verifier.name}+{witness.verifier.key_id.hex()}"
    )
