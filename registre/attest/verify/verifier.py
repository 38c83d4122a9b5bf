"""Verify an audit bundle offline, in the numbered steps of ``specs/verify.md``.

:func:`verify_bundle` trusts only what the caller pins (:class:`TrustPolicy`: the log's
verifier key, witness keys and a quorum) and, optionally, its own state file. It runs

1. **container** -- :func:`registre.attest.bundles.reader.open_bundle`: a safe zip, every member as
   the
   manifest records it; (1.10) a bundle disclosing every seq ``0..n-1`` is checked as full
   whatever its label; (1.11) ``require_full`` refuses the other partial bundles;
2. **checkpoints** -- every checkpoint signed by the pinned log key, for the bundle's origin,
   which is a thread of that log; named by its signed size; the head (largest) cosigned by a
   quorum of pinned witnesses; (2.5) the age of its newest pinned cosignature, within
   ``max_age``;
3. **entries** -- :func:`registre.attest.verify.entries.check_entries`: canonical bytes, signature
   by the pinned key, origin, seq, prev binding; (3.5, full) every lifecycle head recomputed;
4. **tree** -- :mod:`registre.attest.verify.tree`: the head's size and root recomputed (full)
   or every disclosed entry's inclusion proof against it, each entry's ``prev.root`` and each
   earlier checkpoint proved consistent with it (partial); every size comes from a signed
   checkpoint or a signed entry; (4.6, partial) the lifecycle complete
   (:func:`registre.attest.entries.lifecycle_chain.check_lifecycle_chain`);
5. **history** -- :func:`registre.attest.verify.history.check_history` against the state file;
6. **semantics** -- :func:`registre.attest.verify.semantics.check_semantics` (the lifecycle
   replayed whenever the bundle holds all of it);
7. **claims** -- :func:`registre.attest.verify.semantics.check_claims`, and (7.2) the status at
   the checkpoint of everything the conclusions cite
   (:func:`registre.attest.verify.semantics.status_at_head`);

and records the new head in the state file only once all seven passed (5.4: locked,
re-read, re-checked, merged, written atomically). It returns a
:class:`~registre.attest.verify.report.VerifyReport`; at the first failure it raises that check's
own :class:`~registre.errors.RegistreError` subclass with the report attached
(:func:`~registre.attest.verify.report.report_of`). Nothing is trusted from the bundle itself: keys
it names are informational, and its proofs are looked up by sizes taken from signed data.

Memory does not grow with the entries' bytes: the zip stays open while the steps run (and
while 5.4 records the head) and ``entries.jsonl`` is streamed, never held whole; every line
read again is checked against step 1's digest of its group before it is used
(:class:`registre.attest.bundles.leaves.BundleLeaves`). The design and its figures:
``docs/design/2026-12-04-verifier-memory.md``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import islice
from typing import Final

from registre.attest.bundles import (
    DEFAULT_LIMITS,
    Bundle,
    BundleLeaves,
    ReadAhead,
    ZipLimits,
    open_bundle,
)
from registre.attest.entries import ChainProgress, check_lifecycle_chain
from registre.attest.notes import (
    Checkpoint,
    CosignatureVerifier,
    Verifier,
    check_origin,
    open_checkpoint,
)
from registre.attest.tree import CompactRange
from registre.attest.verify.context import context_hooks
from registre.attest.verify.entries import EntriesProgress, check_entries
from registre.attest.verify.entries_checked import SEMANTIC_KINDS, EntriesChecked, RecordsWithBodies
from registre.attest.verify.freshness import (
    CLOCK_SKEW_SECONDS,
    check_freshness,
    utc,
)
from registre.attest.verify.history import TrustedHead, check_history, load_state, update_state
from registre.attest.verify.report import Failure, StepReport, VerifyReport, attach, plural
from registre.attest.verify.semantics import (
    SemanticHooks,
    SemanticsChecked,
    SemanticsProgress,
    check_claims,
    check_semantics,
    status_at_head,
)
from registre.attest.verify.tree import (
    TreeProgress,
    check_tree_full,
    check_tree_partial,
)
from registre.errors import RefusedError, RegistreError, VerificationError

__all__ = [
    "CheckpointNameError",
    "PartialBundleRefusedError",
    "TrustPolicy",
    "verify_bundle",
]

INACTIVE_LISTED: Final = 12
"""The most stale or inactive ids step 7.2's line of the report names (the JSON lists all)."""


