"""Issue 13 item 3: every member the manifest lists is one the verifier checks. A checkpoint
member outside ``checkpoint_sizes`` was never opened (an unverified note riding along with a
verified bundle); a listed member the format does not define was only reported missing."""

from __future__ import annotations

import functools
import hashlib

from registre.attest.bundles import (
    UncheckedCheckpointError,
    UnexpectedMemberError,
    checkpoint_member,
)
from registre.attest.notes import Checkpoint, sign_checkpoint
from tests.bundles import ATTACKER, build_thread, members, rezip
from tests.tamper.helpers import fails, passes


@functools.cache
def genuine() -> bytes:
    return build_thread(12).full_bundle(checkpoint_sizes=[6])


def test_unverified_checkpoint_member_fail() -> None:
    """A checkpoint member listed (with its digest) among the manifest's members, but not in
    its checkpoint_sizes: here one signed by another key for a fork, which step 2 would never
    open. The bundle is refused at step 1."""
    passes(genuine())
    forged = sign_checkpoint(
        Checkpoint("registre.test/log/thread-1", 9, bytes(32)), ATTACKER
    ).encode()
    tampered = rezip(genuine(), {checkpoint_member(9): forged})  # members fixed, sizes not
    error = fails(tampered, UncheckedCheckpointError, step=1)
    assert "00000000000000000009.note" in str(error) and "[6, 12]" in str(error)


def test_genuine_checkpoint_smuggled_outside_sizes_fail() -> None:
    """Even a genuine note of the thread is refused when the manifest does not name its size:
    what the verifier does not check must not be in the bundle."""
    note = members(build_thread(12).full_bundle(checkpoint_sizes=[9]))[checkpoint_member(9)]
    fails(rezip(genuine(), {checkpoint_member(9): note}), UncheckedCheckpointError, step=1)


def test_manifest_lists_unknown_member_fail() -> None:
    """A manifest listing a member the format does not define (absent from the zip)."""
    listed = {"README.txt": {"bytes": 0, "sha256": "0" * 64}}
    manifest_members = {
        name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for name, data in members(genuine()).items()
        if name != "manifest.json"
    }
    tampered = rezip(genuine(), {}, manifest_changes={"members": {**manifest_members, **listed}})
    fails(tampered, UnexpectedMemberError, step=1)
