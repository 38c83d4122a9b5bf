"""The one table of entry kinds (``specs/entries.md`` section 3), on the ground floor.

Every kind a ledger entry may have is a constant here, with where its body schema is defined
and which fold decides on it: the evidence lifecycle (:mod:`registre.lifecycle`, whose events
the working context also reads for pins) or the working context (:mod:`registre.context`,
which takes every other entry into the context). attest, lifecycle, context and the floors
above import the names from here; :data:`ENTRY_KINDS` is the whole table, in the order of the
specification.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "COMPACTION_IMPORTED",
    "CONCLUSION_COMPUTE",
    "CONCLUSION_FINAL",
    "CONCLUSION_REVISE",
    "CONTEXT_COMPACTION",
    "CONTEXT_PIN",
    "CONTEXT_UNPIN",
    "DECISION",
    "ENTRY_KINDS",
    "EVIDENCE_REVISE",
    "EVIDENCE_UPSERT",
    "IMPORTED",
    "KIND_NAMES",
    "LIFECYCLE_KIND_NAMES",
    "MODEL_CALL",
    "SOURCE_READ",
    "TOOL_CALL",
    "TOOL_RESULT",
    "TRANSCRIPT_ENTRY",
    "TURN",
    "EntryKind",
]

TURN: Final = "turn"
TOOL_CALL: Final = "tool.call"
TOOL_RESULT: Final = "tool.result"
DECISION: Final = "decision"
CONTEXT_COMPACTION: Final = "context.compaction"
MODEL_CALL: Final = "model.call"
IMPORTED: Final = "imported"
TRANSCRIPT_ENTRY: Final = "transcript.entry"
COMPACTION_IMPORTED: Final = "compaction.imported"
SOURCE_READ: Final = "source.read"
EVIDENCE_UPSERT: Final = "evidence.upsert"
EVIDENCE_REVISE: Final = "evidence.revise"
CONCLUSION_COMPUTE: Final = "conclusion.compute"
CONCLUSION_FINAL: Final = "conclusion.final"
CONCLUSION_REVISE: Final = "conclusion.revise"
CONTEXT_PIN: Final = "context.pin"
CONTEXT_UNPIN: Final = "context.unpin"


@dataclass(frozen=True)
class EntryKind:
    """One kind: its ``name``, the section of ``specs/entries.md`` that defines its body
    (``schema``), and the fold that decides on it (``folded_by``)."""

    name: str
    schema: str
    folded_by: Literal["lifecycle", "context"]


ENTRY_KINDS: Final[tuple[EntryKind, ...]] = (
    EntryKind(TURN, "4.1", "context"),
    EntryKind(TOOL_CALL, "4.2", "context"),
    EntryKind(TOOL_RESULT, "4.3", "context"),
    EntryKind(DECISION, "4.4", "context"),
    EntryKind(CONTEXT_COMPACTION, "4.5", "context"),
    EntryKind(MODEL_CALL, "4.6", "context"),
    EntryKind(IMPORTED, "4.7", "context"),
    EntryKind(TRANSCRIPT_ENTRY, "4.8", "context"),
    EntryKind(COMPACTION_IMPORTED, "4.9", "context"),
    EntryKind(SOURCE_READ, "5, lifecycle.md", "lifecycle"),
    EntryKind(EVIDENCE_UPSERT, "5, lifecycle.md", "lifecycle"),
    EntryKind(EVIDENCE_REVISE, "5, lifecycle.md", "lifecycle"),
    EntryKind(CONCLUSION_COMPUTE, "5, lifecycle.md", "lifecycle"),
    EntryKind(CONCLUSION_FINAL, "5, lifecycle.md", "lifecycle"),
    EntryKind(CONCLUSION_REVISE, "5, lifecycle.md", "lifecycle"),
    EntryKind(CONTEXT_PIN, "5, lifecycle.md", "lifecycle"),
    EntryKind(CONTEXT_UNPIN, "5, lifecycle.md", "lifecycle"),
)
"""Every entry kind, in the order of ``specs/entries.md`` section 3."""

KIND_NAMES: Final[frozenset[str]] = frozenset(kind.name for kind in ENTRY_KINDS)
"""The names of every entry kind; any other kind is refused."""

LIFECYCLE_KIND_NAMES: Final[tuple[str, ...]] = tuple(
    kind.name for kind in ENTRY_KINDS if kind.folded_by == "lifecycle"
)
"""The kinds whose bodies :mod:`registre.lifecycle` defines and whose events it folds."""
