"""The steps of a ``registre bench`` run that are measured in a process of their own.

Export and verify run in a fresh child process each, so that the peak resident memory
reported for them is theirs alone (``ru_maxrss`` of the child: the interpreter and its
imports included, nothing the harness holds). The child prints one JSON object on its last
line of stdout; :func:`run_export` and :func:`run_verify` start it and read that object.

* ``python -m registre.bench.stepproc export URL THREAD PATH``: ``export_thread`` of the
  ledger at ``URL`` (opened without a signer) to ``PATH``; prints ``{seconds,
  peak_rss_mb, start_rss_mb, bytes, entries, checkpoints}``.
* ``python -m registre.bench.stepproc verify PATH VKEY_FILE [JOBS]``: ``verify_bundle``
  with only that verifier key and ``JOBS`` processes (default 1); then, in the same
  process, on the same bundle, the **signature checks alone**
  (:func:`signature_seconds`); prints ``{seconds, peak_rss_mb, start_rss_mb, verified,
  entries, signatures_s, signatures}``. The peak is read before the signature pass.

``seconds`` is the wall time of the call itself (the interpreter's start and imports
excluded, as in-process timings exclude them).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from registre.attest.entries import ENTRY_SIGNATURE_PREFIX
from registre.attest.notes import Verifier
from registre.bench.memory import current_rss_mb, peak_rss_mb
from registre.errors import RegistreError

__all__ = [
    "BenchStepError",
    "bundle_leaves",
    "main",
    "run_export",
    "run_verify",
    "signature_messages",
    "signature_seconds",
]

_BATCH: Final = 2048  # leaves split before each timed batch of signature checks
_SIG_MARK: Final = b',"sig":"'
_ENTRY_OPEN: Final = b'{"entry":'


class BenchStepError(RegistreError):
    """A step child process that failed or printed no result."""


def signature_messages(leaf: bytes) -> tuple[bytes, bytes]:
    """``(message, signature)`` of one canonical leaf: what its Ed25519 signature is over
    (the entry domain prefix and the signed envelope's bytes) and the 64 signature bytes.
    A canonical leaf is ``{"entry":ENVELOPE,"sig":"BASE64"}`` (``specs/entries.md``), so
    both are slices of the leaf: no JSON parse. ValueError for any other shape."""
    if not leaf.startswith(_ENTRY_OPEN) or not leaf.endswith(b'"}'):
        raise ValueError("not a canonical leaf")
    mark = leaf.rindex(_SIG_MARK)
    signature = base64.b64decode(leaf[mark + len(_SIG_MARK) : -2], validate=True)
    return ENTRY_SIGNATURE_PREFIX + leaf[len(_ENTRY_OPEN) : mark], signature


def bundle_leaves(bundle: Path) -> Iterator[bytes]:
    """The leaves of ``bundle``'s ``entries.jsonl``, in order, streamed (``specs/bundle.md``:
    one canonical leaf per line). Nothing is verified here."""
    with zipfile.ZipFile(bundle) as archive, archive.open("entries.jsonl") as member:
        for line in member:
            yield line.rstrip(b"\n")


def signature_seconds(bundle: Path, verifier: Verifier) -> tuple[float, int]:
    """The Ed25519 verification of every entry of ``bundle`` alone, with ``verifier``'s key
    (``cryptography``, one process): ``(seconds, signatures checked)``. Leaves are read and
    sliced in batches outside the clock; only the ``verify`` calls are timed. ValueError if
    a signature does not verify (the bundle is not the one the run exported)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    key = Ed25519PublicKey.from_public_bytes(verifier.public_key)
    seconds = 0.0
    count = 0
    batch: list[tuple[bytes, bytes]] = []

    def flush() -> float:
        start = time.perf_counter()
        try:
            for message, signature in batch:
                key.verify(signature, message)
        except InvalidSignature:
            raise ValueError("a signature of the bundle does not verify") from None
        return time.perf_counter() - start

    for leaf in bundle_leaves(bundle):
        batch.append(signature_messages(leaf))
        if len(batch) == _BATCH:
            seconds += flush()
            count += len(batch)
            batch = []
    if batch:
        seconds += flush()
        count += len(batch)
    return seconds, count


def _export(url: str, thread_id: str, path: str) -> dict[str, Any]:
    from registre.ledger import Ledger, export_thread

    start_mb = current_rss_mb()
    with Ledger.open(url, create=False) as ledger:
        start = time.perf_counter()
        exported = export_thread(ledger, thread_id, path, overwrite=True)
        seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "peak_rss_mb": peak_rss_mb(),
        "start_rss_mb": start_mb,
        "bytes": exported.bytes,
        "entries": exported.entries,
        "checkpoints": len(exported.checkpoints),
    }


def _verify(path: str, vkey_file: str, jobs: int) -> dict[str, Any]:
    from registre.attest.verify import TrustPolicy, verify_bundle

    verifier = Verifier.from_vkey(Path(vkey_file).read_text(encoding="utf-8").strip())
    start_mb = current_rss_mb()
    start = time.perf_counter()
    report = verify_bundle(path, TrustPolicy(log_key=verifier), jobs=jobs)
    seconds = time.perf_counter() - start
    peak = peak_rss_mb()
    signatures_s, signatures = signature_seconds(Path(path), verifier)
    return {
        "seconds": seconds,
        "peak_rss_mb": peak,
        "start_rss_mb": start_mb,
        "verified": report.verified,
        "entries": signatures,
        "signatures_s": signatures_s,
        "signatures": signatures,
    }


def _child(argv: Sequence[str]) -> dict[str, Any]:
    command = [sys.executable, "-m", "registre.bench.stepproc", *argv]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BenchStepError(f"bench step {argv[0]} failed (exit {done.returncode}): {tail}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def run_export(url: str, thread_id: str, path: Path) -> dict[str, Any]:
    """Export ``thread_id`` of the ledger at ``url`` to ``path`` in a child process; its
    figures (module docstring). BenchStepError if it fails."""
    return _child(["export", url, thread_id, str(path)])


def run_verify(path: Path, vkey_file: Path, jobs: int = 1) -> dict[str, Any]:
    """Verify the bundle at ``path`` with the verifier key in ``vkey_file`` in a child
    process, then time its signature checks alone there; its figures (module docstring).
    BenchStepError if it fails (a bundle that does not verify fails the step)."""
    return _child(["verify", str(path), str(vkey_file), str(jobs)])


def main(argv: Sequence[str] | None = None) -> int:
    """The child's entry point (module docstring); 2 on a bad command line."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 4 and args[0] == "export":
        result = _export(args[1], args[2], args[3])
    elif len(args) in (3, 4) and args[0] == "verify":
        result = _verify(args[1], args[2], int(args[3]) if len(args) == 4 else 1)
    else:
        print(
            "usage: python -m registre.bench.stepproc export URL THREAD PATH | "
            "verify PATH VKEY_FILE [JOBS]",
            file=sys.stderr,
        )
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
