"""What an audit report shows, gathered from one bundle after it was verified.

:func:`gather` runs the same verification as ``registre verify`` (the seven steps of
``specs/verify.md``, with the working-context replay of step 6), and only when it passes
reads the bundle's entries for display. Guarantees:

* a bundle that fails verification yields a :class:`ReportData` with ``verified`` False, the
  steps and the first failure, and **no** entry, chain or context: nothing unverified is shown
  as if it were the record;
* every context shown for a ``model.call`` was rebuilt from the verified entries and its
  digest checked against the recorded one by the verifier's own hook (for a full bundle; a
  claim bundle cannot be replayed, and the report says so);
* conclusions, evidence and references are read off the lifecycle replayed from the entries,
  at the bundle's checkpoint, so a stale conclusion or inactive evidence is marked as such.

Raises the verifier's errors only for input so broken that no report could be started (an
unreadable file): those are the errors ``registre verify`` raises too.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from registre.attest.bundles import DEFAULT_LIMITS, ZipLimits, read_bundle
from registre.attest.entries import Entry, open_entry
from registre.attest.projection_digest import claims_block, rebuild_projection
from registre.attest.verify import (
    BundleEntries,
    ContextReplay,
    ModelCall,
    SemanticHooks,
    TrustPolicy,
    Verdict,
    VerifyReport,
    plural,
    report_of,
    verify_bundle,
)
from registre.context import TokenCounter
from registre.context.projection import Projection
from registre.errors import RegistreError
from registre.lifecycle import KINDS as LIFECYCLE_KINDS
from registre.lifecycle import LifecycleState, apply, parse_body

if TYPE_CHECKING:
    from registre.ledger import Thread

__all__ = [
    "CallContext",
    "Chain",
    "Record",
    "ReportData",
    "ago",
    "as_record",
    "conclusion_chains",
    "entry_timestamp",
    "gather",
]


@dataclass(frozen=True)
class CallContext:
    """What one model call was sent, rebuilt: its messages as ``(role, text)`` and the runs of
    entries it no longer saw verbatim (``summarized``, ``stubbed``, ``folded``)."""

    seq: int
    at: int
    budget: int
    tokens: int
    counter: str
    shape: str
    digest: str
    messages: tuple[tuple[str, str], ...]
    not_verbatim: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Chain:
    """A final conclusion and what it rests on, as of the bundle's checkpoint: each cited id
    with its status, the references it cites and the read entries that registered them."""

    conclusion: dict[str, Any]
    links: tuple[dict[str, Any], ...]


@dataclass
class ReportData:
    """Everything the HTML shows. Only ``verified`` reports carry entries and chains."""

    bundle: str
    verification: VerifyReport
    log_key: str
    witnesses: tuple[str, ...]
    quorum: int
    newest_cosignature: int | None = None
    entries: list[Entry] = field(default_factory=list)
    contexts: dict[int, CallContext] = field(default_factory=dict)
    chains: list[Chain] = field(default_factory=list)
    replayed: bool = False
    generated: float = field(default_factory=time.time)

    @property
    def verified(self) -> bool:
        return self.verification.verified

    def cosignature_age(self, now: float | None = None) -> str | None:
        """The age of the newest verified cosignature in words (``3 days``), or None."""
        if self.newest_cosignature is None:
            return None
        seconds = max(0, int((self.generated if now is None else now) - self.newest_cosignature))
        return ago(seconds)


@dataclass(frozen=True)
class Record:
    """What the slides and the notebook show: a thread's entries in seq order and, when they
    were read from a bundle, its verification (with the trust it was checked against); None
    when they were read from a ledger database, where each entry's signature is checked as it
    is read but no bundle was verified."""

    thread: str
    origin: str
    entries: Sequence[Entry]
    verification: VerifyReport | None = None
    bundle: str | None = None
    log_key: str | None = None
    witnesses: tuple[str, ...] = ()
    quorum: int = 0

    def verdict(self) -> Verdict:
        """The verification's verdict (:meth:`VerifyReport.summary`), or, read from a
        database, a warning that no bundle was verified."""
        if self.verification is not None:
            return self.verification.summary()
        return Verdict(
            False,
            "NO VERDICT (read from a ledger database; no bundle was verified)",
            "warn",
        )


def as_record(source: Thread | ReportData | Record) -> Record:
    """The :class:`Record` of a thread (read from its database), of a gathered bundle, or
    ``source`` itself."""
    if isinstance(source, Record):
        return source
    if isinstance(source, ReportData):
        report = source.verification
        entries = source.entries
        origin = report.origin or ""
        thread = entries[0].thread if entries else origin.rsplit("/", 1)[-1]
        return Record(
            thread,
            origin,
            entries,
            report,
            source.bundle,
            source.log_key,
            source.witnesses,
            source.quorum,
        )
    return Record(source.id, source.origin, list(source.entries()))


class _RecordingReplay(ContextReplay):
    """The verifier's context replay, which also keeps what each model call was sent."""

    def __init__(self, counters: Iterable[TokenCounter]) -> None:
        super().__init__(counters)
        self.contexts: dict[int, CallContext] = {}

    def check_model_call(self, call: ModelCall) -> None:
        super().check_model_call(call)  # raises unless the digest reproduces
        # the fold now stands at at_seq: rebuild the projection the digest was checked on
        lifecycle = None
        if claims_block(call.body):
            lifecycle = call.lifecycle if call.lifecycle is not None else replay_lifecycle(call)
        entries = BundleEntries(call.prefix)
        projection = rebuild_projection(call.body, self._state, self._counters, lifecycle, entries)
        self.contexts[call.seq] = _context_of(call, projection)


