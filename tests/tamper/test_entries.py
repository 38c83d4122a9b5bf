"""Attacks on the entries and on who signed them (THREATS rows 2, 5, 6, 8, 11, 12)."""

from __future__ import annotations

import base64
import functools

import pytest

from registre.attest.bundles import checkpoint_member
from registre.attest.entries import EntrySignatureError, UnknownEntryKeyError, sign_entry
from registre.attest.errors import KnownSignerFailedError, NoTrustedSignatureError, WeakKeyError
from registre.attest.notes import ALG_ED25519, Checkpoint, NoteSignature, Verifier, encode_vkey
from registre.attest.tree import root_at
from registre.attest.verify import (
    EntryOriginMismatchError,
    PrevRootMismatchError,
    SeqDuplicateError,
    SeqGapError,
    SeqOrderError,
    TreeRootMismatchError,
    TreeSizeMismatchError,
)
from tests.bundles import ATTACKER, LOG, TIME, build_thread, members, policy, rezip
from tests.tamper.helpers import entry_lines, fails, passes, with_entry_lines

# Order of the Ed25519 group: a signature with S >= L is the malleable twin of one with S - L.
ED25519_ORDER = 2**252 + 27742317777372353535851937790883648493


@functools.cache
def genuine() -> bytes:
    return build_thread(12).full_bundle()


def test_flipped_byte_in_entry_fail() -> None:
    """One character of a signed turn changed (digests recomputed): the signature fails."""
    passes(genuine())
    lines = entry_lines(genuine())
    lines[11] = lines[11].replace(b"turn 11", b"turn 17")
    fails(with_entry_lines(genuine(), lines), EntrySignatureError, step=3, seq=11)


def test_entries_reordered_fail() -> None:
    """Two genuine entries swapped."""
    passes(genuine())
    lines = entry_lines(genuine())
    lines[4], lines[5] = lines[5], lines[4]
    fails(with_entry_lines(genuine(), lines), SeqOrderError, step=3, seq=4)


def test_entry_dropped_fail() -> None:
    """A genuine entry removed from the middle."""
    passes(genuine())
    lines = entry_lines(genuine())
    del lines[6]
    fails(with_entry_lines(genuine(), lines), SeqGapError, step=3, seq=6)


def test_last_leaf_duplicated_fail() -> None:
    """The last leaf repeated (a Bitcoin-style tree would keep its root)."""
    passes(genuine())
    lines = entry_lines(genuine())
    fails(with_entry_lines(genuine(), [*lines, lines[-1]]), SeqDuplicateError, step=3, seq=12)


def test_thread_truncated_and_resigned_fail() -> None:
    """The first 8 entries re-signed, with their checkpoint, by a key that is not pinned."""
    passes(genuine())
    forged = build_thread(8, signer=ATTACKER).full_bundle()
    fails(forged, NoTrustedSignatureError, step=2)


def test_key_in_bundle_swapped_fail() -> None:
    """The bundle names the attacker's key and everything is re-signed by it."""
    passes(genuine())
    forged = build_thread(12, signer=ATTACKER).full_bundle()
    passes(forged, policy(signer=ATTACKER))  # what trusting the bundle's own key would accept
    fails(forged, NoTrustedSignatureError, step=2)


def test_key_in_manifest_alone_swapped_is_ignored() -> None:
    """The informational key is never trusted: naming another key changes nothing but a note."""
    attacker = {"log_key": ATTACKER.vkey()}
    report = passes(build_thread(12).full_bundle(informational=attacker))
    assert any("informational" in note for note in report.notes)


def test_entries_resigned_under_genuine_checkpoint_fail() -> None:
    """Entries re-signed by an unpinned key, the genuine checkpoint kept."""
    forged = build_thread(12, signer=ATTACKER).full_bundle()
    fails(
        rezip(genuine(), {"entries.jsonl": members(forged)["entries.jsonl"]}),
        UnknownEntryKeyError,
        step=3,
        seq=0,
    )


def test_low_order_pinned_key_fail() -> None:
    """A small-order public key (the identity) would verify forgeries: it cannot be pinned."""
    identity = (1).to_bytes(32, "little")
    with pytest.raises(WeakKeyError, match="small-order point"):
        Verifier.from_vkey(encode_vkey(LOG.name, ALG_ED25519, identity))


def test_malleable_signature_fail() -> None:
    """An entry signature with S + L, the twin that lax verifiers accept."""
    passes(genuine())
    lines = entry_lines(genuine())
    head, _, tail = lines[11].rpartition(b'"sig":"')
    signature = base64.b64decode(tail[:-2])
    s = int.from_bytes(signature[32:], "little") + ED25519_ORDER
    assert s < 2**256
    twin = signature[:32] + s.to_bytes(32, "little")
    lines[11] = head + b'"sig":"' + base64.b64encode(twin) + b'"}'
    fails(with_entry_lines(genuine(), lines), EntrySignatureError, step=3, seq=11)


def test_signature_replayed_across_message_types_fail() -> None:
    """An entry's genuine signature offered as the checkpoint's signature."""
    thread = build_thread(12)
    passes(thread.full_bundle())
    body = Checkpoint(thread.origin, 12, root_at(thread.tree, 12)).body()
    line = NoteSignature(LOG.name, LOG.key_id, thread.entries[11].signature).line()
    forged = rezip(thread.full_bundle(), {checkpoint_member(12): (body + "\n" + line).encode()})
    fails(forged, KnownSignerFailedError, step=2)


def test_prev_root_rebound_fail() -> None:
    """An entry signed by the pinned key after another history than the one before it."""
    thread = build_thread(11)
    wrong = root_at(thread.tree, 10)
    entry = sign_entry(
        LOG,
        thread=thread.thread,
        seq=11,
        kind="turn",
        actor="agent",
        body={"role": "user", "text": "rebound"},
        prev_root=wrong,
        time=TIME,
    )
    thread.add(entry)
    fails(thread.full_bundle(), PrevRootMismatchError, step=3, seq=11)


def test_entry_from_another_thread_fail() -> None:
    """Mix and match: a genuine entry of thread-2, same seq, slipped into thread-1's bundle."""
    other = build_thread(12, thread="thread-2")
    lines = entry_lines(genuine())
    lines[11] = other.entries[11].leaf
    fails(with_entry_lines(genuine(), lines), EntryOriginMismatchError, step=3, seq=11)


def test_checkpoint_from_another_history_fail() -> None:
    """Mix and match: genuine entries beside a genuine checkpoint of a forked history."""
    fork = build_thread(11)
    fork.turn("the other ending")
    forged = rezip(
        genuine(), {checkpoint_member(12): members(fork.full_bundle())[checkpoint_member(12)]}
    )
    fails(forged, TreeRootMismatchError, step=4)


def test_last_entries_cut_off_fail() -> None:
    """The last entries removed, the genuine head kept: no gap shows, the size does."""
    passes(genuine())
    lines = entry_lines(genuine())
    fails(with_entry_lines(genuine(), lines[:9]), TreeSizeMismatchError, step=4)
