"""Build valid audit bundles in memory for the tests: no database, only attest and lifecycle.

A :class:`Thread` signs entries with :func:`registre.attest.entries.entry.sign_entry`, keeps the
RFC 9162
tree with :mod:`registre.attest.tree.merkle`, decides lifecycle events with
:func:`registre.lifecycle.step` (so every recorded outcome is the one the rules give) and signs
checkpoints with :mod:`registre.attest.notes.checkpoint`. Bundles come out of
:func:`registre.attest.bundles.writer.bundle_bytes`,
exactly as an exporter would write them. Tamper helpers (:func:`rezip`, :meth:`Thread.forge`)
change a bundle the way an attacker could.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from registre.attest.bundles import (
    ENTRIES_MEMBER,
    MANIFEST_MEMBER,
    build_proofs,
    bundle_bytes,
    deterministic_zip,
    read_zip,
)
from registre.attest.canonical_json import canonical_bytes
from registre.attest.entries import (
    EMPTY_LIFECYCLE,
    ENTRY_SIGNATURE_PREFIX,
    BodySchemaError,
    Entry,
    LifecycleHead,
    open_entry,
    sign_entry,
)
from registre.attest.notes import (
    Checkpoint,
    CosignatureSigner,
    Signer,
    cosign_checkpoint,
    sign_checkpoint,
)
from registre.attest.projection_digest import projection_digest
from registre.attest.tree import CompactRange, MemoryHashSource, leaf_hash, root_at
from registre.attest.verify import TrustPolicy
from registre.context import (
    DEFAULT_COUNTER_NAME,
    LIFECYCLE_BLOCK_VERSION,
    ContextEntry,
    ContextState,
    ExtractiveSummarizer,
    Policy,
    default_counter,
    entry_text,
    prepare_compaction,
    project,
)
from registre.context.events import COMPACTION_ACTOR
from registre.errors import RegistreError
from registre.lifecycle import (
    ComputeRequest,
    FinalRequest,
    LifecycleState,
    PinRequest,
    ReadRequest,
    Request,
    SourceRef,
    Statement,
    UpsertRequest,
    event_to_body,
    step,
)

__all__ = [
    "ATTACKER",
    "LOG",
    "THREAD",
    "TIME",
    "WITNESSES",
    "Thread",
    "build_thread",
    "members",
    "policy",
    "rezip",
    "story_prefix",
]

LOG = Signer.from_seed("registre.test/log", bytes(range(32)))
ATTACKER = Signer.from_seed("registre.test/log", bytes(range(100, 132)))
WITNESSES = [
    CosignatureSigner.from_seed(f"witness-{n}.test", bytes([n + 1]) * 32) for n in range(3)
]
THREAD = "thread-1"
TIME = "2026-11-30T08:30:18.123456Z"
COSIGN_TIME = 1_796_000_000
STORY_POLICY = Policy(
    budget_tokens=150,
    high_water_permille=500,
    low_water_permille=100,
    keep_recent_turns=1,
    bulky_tool_output_tokens=2000,
    summary_share_permille=500,
)
"""A small budget, so that the story's context is due for compaction after a few entries."""


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ref(name: str) -> SourceRef:
    return SourceRef(name, "report.pdf", f"p. {name}", digest(f"passage {name}"))