_REREAD = SEMANTIC_KINDS
"""Kinds whose bodies step 3 does not keep; step 6 reads them again from the zip, one at a
time, in seq order (a compaction's body lists what it folds, stubs and elides: ~1 MB of JSON
when it folds 50,000 entries; a model call's or a lifecycle entry's is a few hundred bytes,
but one would be kept per model call and per lifecycle entry -- over a million-entry
thread, most of what step 3 kept)."""


class CheckpointNameError(VerificationError):
    """A checkpoint stored under a size other than the size it signs."""


class PartialBundleRefusedError(RefusedError):
    """A partial bundle given to a verifier that requires full ones (``--require-full``)."""


@dataclass(frozen=True)
class TrustPolicy:
    """What the verifier trusts: the log's key, pinned witnesses and how many must cosign."""

    log_key: Verifier
    witnesses: tuple[CosignatureVerifier, ...] = ()
    quorum: int = 0
    require_full: bool = False
    """Refuse partial bundles (:class:`PartialBundleRefusedError`, exit 2)."""
    max_age: int | None = None
    """Seconds: refuse a head whose newest pinned-witness cosignature is older."""


def verify_bundle(
    source: bytes | str | os.PathLike[str],
    policy: TrustPolicy,
    *,
    state_file: str | os.PathLike[str] | None = None,
    jobs: int = 1,
    hooks: SemanticHooks | None = None,
    limits: ZipLimits = DEFAULT_LIMITS,
    now: int | None = None,
) -> VerifyReport:
    """Run steps 1-7 on the bundle ``source`` (zip bytes or a path); see the module docstring.

    Returns the report of a verified bundle. Raises the failing check's RegistreError (its
    ``exit_code`` is 2 for unreadable input, 1 for a failed check) with the report attached.
    ``jobs`` processes share the signature checks of step 3. ``hooks`` replay the working
    context in step 6 (default: :func:`registre.attest.verify.context.context_hooks`; pass
    ``SemanticHooks()`` to skip, and the report will say those checks were not made).
    ``now`` (Unix seconds; default: the clock) is the time cosignature ages are taken at.
    """
    name = "<bytes>" if isinstance(source, bytes | bytearray | memoryview) else os.fspath(source)
    chosen = context_hooks() if hooks is None else hooks
    run = _Verification(source, policy, state_file, jobs, chosen, limits)
    run.now = int(time.time()) if now is None else now
    return run.run(str(name))


