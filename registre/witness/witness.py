"""The witness: checks an ``add-checkpoint`` request in the order of C2SP ``tlog-witness`` and
cosigns it only if every check passes.

:meth:`Witness.add_checkpoint`, for a request already read by
:meth:`~registre.witness.protocol.AddCheckpointRequest.parse` (400/413 for bad form):

1. some followed log covers the checkpoint's origin, else UnknownLogError (404);
2. the note verifies under the keys of those logs -- at least one signature, none failing
   (signatures from other keys are ignored) -- else LogSignatureError (403);
3. ``old`` is at most the checkpoint's size, else OldSizeTooLargeError (400);

then, in one write transaction (:meth:`registre.witness.state.WitnessState.advance`):

4. ``old`` equals the size held for the origin (0 if none), else OldSizeConflictError (409,
   with the held size);
5. a checkpoint of size 0 has the empty tree's root, else EmptyTreeRootError (422);
6. if ``old`` equals the checkpoint's size, its root equals the held root, else
   SplitViewError (422, a fork);
7. the proof is an RFC 9162 consistency proof from the held (size, root) to the checkpoint's
   (empty when ``old`` is 0; any tree extends the empty tree), else
   InconsistentCheckpointError (422);
8. the checkpoint is cosigned (``cosignature/v1``, time from the clock) and stored, and the
   cosignature line returned.

:meth:`Witness.monitor` answers the monitoring request ``GET /<origin hash>/checkpoint``: the
latest checkpoint cosigned for the origin with the log signatures the witness verified and
its own cosignature, or 404.

A checkpoint refused at steps 5-7 carries a valid log signature: it is kept as evidence --
its text and the log's verified signature line only, never the other lines a client sent
(issue 29 item 12), so each checkpoint is kept once whatever is added to it
(:meth:`~registre.witness.state.WitnessState.record_evidence`; steps 5 and 6 as
``split-view``, step 7 as ``bad-proof``).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from registre.attest.notes import CosignatureSigner, Verifier, open_note, parse_note
from registre.attest.tree import empty_root, verify_consistency
from registre.errors import RegistreError, VerificationError
from registre.witness.errors import (
    EmptyTreeRootError,
    InconsistentCheckpointError,
    LogSignatureError,
    OldSizeConflictError,
    OldSizeTooLargeError,
    SplitViewError,
    UnknownLogError,
    WitnessRefusal,
)
from registre.witness.protocol import (
    COSIGNATURE_CONTENT_TYPE,
    SIZE_CONTENT_TYPE,
    AddCheckpointRequest,
    encode_size_body,
)
from registre.witness.state import LatestCheckpoint, WitnessState

__all__ = ["Witness", "WitnessResponse"]

_TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class WitnessResponse:
    """An HTTP answer: status, body, content type, and the origin asked about (for logs)."""

    status: int
    body: bytes
    content_type: str
    origin: str | None = None


class Witness:
    """A witness: its cosigning key, its state, and a clock (POSIX seconds)."""

    def __init__(
        self,
        signer: CosignatureSigner,
        state: WitnessState,
        clock: Callable[[], int] = lambda: int(time.time()),
    ) -> None:
        self.signer = signer
        self.state = state
        self.clock = clock
        self._verifiers: dict[str, Verifier] = {}

    def log_keys(self, origin: str) -> list[Verifier]:
        """The keys of every followed log whose prefix covers ``origin`` (UnknownLogError if
        none)."""
        keys = [self._verifier(log.vkey) for log in self.state.followed() if log.covers(origin)]
        if not keys:
            raise UnknownLogError(f"this witness follows no log for origin {origin!r}").with_hint(
                "its operator adds one with `registre witness follow VKEY`"
            )
        return keys

    def add_checkpoint(self, request: AddCheckpointRequest) -> str:
        """Run steps 1-8 (module docstring); return the cosignature line. Raises the step's
        WitnessRefusal error, with nothing cosigned or stored (evidence aside)."""
        checkpoint = request.checkpoint
        # 1. a followed log covers the origin
        keys = self.log_keys(checkpoint.origin)
        # 2. the log's signature
        try:
            opened = open_note(request.note, keys)
        except VerificationError as exc:
            raise LogSignatureError(
                f"checkpoint for {checkpoint.origin} is not signed by a followed log key: {exc}"
            ) from None
        text = opened.text
        # what evidence keeps: the text and the log's own verified line -- the smallest form,
        # the same whatever extra lines a client adds, and nothing nobody proved
        proven = text + "\n" + "".join(line.line() for line in opened.verified)
        # 3. old size at most the checkpoint size
        if request.old_size > checkpoint.size:
            raise OldSizeTooLargeError(
                f"old size {request.old_size} is larger than the checkpoint size {checkpoint.size}"
            )

        def check(held: LatestCheckpoint) -> None:
            # 4. old size is the size held
            if request.old_size != held.size:
                raise OldSizeConflictError(
                    f"this witness holds size {held.size} for {checkpoint.origin}, not "
                    f"{request.old_size}",
                    held.size,
                )
            # 5. the empty tree has one root
            if checkpoint.size == 0 and checkpoint.root != empty_root():
                raise EmptyTreeRootError(
                    f"checkpoint of size 0 for {checkpoint.origin} has root "
                    f"{checkpoint.root.hex()}; the empty tree's root is {empty_root().hex()} "
                    "(SHA-256 of nothing)"
                )
            # 6. same size, same root
            if checkpoint.size == held.size and checkpoint.root != held.root:
                raise SplitViewError(
                    f"this witness holds another root for {checkpoint.origin} at size "
                    f"{held.size}: the log shows two histories"
                )
            # 7. consistency proof from what is held
            try:
                verify_consistency(
                    held.size, checkpoint.size, request.proof, held.root, checkpoint.root
                )
            except VerificationError as exc:
                raise InconsistentCheckpointError(
                    f"consistency proof from size {held.size} to {checkpoint.size} of "
                    f"{checkpoint.origin} does not verify: {exc}"
                ) from None

        def cosign() -> tuple[str, int]:
            # 8. cosign (stored by advance in the same transaction)
            timestamp = self.clock()
            return self.signer.cosign(text, timestamp), timestamp

        try:
            return self.state.advance(checkpoint, request.note, check, cosign)
        except (EmptyTreeRootError, SplitViewError) as exc:
            self.state.record_evidence(checkpoint, proven, "split-view", str(exc))
            raise
        except InconsistentCheckpointError as exc:
            self.state.record_evidence(checkpoint, proven, "bad-proof", str(exc))
            raise

    def handle(self, body: bytes) -> WitnessResponse:
        """Answer one ``add-checkpoint`` body: 200 with the cosignature line, or the status of
        the refusal (409 with the held size as ``text/x.tlog.size``). A database that cannot
        be written (lock wait over, read-only) is 503; any other failure propagates (a bug:
        the server answers 500)."""
        origin: str | None = None
        try:
            request = AddCheckpointRequest.parse(body)
            origin = request.checkpoint.origin
            line = self.add_checkpoint(request)
        except OldSizeConflictError as exc:
            return WitnessResponse(
                409, encode_size_body(exc.stored_size), SIZE_CONTENT_TYPE, origin
            )
        except RegistreError as exc:
            if not isinstance(exc, WitnessRefusal):
                raise
            return WitnessResponse(exc.http_status, f"{exc}\n".encode(), _TEXT, origin)
        except sqlite3.OperationalError as exc:
            # a lock wait over, or a state that became read-only: nothing was stored
            text = f"witness state unavailable: {exc}\n"
            return WitnessResponse(503, text.encode(), _TEXT, origin)
        return WitnessResponse(200, line.encode("utf-8"), COSIGNATURE_CONTENT_TYPE, origin)

    def monitor(self, origin_hash: bytes) -> WitnessResponse:
        """Answer ``GET /<hex origin hash>/checkpoint`` (C2SP tlog-witness, monitor retrieval):
        200 with the latest checkpoint cosigned for the origin whose SHA-256 is
        ``origin_hash`` -- its text, the signature lines of followed log keys that verify over
        it, and this witness's cosignature from ``add-checkpoint`` -- or 404 if this witness
        never cosigned one. Signature lines of other keys in the note received are left out:
        the witness vouches only for what it checked."""
        held = self.state.latest_by_origin_hash(origin_hash)
        if held is None or held.note is None or held.cosignature is None:
            return WitnessResponse(
                404, b"this witness never cosigned a checkpoint for that origin\n", _TEXT
            )
        text, signatures = parse_note(held.note)
        message = text.encode("utf-8")
        keys: dict[tuple[str, bytes], Verifier] = {}
        for log in self.state.followed():
            if log.covers(held.origin):
                verifier = self._verifier(log.vkey)
                keys[(verifier.name, verifier.key_id)] = verifier
        lines: list[str] = []
        for signature in signatures:
            known = keys.get((signature.name, signature.key_id))
            if known is None:
                continue
            try:
                known.verify(message, signature.signature)
            except VerificationError:
                continue
            lines.append(signature.line())
        body = text + "\n" + "".join(lines) + held.cosignature
        return WitnessResponse(200, body.encode("utf-8"), _TEXT, held.origin)

    def _verifier(self, vkey: str) -> Verifier:
        verifier = self._verifiers.get(vkey)
        if verifier is None:
            verifier = self._verifiers[vkey] = Verifier.from_vkey(vkey)
        return verifier