@dataclass
class Thread:
    """A thread being written: entries, tree and lifecycle state, all in memory."""

    signer: Signer = LOG
    thread: str = THREAD
    entries: list[Entry] = field(default_factory=list)
    tree: MemoryHashSource = field(default_factory=MemoryHashSource)
    frontier: CompactRange = field(default_factory=CompactRange)
    state: LifecycleState = field(default_factory=LifecycleState.empty)
    context: ContextState | None = field(default_factory=ContextState)
    texts: dict[int, str] = field(default_factory=dict)
    lifecycle: LifecycleHead = EMPTY_LIFECYCLE
    """The lifecycle head the next entry signs (``specs/entries.md`` section 1)."""

    @property
    def origin(self) -> str:
        return f"{self.signer.name}/{self.thread}"

    @property
    def leaves(self) -> list[bytes]:
        return [entry.leaf for entry in self.entries]

    @property
    def size(self) -> int:
        return len(self.entries)

    def add(self, entry: Entry) -> Entry:
        """Append an entry signed elsewhere (e.g. with a wrong prev root, for an attack)."""
        self.entries.append(entry)
        self.lifecycle = self.lifecycle.after(entry.kind, entry.leaf_hash)
        self.tree.append(entry.leaf_hash)
        self.frontier.append(entry.leaf_hash)
        if self.context is not None:
            try:  # the working context, as the ledger keeps it
                self.context.apply(ContextEntry(entry.seq, entry.kind, entry.actor, entry.body))
                self.texts[entry.seq] = entry_text(entry.kind, entry.body)
            except RegistreError:  # a forged entry the context cannot fold: stop tracking
                self.context = None
        return entry

    def compact(self, context_policy: Policy = STORY_POLICY) -> Entry:
        """Record the compaction due now, exactly as ``prepare_compaction`` makes it."""
        assert self.context is not None
        body = prepare_compaction(
            self.context, context_policy, default_counter(), ExtractiveSummarizer(), self.texts
        )
        assert body is not None, "no compaction is due"
        return self.append("context.compaction", body, actor=COMPACTION_ACTOR)

    def model_call(
        self, context_policy: Policy = STORY_POLICY, *, lifecycle_block: bool = False
    ) -> Entry:
        """Record a model call with the digest of the projection of everything so far (with
        ``lifecycle_block``, ending with the lifecycle block of the state so far)."""
        assert self.context is not None
        budget = context_policy.budget_tokens
        lifecycle = self.state if lifecycle_block else None
        projection = project(self.context, budget, context_policy, default_counter(), lifecycle)
        body: dict[str, Any] = {
            "model": "test/model",
            "projection_sha256": projection_digest(projection),
            "at_seq": self.size - 1,
            "budget_tokens": budget,
            "policy": context_policy.to_json(),
            "token_counter": DEFAULT_COUNTER_NAME,
        }
        if lifecycle_block:
            body["lifecycle_block"] = LIFECYCLE_BLOCK_VERSION
        return self.append("model.call", body)

    def append(self, kind: str, body: Mapping[str, Any], actor: str = "agent") -> Entry:
        """Sign and append one entry (its body must pass its schema)."""
        entry = sign_entry(
            self.signer,
            thread=self.thread,
            seq=self.size,
            kind=kind,
            actor=actor,
            body=dict(body),
            prev_root=self.frontier.root(),
            time=TIME,
            lifecycle=self.lifecycle,
        )
        return self.add(entry)

    def turn(self, text: str = "hello", role: str = "user") -> Entry:
        return self.append("turn", {"role": role, "text": text})

    def decide(self, request: Request) -> Entry:
        """Decide ``request`` with the lifecycle rules and append the resulting event."""
        event, self.state = step(self.state, request)
        return self.append(event.kind, event_to_body(event))

    def forge(self, kind: str, body: Mapping[str, Any]) -> Entry:
        """Sign an entry with the thread's key WITHOUT the body schema check (an attacker
        holding the key, or a buggy writer); the leaf is canonical and correctly bound."""
        envelope = {
            "v": 1,
            "log": self.origin,
            "thread": self.thread,
            "seq": self.size,
            "time": TIME,
            "kind": kind,
            "actor": "agent",
            "body": dict(body),
            "prev": {
                "size": self.size,
                "root": base64.b64encode(self.frontier.root()).decode("ascii"),
            },
            "key": self.signer.key_id.hex(),
            "lifecycle": self.lifecycle.to_json(),
        }
        signed = canonical_bytes(envelope)
        signature = self.signer.sign(ENTRY_SIGNATURE_PREFIX + signed)
        leaf = canonical_bytes({"entry": envelope, "sig": base64.b64encode(signature).decode()})
        try:
            entry = open_entry(leaf, [self.signer.verifier()])
        except BodySchemaError:  # the body fails its schema: build the Entry by hand
            entry = Entry(
                self.origin,
                self.thread,
                self.size,
                TIME,
                kind,
                "agent",
                dict(body),
                self.size,
                self.frontier.root(),
                self.signer.key_id.hex(),
                signature,
                leaf,
                leaf_hash(leaf),
                self.lifecycle,
            )
        return self.add(entry)

    # --- checkpoints and bundles ----------------------------------------------------------

    def checkpoint(
        self,
        size: int | None = None,
        *,
        witnesses: Sequence[CosignatureSigner] = (),
        signer: Signer | None = None,
    ) -> str:
        """The signed checkpoint of the first ``size`` entries (default all), cosigned by
        ``witnesses``."""
        size = self.size if size is None else size
        signer = signer or self.signer
        checkpoint = Checkpoint(self.origin, size, root_at(self.tree, size))
        note = sign_checkpoint(checkpoint, signer)
        for witness in witnesses:
            note = cosign_checkpoint(note, signer.verifier(), witness, COSIGN_TIME)
        return note

    def full_bundle(
        self,
        *,
        checkpoint_sizes: Iterable[int] = (),
        witnesses: Sequence[CosignatureSigner] = (),
        informational: Mapping[str, Any] | None = None,
    ) -> bytes:
        notes = [self.checkpoint(witnesses=witnesses)]
        notes += [self.checkpoint(size) for size in checkpoint_sizes if size != self.size]
        return bundle_bytes(
            origin=self.origin,
            leaves=self.leaves,
            checkpoints=notes,
            informational=informational or {"log_key": self.signer.vkey()},
        )

    def partial_bundle(
        self,
        seqs: Sequence[int],
        *,
        checkpoint_sizes: Iterable[int] = (),
        consistency_from: Iterable[int] = (),
        witnesses: Sequence[CosignatureSigner] = (),
    ) -> bytes:
        sizes = [size for size in checkpoint_sizes if size != self.size]
        notes = [self.checkpoint(witnesses=witnesses)] + [self.checkpoint(s) for s in sizes]
        proofs = build_proofs(
            self.tree,
            tree_size=self.size,
            seqs=seqs,
            consistency_from=[*sizes, *consistency_from],
        )
        return bundle_bytes(
            origin=self.origin,
            leaves=[self.entries[seq].leaf for seq in seqs],
            checkpoints=notes,
            seqs=seqs,
            proofs=proofs,
            informational={"log_key": self.signer.vkey()},
        )