class _Verification:
    """One run of the seven steps; each ``_stepN`` fills its :class:`StepReport` or raises."""

    def __init__(
        self,
        source: bytes | str | os.PathLike[str],
        policy: TrustPolicy,
        state_file: str | os.PathLike[str] | None,
        jobs: int,
        hooks: SemanticHooks,
        limits: ZipLimits,
    ) -> None:
        self.source = source
        self.policy = policy
        self.state_file = state_file
        self.jobs = jobs
        self.hooks = hooks
        self.limits = limits
        self.seq: int | None = None
        self.now = 0
        # filled in as the steps run
        self.full = True
        """Checked as a full bundle: no proofs.json, or every seq 0..n-1 disclosed."""
        self.lifecycle_complete = False
        self.bundle: Bundle
        self.head: Checkpoint
        self.checkpoints: dict[int, Checkpoint] = {}
        self.entries: EntriesChecked
        self.semantics: SemanticsChecked
        self.trusted: TrustedHead | None = None
        """The head the state file trusted for this (key, origin) when step 5 read it."""
        self.open = ExitStack()

    def run(self, name: str) -> VerifyReport:
        self.report = VerifyReport(bundle=name)
        steps: Sequence[Callable[[StepReport], None]] = (
            self._step1_container,
            self._step2_checkpoints,
            self._step3_entries,
            self._step4_tree,
            self._step5_history,
            self._step6_semantics,
            self._step7_claims,
        )
        with self.open:  # the bundle's zip, opened by step 1, read by the later steps
            for number, step in enumerate(steps, start=1):
                result = self.report.step(number)
                self.seq = None
                try:
                    step(result)
                except RegistreError as error:
                    result.status = "failed"
                    self.report.failure = Failure(
                        number, self.seq, type(error).__name__, str(error), error.exit_code
                    )
                    attach(error, self.report)
                    raise
                if result.status == "not run":
                    result.status = "passed"
            if self.state_file is not None:  # 5.4 may read the entries again (_root_at)
                self._record_state(self.state_file)
        return self.report

    def _record_state(self, state_file: str | os.PathLike[str]) -> None:
        """After step 7: record the head (5.4), re-checked against the state as it is now."""
        result = self.report.step(5)
        try:
            update_state(
                state_file,
                self.policy.log_key.vkey(),
                self.bundle.origin,
                self._new_head(),
                self._recheck,
            )
        except RegistreError as error:
            result.status = "failed"
            self.report.failure = Failure(
                5, None, type(error).__name__, str(error), error.exit_code
            )
            attach(error, self.report)
            raise

    def _new_head(self) -> TrustedHead:
        return TrustedHead(self.head.size, self.head.root)

    def _recheck(self, current: TrustedHead | None) -> None:
        """5.4: the head now in the state file, if another verification moved it since 5.1."""
        if current != self.trusted:
            self.report.step(5).checked.append(
                "re-checked against the head another verification recorded meanwhile: "
                + self._history(current)
            )

    def _history(self, trusted: TrustedHead | None) -> str:
        return check_history(
            trusted,
            self._new_head(),
            origin=self.bundle.origin,
            root_at=self._root_at if self.full else None,
            proofs={} if self.bundle.proofs is None else self.bundle.proofs.consistency,
        )

    # 1. container ----------------------------------------------------------------------

    def _step1_container(self, result: StepReport) -> None:
        bundle = self.bundle = self.open.enter_context(open_bundle(self.source, self.limits))
        manifest = bundle.manifest
        report = self.report
        report.origin, report.disclosure = manifest.origin, manifest.disclosure
        report.tree_size, report.entries = manifest.tree_size, manifest.entry_count
        report.checkpoints = len(manifest.checkpoint_sizes)
        result.checked.append(
            f"{len(manifest.members) + 1} members: safe names, no links, sizes within limits "
            "and as declared, CRC-32 intact"
        )
        result.checked.append("every member's size and SHA-256 equal the manifest's")
        # 1.10 a bundle disclosing every seq 0..n-1 is checked as full, whatever its label
        proofs = bundle.proofs
        self.full = proofs is None or [p.seq for p in proofs.inclusion] == list(
            range(manifest.tree_size)
        )
        if proofs is not None and self.full:
            report.disclosure = "full"
            result.checked.append(
                f'labelled "partial" but discloses every seq 0..{manifest.tree_size - 1}: '
                "checked as a full bundle"
            )
        # 1.11 a verifier that requires full bundles refuses the others
        if self.policy.require_full and not self.full:
            raise PartialBundleRefusedError(
                f"the bundle discloses {manifest.entry_count} of the {manifest.tree_size} "
                "entries of its head, and full bundles are required (--require-full)"
            ).with_hint("ask the exporter for a full bundle (`registre export THREAD`)")
        named = manifest.informational.get("log_key")
        if named is not None and named != self.policy.log_key.vkey():
            report.notes.append(
                f"the bundle names log key {str(named)[:120]!r}, not the pinned key; keys "
                "inside a bundle are informational and were ignored"
            )

    # 2. checkpoints --------------------------------------------------------------------

    def _step2_checkpoints(self, result: StepReport) -> None:
        bundle, policy = self.bundle, self.policy
        head_size = bundle.manifest.tree_size
        cosigners: list[str] = []
        times: list[int] = []
        for size, note in bundle.checkpoints.items():
            is_head = size == head_size
            # 2.1 the pinned log key signed it, for this origin (witnesses: 2.4)
            opened = open_checkpoint(
                note,
                policy.log_key,
                origin=bundle.origin,
                witnesses=policy.witnesses,
                quorum=policy.quorum if is_head else 0,
            )
            # 2.2 the origin is a thread of the pinned log
            check_origin(opened.checkpoint, policy.log_key.name)
            # 2.3 stored under the size it signs
            if opened.checkpoint.size != size:
                raise CheckpointNameError(
                    f"the checkpoint stored as size {size} signs size {opened.checkpoint.size}"
                )
            self.checkpoints[size] = opened.checkpoint
            if is_head:
                cosigners = [f"{name} (at {utc(when)})" for name, when in opened.cosignatures]
                times = [when for _name, when in opened.cosignatures]
        self.head = self.checkpoints[head_size]
        result.checked.append(
            f"{plural(len(self.checkpoints), 'checkpoint')} signed by {policy.log_key.name}+"
            f"{policy.log_key.key_id.hex()} for {bundle.origin}; head size {head_size}"
        )
        if policy.quorum:
            result.checked.append(
                f"head cosigned by {plural(len(cosigners), 'pinned witness')}, quorum "
                f"{policy.quorum}: {', '.join(cosigners)}"
            )
        else:
            result.not_checked.append("witness cosignatures: no quorum was asked for")
        # 2.5 how recent the head is, by its newest pinned-witness cosignature
        self._freshness(result, times)

    def _freshness(self, result: StepReport, times: Sequence[int]) -> None:
        """2.5: the age of the head's newest pinned-witness cosignature, within ``max_age``.
        The age goes into the report before a refusal, so a failed report states it too."""
        dated = [t for t in times if t <= self.now + CLOCK_SKEW_SECONDS]  # none from the future
        if dated:
            self.report.cosignature_age = self.now - max(dated)
        _age, sentence = check_freshness(times, now=self.now, max_age=self.policy.max_age)
        if sentence is not None:
            result.checked.append(sentence)

    # 3. entries ------------------------------------------------------------------------

    def _step3_entries(self, result: StepReport) -> None:
        bundle = self.bundle
        leaves = bundle.leaves
        full = self.full
        if full or bundle.proofs is None:
            seqs: Sequence[int] = range(len(leaves))
        else:
            seqs = [proof.seq for proof in bundle.proofs.inclusion]
        progress = EntriesProgress()
        try:
            self.entries = check_entries(
                leaves,
                seqs=seqs,
                full=full,
                origin=bundle.origin,
                keys=[self.policy.log_key],
                root_sizes=self.checkpoints,
                jobs=self.jobs,
                progress=progress,
                reread=_REREAD,
            )
        finally:
            if progress.line is not None:
                self.seq = seqs[progress.line]
        self.report.kinds = dict(self.entries.kinds)
        result.checked.append(
            f"{len(leaves)} entries: canonical bytes, signed by the pinned key, origin "
            f"{bundle.origin}"
        )
        if full:
            result.checked.append(
                f"seqs 0..{len(leaves) - 1} without gap or duplicate; every prev.root recomputed"
            )
            # 3.5 every signed lifecycle head recomputed
            chain = ChainProgress()
            try:
                sentence, _head = check_lifecycle_chain(
                    self.entries.marks, full=True, tree_size=len(leaves), progress=chain
                )
            finally:
                self.seq = chain.seq
            self.entries.marks = []  # read by 3.5 alone in a full bundle (4.6 is partial)
            self.lifecycle_complete = True
            result.checked.append(sentence)
        else:
            result.checked.append("seqs as disclosed in proofs.json (prev roots: step 4)")

    # 4. tree ---------------------------------------------------------------------------

    def _step4_tree(self, result: StepReport) -> None:
        if self.full:
            self._tree_full(result)
        else:
            self._tree_partial(result)

    def _tree_full(self, result: StepReport) -> None:
        count, roots = len(self.bundle.leaves), self.entries.roots
        check_tree_full(result, self.head, self.checkpoints, count, roots)  # 4.0-4.2

    def _tree_partial(self, result: StepReport) -> None:
        bundle, entries = self.bundle, self.entries
        assert bundle.proofs is not None
        progress = TreeProgress()
        try:
            complete = check_tree_partial(  # 4.3-4.6
                result,
                self.head,
                self.checkpoints,
                bundle.proofs,
                bundle.leaf_hashes,
                entries.prev_roots,
                entries.marks,
                progress,
            )
        finally:
            self.seq = progress.seq
        self.lifecycle_complete = complete

    # 5. history ------------------------------------------------------------------------

    def _step5_history(self, result: StepReport) -> None:
        if self.state_file is None:
            result.status = "skipped"
            result.not_checked.append("rollback and fork protection: no state file given (--state)")
            return
        state = load_state(self.state_file)
        self.trusted = state.trusted(self.policy.log_key.vkey(), self.bundle.origin)
        result.checked.append(self._history(self.trusted))

    def _root_at(self, size: int) -> bytes:
        """Root of the first ``size`` leaves of a full bundle (``size`` <= its tree size),
        their hashes recomputed from the leaves read again (checked against step 1)."""
        tree = CompactRange()
        for digest in islice(self.bundle.leaf_hashes, size):
            tree.append(digest)
        return tree.root()

    # 6. semantics ----------------------------------------------------------------------

    def _step6_semantics(self, result: StepReport) -> None:
        progress = SemanticsProgress()
        try:
            leaves: Sequence[bytes] = self.bundle.leaves
            bodies = leaves
            if isinstance(leaves, BundleLeaves):  # one pass for the bodies and the prefixes
                shared = ReadAhead(leaves)
                bodies, leaves = shared.ahead, shared.behind
            self.semantics = check_semantics(
                RecordsWithBodies(self.entries.records, self.entries.reread, bodies),
                full=self.full,
                leaves=leaves,  # the hooks' prefixes are views read from the zip
                hooks=self.hooks,
                progress=progress,
                lifecycle_complete=self.lifecycle_complete,
                keep_events=False,  # step 7 reads their index, semantics.claims
            )
        finally:
            self.seq = progress.seq
        result.checked.extend(self.semantics.checked)
        result.not_checked.extend(self.semantics.not_checked)

    # 7. claims -------------------------------------------------------------------------

    def _step7_claims(self, result: StepReport) -> None:
        progress = SemanticsProgress()
        try:
            claims = check_claims(self.semantics.claims, progress)
        finally:
            self.seq = progress.seq
        result.checked.append(
            f"{plural(claims.conclusions, 'conclusion')} ({claims.finals} final) resolve to "
            f"{plural(claims.passages, 'source passage')} registered by "
            f"{plural(claims.source_reads, 'source.read entry')} in the "
            "bundle"
        )
        # 7.2 the status at the checkpoint of every conclusion and of everything it cites
        state = self.semantics.state
        if state is None:
            if claims.conclusions:
                result.not_checked.append(
                    "the status of the cited ids at the checkpoint: the lifecycle was not replayed"
                )
            return
        inactive = status_at_head(self.semantics.claims, state)
        self.report.inactive = [item.describe() for item in inactive]
        size = self.head.size
        if not inactive:
            result.checked.append(f"every cited id is active and fresh at size {size}")
            return
        listed = ", ".join(self.report.inactive[:INACTIVE_LISTED])
        if len(inactive) > INACTIVE_LISTED:
            more = len(inactive) - INACTIVE_LISTED
            listed += f', … and {more} more (all of them in --json, as "inactive")'
        result.checked.append(f"stale or inactive at size {size}: {listed}")
        stale_finals = [item.describe() for item in inactive if item.final]
        if stale_finals:
            result.status = "stale"
            self.report.stale_finals = stale_finals
