"""The lifecycle state: references, evidence, conclusions and pins, with their indexes.

A :class:`LifecycleState` is a read-only view over a set of tables. :func:`registre.lifecycle.apply`
does not copy the tables (that would cost O(history) per step): it updates the touched rows
in place and moves the tables into a new state object, *retiring* the old one. Any later use
of a retired state raises :class:`~registre.lifecycle.errors.StateRetiredError`, so a stale handle
can never silently read the future. Use :meth:`LifecycleState.copy` (O(size)) to fork a state on
purpose.

Rows are frozen dataclasses from :mod:`registre.lifecycle.model`; a change of status replaces the
row. Two states are equal when every table and counter is equal (:meth:`snapshot` gives the same
content as plain JSON-able data).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from registre.lifecycle.errors import StateRetiredError
from registre.lifecycle.model import Conclusion, EvidenceEntry, PinnedItem, SourceRef

__all__ = ["LifecycleState", "Tables", "note"]


@dataclass(eq=True)
class Tables:
    """The mutable storage behind a state; only :mod:`lifecycle` modules touch it.

    ``citers`` maps an evidence id or compute id to the *active* conclusions relying on it
    (``Conclusion.relies_on`` plus the computes a final cites), as an insertion-ordered dict
    used as an ordered set. Conclusion ids grow, so insertion order is acceptance order, and
    the conclusions a change leaves stale are read off in O(number of citers).
    A key whose set becomes empty is deleted, so equal histories give equal tables.
    ``live_pins`` is the ordered set of live pin ids, in pin order.

    ``changed`` (not part of the content: equality and :meth:`copy` ignore it) is ``None``
    until something keeps a view derived from these tables (``derived``); from then on every
    commit notes there the ids whose rows or citers it touched (:func:`note`), and the
    keeper reads and clears them to bring its view up to date in O(what changed).
    """

    references: dict[str, SourceRef] = field(default_factory=dict)
    evidence: dict[str, EvidenceEntry] = field(default_factory=dict)
    conclusions: dict[str, Conclusion] = field(default_factory=dict)
    citers: dict[str, dict[str, None]] = field(default_factory=dict)
    pins: dict[str, PinnedItem] = field(default_factory=dict)
    live_pins: dict[str, None] = field(default_factory=dict)
    next_evidence: int = 1
    next_conclusion: int = 1
    next_pin: int = 1
    changed: dict[str, None] | None = field(default=None, compare=False, repr=False)
    derived: dict[str, object] = field(default_factory=dict, compare=False, repr=False)
    """Views kept with the tables by name (e.g. the lifecycle block's,
    ``registre.context.lifecycle_index``); they read ``changed``."""

    def copy(self) -> Tables:
        """An independent copy (rows are immutable and shared; dicts are copied)."""
        return Tables(
            references=dict(self.references),
            evidence=dict(self.evidence),
            conclusions=dict(self.conclusions),
            citers={key: dict(value) for key, value in self.citers.items()},
            pins=dict(self.pins),
            live_pins=dict(self.live_pins),
            next_evidence=self.next_evidence,
            next_conclusion=self.next_conclusion,
            next_pin=self.next_pin,
        )


def note(tables: Tables, *ids: str) -> None:
    """Note that the rows (or the citers) of ``ids`` changed, when a kept view listens
    (``tables.changed`` set); every commit of :mod:`registre.lifecycle` calls it for the
    evidence, conclusions and pins it adds or changes and the evidence whose citers it
    changes. O(len(ids))."""
    changed = tables.changed
    if changed is not None:
        for item in ids:
            changed[item] = None


class LifecycleState:
    """A read-only view of the lifecycle at one point of a thread.

    Guarantees: nothing reachable from a live state changes unless it is passed to
    ``apply``, which retires it; every accessor of a retired state raises
    :class:`StateRetiredError`.
    """

    __slots__ = ("_tables",)

    def __init__(self, tables: Tables | None = None) -> None:
        self._tables: Tables | None = Tables() if tables is None else tables

    @classmethod
    def empty(cls) -> LifecycleState:
        """The state before any event: nothing registered, every counter at 1."""
        return cls()

    # --- internal hand-over -------------------------------------------------------------

    def tables(self) -> Tables:
        """The tables behind this state (read them, do not change them). Raises
        :class:`StateRetiredError` if the state was retired."""
        if self._tables is None:
            raise StateRetiredError(
                "this lifecycle state was passed to apply(), which moved its tables to the "
                "state it returned; use that state (or copy() before applying to keep a fork)"
            )
        return self._tables

    def retire(self) -> Tables:
        """Hand the tables over (for ``apply``) and retire this state."""
        tables = self.tables()
        self._tables = None
        return tables

    @property
    def retired(self) -> bool:
        """Whether ``apply`` has moved this state's tables to a successor."""
        return self._tables is None

    def copy(self) -> LifecycleState:
        """An independent state equal to this one (O(size of the state))."""
        return LifecycleState(self.tables().copy())

    # --- lookups (O(1)) -----------------------------------------------------------------

    def reference(self, ref: str) -> SourceRef | None:
        """The registered reference ``ref``, or ``None``."""
        return self.tables().references.get(ref)

    def evidence(self, evidence_id: str) -> EvidenceEntry | None:
        """Evidence entry ``evidence_id`` in whatever status, or ``None``."""
        return self.tables().evidence.get(evidence_id)

    def conclusion(self, conclusion_id: str) -> Conclusion | None:
        """Conclusion version ``conclusion_id`` in whatever status, or ``None``."""
        return self.tables().conclusions.get(conclusion_id)

    def pin(self, pin_id: str) -> PinnedItem | None:
        """Pin ``pin_id``, live or unpinned, or ``None``."""
        return self.tables().pins.get(pin_id)

    def citers(self, cited_id: str) -> tuple[str, ...]:
        """The active conclusions relying on evidence or compute ``cited_id``, oldest first."""
        return tuple(self.tables().citers.get(cited_id, ()))

    def live_pins(self) -> tuple[PinnedItem, ...]:
        """Live pins in pin order (the order they were pinned)."""
        tables = self.tables()
        return tuple(tables.pins[pin_id] for pin_id in tables.live_pins)

    # --- whole-state views (O(size)) ----------------------------------------------------

    def iter_references(self) -> Iterator[SourceRef]:
        """Registered references in registration order."""
        return iter(tuple(self.tables().references.values()))

    def iter_evidence(self) -> Iterator[EvidenceEntry]:
        """Every evidence entry in id order."""
        return iter(tuple(self.tables().evidence.values()))

    def iter_conclusions(self) -> Iterator[Conclusion]:
        """Every conclusion version in id order."""
        return iter(tuple(self.tables().conclusions.values()))

    def iter_pins(self) -> Iterator[PinnedItem]:
        """Every pin, live or not, in pin order."""
        return iter(tuple(self.tables().pins.values()))

    @property
    def next_ids(self) -> tuple[str, str, str]:
        """The ids the next accepted evidence entry, conclusion and pin will get."""
        tables = self.tables()
        return (
            f"ev-{tables.next_evidence}",
            f"cc-{tables.next_conclusion}",
            f"pin-{tables.next_pin}",
        )

    def snapshot(self) -> dict[str, object]:
        """The whole state as plain JSON-able data (dicts keyed by id, in id order)."""
        tables = self.tables()
        return {
            "references": {
                ref.ref: {"source": ref.source, "location": ref.location, "sha256": ref.sha256}
                for ref in tables.references.values()
            },
            "evidence": {
                entry.id: {
                    "text": entry.text,
                    "cites": list(entry.cites),
                    "status": entry.status,
                    "successor": entry.successor,
                    "predecessor": entry.predecessor,
                }
                for entry in tables.evidence.values()
            },
            "conclusions": {
                item.id: {
                    "kind": item.kind,
                    "text": item.text,
                    "cites": list(item.cites),
                    "relies_on": list(item.relies_on),
                    "status": item.status,
                    "stale": item.stale,
                    "successor": item.successor,
                    "predecessor": item.predecessor,
                }
                for item in tables.conclusions.values()
            },
            "pins": {
                pin.id: {
                    "kind": pin.kind,
                    "text": pin.text,
                    "seq": pin.seq,
                    "status": pin.status,
                    "unpin_reason": pin.unpin_reason,
                }
                for pin in tables.pins.values()
            },
            "next": {
                "evidence": tables.next_evidence,
                "conclusion": tables.next_conclusion,
                "pin": tables.next_pin,
            },
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LifecycleState):
            return NotImplemented
        return self.tables() == other.tables()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if self._tables is None:
            return "LifecycleState(<retired>)"
        tables = self._tables
        return (
            f"LifecycleState(references={len(tables.references)}, "
            f"evidence={len(tables.evidence)}, conclusions={len(tables.conclusions)}, "
            f"pins={len(tables.pins)})"
        )