def story_prefix(*, signer: Signer = LOG, thread: str = THREAD) -> Thread:
    """Entries 0..6 of the story: a turn, a source read, evidence, a compute, a pin, a final
    and a turn -- after which a compaction is due under :data:`STORY_POLICY`."""
    result = Thread(signer=signer, thread=thread)
    result.turn("Reconcile the Q3 figures.")  # 0
    result.decide(ReadRequest((ref("r1"), ref("r2"))))  # 1
    result.decide(
        UpsertRequest(
            (Statement("Impairment is 4.2m", ("r1",)), Statement("Stage 2 grew", ("r2",)))
        )
    )  # 2: ev-1, ev-2
    result.decide(ComputeRequest("Ratio is 12 per mille", ("ev-1",)))  # 3: cc-1
    result.decide(PinRequest("definition", "Stage 2 means SICR", 0))  # 4: pin-1
    result.decide(FinalRequest("Q3 impairment reconciles", ("cc-1", "ev-2")))  # 5: cc-2
    result.turn("noted", role="assistant")  # 6
    return result


def build_thread(
    n: int = 12, *, signer: Signer = LOG, thread: str = THREAD, story: bool = True
) -> Thread:
    """A thread of ``n`` entries (at least 10 with ``story``): the :func:`story_prefix`, the
    compaction then due (7, folding 0..3), a model call with the digest of its projection (8)
    and a turn (9); then turns up to ``n``."""
    if story:
        result = story_prefix(signer=signer, thread=thread)
        result.compact()  # 7
        result.model_call()  # 8
        result.turn("done", role="assistant")  # 9
    else:
        result = Thread(signer=signer, thread=thread)
    while result.size < n:
        result.turn(f"turn {result.size}")
    return result


def policy(*, witnesses: int = 0, quorum: int = 0, signer: Signer = LOG) -> TrustPolicy:
    """The pinned trust of a regulator: the log's key and the first ``witnesses`` witnesses."""
    return TrustPolicy(
        log_key=signer.verifier(),
        witnesses=tuple(w.verifier() for w in WITNESSES[:witnesses]),
        quorum=quorum,
    )


def members(bundle: bytes) -> dict[str, bytes]:
    """The members of a bundle, read with the safe reader."""
    return read_zip(bundle)


def rezip(
    bundle: bytes,
    changes: Mapping[str, bytes | None],
    *,
    fix_manifest: bool = True,
    manifest_changes: Mapping[str, Any] | None = None,
) -> bytes:
    """The bundle with members replaced (``None`` deletes), re-zipped deterministically.

    With ``fix_manifest`` the manifest's sizes and digests (and entry count) are recomputed
    for the new members -- what an attacker who knows the format would do -- so the
    tampering must be caught by the checks behind the manifest. ``manifest_changes`` sets
    top-level manifest fields afterwards.
    """
    contents = dict(read_zip(bundle))
    for name, data in changes.items():
        if data is None:
            contents.pop(name, None)
        else:
            contents[name] = data
    manifest = json.loads(contents[MANIFEST_MEMBER])
    if fix_manifest:
        manifest["members"] = {
            name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            for name, data in sorted(contents.items())
            if name != MANIFEST_MEMBER
        }
        entries = contents.get(ENTRIES_MEMBER, b"")
        manifest["entry_count"] = entries.count(b"\n")
    manifest.update(manifest_changes or {})
    contents[MANIFEST_MEMBER] = canonical_bytes(manifest)
    return deterministic_zip(contents)