def gather(
    source: bytes | str | os.PathLike[str],
    policy: TrustPolicy,
    *,
    counters: Sequence[TokenCounter] = (),
    jobs: int = 1,
    state_file: str | os.PathLike[str] | None = None,
    limits: ZipLimits = DEFAULT_LIMITS,
) -> ReportData:
    """Verify the bundle at ``source`` against ``policy`` and collect what the report shows
    (module docstring for the guarantees). ``state_file`` and ``limits`` are those of
    ``registre verify`` (``--state``, ``--max-ratio``): one verification, one verdict."""
    replay = _RecordingReplay(counters)
    hooks = SemanticHooks(compaction=replay.check_compaction, model_call=replay.check_model_call)
    # the file is read once: what is shown is what was verified, whatever happens to the
    # path meanwhile (issue 29 item 7)
    raw = source if isinstance(source, bytes) else _read_once(source)
    data = ReportData(
        bundle="<bytes>" if isinstance(source, bytes) else os.fspath(source),
        verification=VerifyReport(
            bundle="<bytes>" if isinstance(source, bytes) else os.fspath(source)
        ),
        log_key=policy.log_key.vkey(),
        witnesses=tuple(witness.vkey() for witness in policy.witnesses),
        quorum=policy.quorum,
    )
    now = int(data.generated)
    try:
        data.verification = verify_bundle(
            raw, policy, jobs=jobs, hooks=hooks, now=now, state_file=state_file, limits=limits
        )
    except RegistreError as error:
        failed = report_of(error)
        if failed is None:
            raise
        failed.bundle = data.bundle
        data.verification = failed
        return data
    data.verification.bundle = data.bundle
    bundle = read_bundle(raw, limits)
    data.entries = [open_entry(leaf, [policy.log_key]) for leaf in bundle.leaves]
    data.contexts = replay.contexts
    data.replayed = not bundle.is_partial
    # the head's freshness exactly as the verifier dated it (issue 29 item 9): its newest
    # pinned-witness cosignature, never one of an older checkpoint, none from the future
    age = data.verification.cosignature_age
    data.newest_cosignature = None if age is None else now - age
    data.chains = conclusion_chains(data.entries)
    return data


def _read_once(source: str | os.PathLike[str]) -> bytes:
    """The bundle's bytes, read once (at most the container's own size limit)."""
    limit = DEFAULT_LIMITS.max_total_bytes + DEFAULT_LIMITS.max_directory_bytes
    with open(source, "rb") as handle:
        return handle.read(limit + 1)


def replay_lifecycle(call: ModelCall) -> LifecycleState:
    """The lifecycle state after ``call.prefix`` (every lifecycle entry applied in order)."""
    state = LifecycleState.empty()
    for leaf in call.prefix:
        envelope = json.loads(leaf)["entry"]
        if envelope["kind"] in LIFECYCLE_KINDS:
            state = apply(state, parse_body(envelope["kind"], envelope["body"]))
    return state


