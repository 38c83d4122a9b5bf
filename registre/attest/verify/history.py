"""Step 5 of bundle verification: the new head must extend what this verifier trusted before.

The verifier's memory is a small JSON state file (``specs/verify.md`` section 5), keyed by
the pinned log key and the origin::

    {"format": "registre-verifier-state/2",
     "logs": {"example.com/log+1a2b3c4d+AQ...": {
              "example.com/log/thread-1": {"size": 1000, "root": "<base64 of 32 bytes>"}}}}

For the bundle's origin, with the last trusted head ``(m, r)`` and the bundle's signed head
``(n, R)``:

5.1 ``n < m``: the bundle rolls the thread back (:class:`RollbackError`), even if its
    checkpoint is genuine -- an old checkpoint replayed;
5.2 ``n == m``: ``R`` must equal ``r``, else two histories of one size exist
    (:class:`ForkError`, a split view);
5.3 ``n > m``: the tree of size ``m`` inside the bundle must have root ``r``: recomputed from
    the leaves of a full bundle, or proved by the consistency proof ``(m, n)`` that a
    partial bundle carries in ``proofs.json`` (:class:`MissingProofError` if it carries none,
    :class:`ForkError` if the proof fails).

5.3 also holds at once when ``m == 0`` (the empty tree is a prefix of every tree), so a
trusted size-0 checkpoint needs no consistency proof.

An origin the file does not mention is trusted on first use. The file is only written by
:func:`update_state`, after every step passed: under an exclusive lock (``<file>.lock``) it
re-reads the file, re-checks the new head against what it now trusts (another verification
may have recorded a larger head meanwhile), merges, and writes a temporary file in its folder,
flushed, fsynced and renamed over the old one.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from registre.attest.canonical_json import canonical_bytes, parse_strict
from registre.attest.errors import output_error
from registre.attest.tree import HASH_SIZE, empty_root, verify_consistency
from registre.errors import MalformedError, RegistreError, VerificationError

__all__ = [
    "LEGACY_STATE_FORMAT",
    "STATE_FORMAT",
    "ForkError",
    "MissingProofError",
    "RollbackError",
    "StateFileError",
    "TrustedHead",
    "TrustedState",
    "check_history",
    "load_state",
    "locked_state",
    "save_state",
    "update_state",
]

STATE_FORMAT = "registre-verifier-state/2"
LEGACY_STATE_FORMAT = "registre-verifier-state/1"
_MAX_STATE_BYTES = 64 << 20


class StateFileError(MalformedError):
    """A verifier state file that cannot be read as one."""


class RollbackError(VerificationError):
    """A bundle whose head is smaller than the head this verifier already trusts."""


class ForkError(VerificationError):
    """A bundle whose tree is not an extension of the tree this verifier trusts (split view)."""


class MissingProofError(VerificationError):
    """A partial bundle lacking a proof the verifier needs (a promise instead of a proof)."""


@dataclass(frozen=True)
class TrustedHead:
    """A tree head the verifier accepted: size and root."""

    size: int
    root: bytes


@dataclass(frozen=True)
class TrustedState:
    """The last trusted head per (log key, origin).

    ``heads`` maps ``(log_key, origin)`` -- the pinned verifier key as its full
    ``NAME+KEYID+BASE64`` string, so two operators whose keys share a name (and even a key
    id) never share a head -- to a head. ``unkeyed`` holds heads read from a
    ``registre-verifier-state/1`` file, which recorded the origin only: such a head binds
    every key for its origin until a verification under one key records its own head for
    it (the head then moves under that key).
    """

    heads: Mapping[tuple[str, str], TrustedHead] = field(default_factory=dict)
    unkeyed: Mapping[str, TrustedHead] = field(default_factory=dict)

    def trusted(self, log_key: str, origin: str) -> TrustedHead | None:
        """The head trusted for ``origin`` under ``log_key`` (None: first use)."""
        head = self.heads.get((log_key, origin))
        return head if head is not None else self.unkeyed.get(origin)

    def updated(self, log_key: str, origin: str, head: TrustedHead) -> TrustedState:
        """A copy with ``origin`` under ``log_key`` now trusting ``head``."""
        heads = dict(self.heads)
        heads[(log_key, origin)] = head
        unkeyed = {name: old for name, old in self.unkeyed.items() if name != origin}
        return TrustedState(dict(sorted(heads.items())), unkeyed)

    def to_json(self) -> dict[str, object]:
        logs: dict[str, dict[str, object]] = {}
        for (log_key, origin), head in sorted(self.heads.items()):
            logs.setdefault(log_key, {})[origin] = _head_json(head)
        document: dict[str, object] = {"format": STATE_FORMAT, "logs": logs}
        if self.unkeyed:
            document["unkeyed"] = {o: _head_json(h) for o, h in sorted(self.unkeyed.items())}
        return document


def _head_json(head: TrustedHead) -> dict[str, object]:
    return {"size": head.size, "root": base64.b64encode(head.root).decode("ascii")}


def load_state(path: str | os.PathLike[str]) -> TrustedState:
    """Read the state file at ``path``; a file that does not exist (in a folder that does)
    is the empty state. Reads ``registre-verifier-state/2`` and, for the heads it recorded
    by origin alone, ``/1`` (see :class:`TrustedState`).

    Raises :class:`StateFileError` for anything that is not a state file, or a path whose
    folder is missing (checked now, so a verification never ends unable to record its head).
    """
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        if not Path(path).parent.is_dir():
            raise StateFileError(
                f"state file {path}: its folder does not exist, so it could not be written"
            ) from None
        return TrustedState()
    except OSError as exc:
        raise StateFileError(f"cannot read state file {path}: {exc.strerror}") from None
    try:
        value = parse_strict(data, max_depth=8, max_bytes=_MAX_STATE_BYTES)
    except MalformedError as exc:
        raise StateFileError(f"state file {path} is not strict JSON: {exc}") from exc
    if isinstance(value, dict) and value.get("format") == LEGACY_STATE_FORMAT:
        if set(value) != {"format", "origins"}:
            raise StateFileError(
                f'state file {path} must be {{"format": "{LEGACY_STATE_FORMAT}", '
                '"origins": {...}}'
            )
        return TrustedState(unkeyed=_heads(value["origins"], f"state file {path}"))
    if (
        not isinstance(value, dict)
        or value.get("format") != STATE_FORMAT
        or not {"format", "logs"} <= set(value) <= {"format", "logs", "unkeyed"}
    ):
        raise StateFileError(
            f'state file {path} must be {{"format": "{STATE_FORMAT}", "logs": {{...}}}}'
        )
    logs = value["logs"]
    if not isinstance(logs, dict):
        raise StateFileError(f"state file {path}: logs must be an object")
    heads: dict[tuple[str, str], TrustedHead] = {}
    for log_key, origins in logs.items():
        for origin, head in _heads(origins, f"state file {path}: {log_key[:80]!r}").items():
            heads[(log_key, origin)] = head
    unkeyed = _heads(value.get("unkeyed", {}), f"state file {path}: unkeyed")
    return TrustedState(heads, unkeyed)


def _heads(origins: object, where: str) -> dict[str, TrustedHead]:
    if not isinstance(origins, dict):
        raise StateFileError(f"{where}: origins must be an object")
    heads = {}
    for origin, record in origins.items():
        if not isinstance(record, dict) or set(record) != {"size", "root"}:
            raise StateFileError(f'{where}: {origin!r} must be {{"size", "root"}}')
        size, root = record["size"], record["root"]
        if type(size) is not int or size < 0:
            raise StateFileError(f"{where}: {origin!r} size must be an integer >= 0")
        heads[origin] = TrustedHead(size, _root(root, f"{where}: {origin!r} root"))
    return heads


def save_state(path: str | os.PathLike[str], state: TrustedState) -> None:
    """Write ``state`` atomically: temporary file in the same folder, fsync, rename, fsync
    the folder. Readers see the old file or the new one, never a torn one. Callers that may
    run concurrently with another verifier use :func:`update_state`."""
    target = Path(path)
    data = canonical_bytes(state.to_json()) + b"\n"
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as error:
        raise output_error(target, error) from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except OSError as error:  # it names the temporary file: name the state file instead
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise output_error(target, error) from None
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    descriptor = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextmanager
def locked_state(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the exclusive lock of the state file at ``path`` (``fcntl.flock`` on the file
    ``<path>.lock`` beside it, created if missing and never removed: the state file itself
    is replaced by each write, so it cannot carry the lock). Blocks until the lock is free."""
    lock_path = Path(f"{os.fspath(path)}.lock")
    try:
        descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StateFileError(f"cannot open the lock file {lock_path}: {exc.strerror}") from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock


def update_state(
    path: str | os.PathLike[str],
    log_key: str,
    origin: str,
    new: TrustedHead,
    recheck: Callable[[TrustedHead | None], None],
) -> TrustedState:
    """Record ``new`` for ``(log_key, origin)`` without losing a concurrent verifier's update.

    Under :func:`locked_state`: re-read the file, call ``recheck(head)`` with the head it now
    trusts for the origin (``recheck`` raises -- RollbackError, ForkError, ... -- when ``new``
    does not extend it, e.g. because another verification recorded a larger head meanwhile),
    merge ``new`` into the state as re-read (every other origin and key kept as found), and
    write it atomically (:func:`save_state`). Returns the state written (or found, if it
    already trusted ``new``).
    """
    with locked_state(path):
        state = load_state(path)
        current = state.trusted(log_key, origin)
        recheck(current)
        if state.heads.get((log_key, origin)) == new:
            return state
        if current is not None and current.size > new.size:  # pragma: no cover - recheck
            raise RollbackError(f"the state file trusts size {current.size} of {origin}")
        merged = state.updated(log_key, origin, new)
        save_state(path, merged)
        return merged


def check_history(
    trusted: TrustedHead | None,
    new: TrustedHead,
    *,
    origin: str,
    root_at: Callable[[int], bytes] | None,
    proofs: Mapping[tuple[int, int], tuple[bytes, ...]],
) -> str:
    """Steps 5.1-5.3: raise unless ``new`` extends ``trusted``; return a sentence saying why.

    ``root_at(m)`` recomputes the root of the first ``m`` leaves (full bundles); for a
    partial bundle it is None and ``proofs`` must hold the consistency proof ``(m, n)``.
    """
    if trusted is None:
        return f"{origin} not seen before: head {new.size} trusted on first use"
    old_root = base64.b64encode(trusted.root).decode("ascii")
    # 5.1 no rollback
    if new.size < trusted.size:
        raise RollbackError(
            f"the bundle's head has size {new.size}, but this verifier already trusts size "
            f"{trusted.size} for {origin}: an older checkpoint was replayed or the thread "
            "was truncated"
        )
    # 5.2 one root per size
    if new.size == trusted.size:
        if new.root != trusted.root:
            raise ForkError(
                f"the bundle's head of size {new.size} has another root than the trusted "
                f"head of that size ({old_root}): two histories of {origin} exist"
            )
        return f"head {new.size} is the head already trusted"
    # 5.3 the trusted tree is a prefix of the new one
    if trusted.size == 0:  # the empty tree is a prefix of every tree: no proof is needed
        if trusted.root != empty_root():
            raise ForkError(
                f"the trusted head of size 0 for {origin} has root {old_root}, not the "
                "empty-tree hash: the state file records an impossible head"
            )
        return "extends the trusted empty head (size 0)"
    if root_at is not None:
        recomputed = root_at(trusted.size)
        if recomputed != trusted.root:
            raise ForkError(
                f"the bundle's first {trusted.size} entries have root "
                f"{base64.b64encode(recomputed).decode('ascii')}, not the trusted root "
                f"{old_root}: the bundle forks from the history this verifier trusts"
            )
        return f"extends trusted head {trusted.size} (recomputed from the entries)"
    proof = proofs.get((trusted.size, new.size))
    if proof is None:
        raise MissingProofError(
            f"this verifier trusts size {trusted.size} of {origin}; the partial bundle carries "
            f"no consistency proof from {trusted.size} to {new.size}: ask the exporter for "
            f"one from size {trusted.size}"
        )
    try:
        verify_consistency(trusted.size, new.size, proof, trusted.root, new.root)
    except RegistreError as exc:
        raise ForkError(
            f"the consistency proof from trusted head {trusted.size} to {new.size} fails "
            f"({exc}): the bundle forks from the history this verifier trusts"
        ) from exc
    return f"extends trusted head {trusted.size} (consistency proof)"


def _root(value: object, where: str) -> bytes:
    try:
        raw = base64.b64decode(value, validate=True) if isinstance(value, str) else b""
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != HASH_SIZE or base64.b64encode(raw).decode("ascii") != value:
        raise StateFileError(f"{where} must be a 32-byte hash in canonical base64")
    return raw
