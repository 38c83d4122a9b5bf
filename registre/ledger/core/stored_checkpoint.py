"""A stored checkpoint is checked before it is handed out as the thread's signed head.

A checkpoint row can be planted (a never-signed note at a size the head has not reached) or
its note grown by lines that are no cosignature (the one ``UPDATE`` the store lets through).
:func:`check_stored_checkpoint` is what ``ThreadCore.checkpoint`` runs on a row it finds
instead of signing one (issue 29 item 3): the note must open under the thread's bound key,
for its origin, at the row's size, with the root the verified tree has there, and hold at
most :data:`registre.attest.notes.note.MAX_SIGNATURES` well-formed signature lines. Else
:class:`StoredCheckpointError` names the row and says how to recover.
"""

from __future__ import annotations

from registre.attest.notes import open_checkpoint
from registre.errors import MalformedError, VerificationError
from registre.ledger.core.verified_head import verifier_of_vkey
from registre.ledger.errors import StoreCorruptError

__all__ = ["StoredCheckpointError", "check_stored_checkpoint"]


class StoredCheckpointError(StoreCorruptError):
    """A stored checkpoint row that registre did not write as it stands: a note its key did
    not sign, for another size or root, or with lines that are no signature."""


def check_stored_checkpoint(
    thread: str,
    origin: str,
    size: int,
    expected_root: bytes,
    root: object,
    note: object,
    bound: str | None,
) -> tuple[bytes, str]:
    """``(root, note)`` of the checkpoint row of ``thread`` at ``size`` once checked (module
    docstring); ``expected_root`` is the root of the verified tree at ``size``; ``bound`` the
    thread's key (None: an older database's unbound thread, whose note is checked for form)."""
    where = f"checkpoint (thread {thread}, size {size})"
    if not isinstance(root, bytes | memoryview) or bytes(root) != expected_root:
        raise _refused(where, "its root is not the root of the entries at that size")
    if not isinstance(note, str):
        raise _refused(where, "its note is not text")
    if bound is not None:
        try:
            opened = open_checkpoint(note, verifier_of_vkey(bound), origin=origin)
        except (VerificationError, MalformedError) as exc:
            raise _refused(
                where, f"its note does not open under the thread's key ({exc})"
            ) from None
        if opened.checkpoint.size != size or opened.checkpoint.root != expected_root:
            raise _refused(where, "its note signs another size or root")
    return bytes(root), note


def _refused(where: str, why: str) -> StoredCheckpointError:
    return StoredCheckpointError(
        f"{where}: {why}; it was not written by registre as it stands, and nothing was signed"
    ).with_hint(
        "`registre verify --db` names every such row; the database's owner removes or restores "
        "it (specs/storage.md section 3.3)"
    )