def _context_of(call: ModelCall, projection: Projection) -> CallContext:
    body = call.body
    runs = tuple(
        run.to_json()
        for run in projection.manifest.runs
        if run.status in ("summarized", "stubbed", "folded")
    )
    return CallContext(
        seq=call.seq,
        at=projection.at,
        budget=projection.budget,
        tokens=projection.tokens,
        counter=projection.counter,
        shape=str(body.get("shape", "registre")),
        digest=str(body["projection_sha256"]),
        messages=tuple((m.role, m.content) for m in projection.messages),
        not_verbatim=runs,
    )


# --- conclusions and their chains ------------------------------------------------------------


def conclusion_chains(entries: Sequence[Entry]) -> list[Chain]:
    """Replay the lifecycle over ``entries`` and follow every final conclusion down to the
    read entries that registered its sources."""
    state = LifecycleState.empty()
    created: dict[str, int] = {}
    registered: dict[str, int] = {}
    for entry in entries:
        if entry.kind not in LIFECYCLE_KINDS:
            continue
        before_refs = len(state.tables().references)
        before = state.next_ids
        try:
            state = apply(state, parse_body(entry.kind, entry.body))
        except (RegistreError, ValueError):
            continue
        tables = state.tables()
        for ref in list(tables.references)[before_refs:]:
            registered[ref] = entry.seq
        for prefix, first, last in zip(("ev", "cc"), before[:2], state.next_ids[:2], strict=True):
            for number in range(_number(first), _number(last)):
                created[f"{prefix}-{number}"] = entry.seq
    chains = []
    for conclusion in state.iter_conclusions():
        if conclusion.kind != "final":
            continue
        links = []
        for cited in conclusion.cites:
            links.append(_link(state, cited, created, registered, {conclusion.id}))
        chains.append(
            Chain(
                conclusion={
                    "id": conclusion.id,
                    "text": conclusion.text,
                    "status": conclusion.status,
                    "stale": conclusion.stale,
                    "successor": conclusion.successor,
                    "seq": created.get(conclusion.id),
                },
                links=tuple(links),
            )
        )
    return chains


def _link(
    state: LifecycleState,
    cited: str,
    created: dict[str, int],
    registered: dict[str, int],
    seen: set[str],
) -> dict[str, Any]:
    """``cited`` with its status and what it rests on: an evidence entry's references, a
    compute's own citations (followed once each, so a chain is finite)."""
    evidence = state.evidence(cited)
    if evidence is not None:
        refs = []
        for ref in evidence.cites:
            source = state.reference(ref)
            refs.append(
                {
                    "ref": ref,
                    "source": None if source is None else source.source,
                    "location": None if source is None else source.location,
                    "sha256": None if source is None else source.sha256,
                    "read_seq": registered.get(ref),
                }
            )
        return {
            "id": cited,
            "kind": "evidence",
            "text": evidence.text,
            "status": evidence.status,
            "successor": evidence.successor,
            "seq": created.get(cited),
            "refs": refs,
        }
    conclusion = state.conclusion(cited)
    if conclusion is not None:
        below = [
            _link(state, inner, created, registered, seen | {cited})
            for inner in conclusion.cites
            if inner not in seen and inner != cited
        ]
        return {
            "id": cited,
            "kind": conclusion.kind,
            "text": conclusion.text,
            "status": conclusion.status,
            "stale": conclusion.stale,
            "successor": conclusion.successor,
            "seq": created.get(cited),
            "refs": [],
            "links": below,
        }
    return {"id": cited, "kind": "unknown", "text": "", "status": "unknown", "refs": []}


def _number(item_id: str) -> int:
    return int(item_id.rsplit("-", 1)[1])


def ago(seconds: int) -> str:
    """``seconds`` in its largest whole unit: ``3 days``, ``1 hour``, ``12 minutes``,
    ``40 seconds``."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            return plural(seconds // size, unit)
    return plural(max(0, seconds), "second")


def entry_timestamp(text: str) -> int | None:
    """An entry's ``time`` (RFC 3339, as the operator wrote it) in Unix seconds, or None."""
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


def format_timestamp(timestamp: int) -> str:
    """``timestamp`` (seconds since the epoch) as RFC 3339 UTC."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def json_script(value: object) -> str:
    """``value`` as JSON safe inside ``<script type="application/json">``: ``<``, ``>`` and
    ``&`` escaped, so no entry text can close the element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
