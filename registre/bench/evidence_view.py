"""What a context shows the model of the active evidence (``specs/bench.md`` section 2).

A final conclusion may cite only active evidence, so the agent must be able to read the
active ids off the context it is sent. :func:`evidence_in_view` reads a context's text the
way a model would and tells, for each active evidence entry, whether

* its id is **named**: it appears in the text as a word (``ev-12``, not inside
  ``ev-123``), alone or inside an id range the lifecycle block writes (``ev-9–14`` or
  ``ev-9–ev-14``, an en dash between: every id from the first to the last). Wherever it
  appears -- the lifecycle block, a pin, a summary line, the verbatim ``evidence.upsert``
  entry -- the model can cite it and look its statement up by id (``registre evidence
  show``, the MCP ``search`` tool);
* it is **stated**: named, and its statement appears too, whole or as the lifecycle block
  shows it (:func:`~registre.context.lifecycle_block.statement_text`: whitespace
  collapsed, cut past 200 characters), so the model can cite it knowing what it says.

Pure; O(text + active entries).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from registre.context.lifecycle_block import statement_text

__all__ = ["EvidenceInView", "evidence_in_view", "named_ids"]

_ID: Final = re.compile(r"(?<![\w-])ev-(\d+)(?:–(?:ev-)?(\d+))?(?![\w-])")
"""An evidence id as a word, or a range of them (``ev-9–14``, ``ev-9–ev-14``)."""

_RANGE_LIMIT: Final = 100_000
"""A range longer than this is not read as one (no context lists that many ids)."""


@dataclass(frozen=True, slots=True)
class EvidenceInView:
    """Of ``active`` active evidence entries: ``named`` have their id in the context,
    ``stated`` their id and their statement."""

    active: int
    named: int
    stated: int


def named_ids(text: str) -> set[str]:
    """Every evidence id ``text`` names, ranges expanded (module docstring)."""
    named: set[str] = set()
    for match in _ID.finditer(text):
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        if first <= last < first + _RANGE_LIMIT:
            named.update(f"ev-{number}" for number in range(first, last + 1))
        else:
            named.add(f"ev-{first}")
    return named


def evidence_in_view(active: Iterable[tuple[str, str]], text: str) -> EvidenceInView:
    """How many of the ``active`` ``(id, statement)`` pairs ``text`` names and states."""
    named = named_ids(text)
    count = shown = stated = 0
    for evidence_id, statement in active:
        count += 1
        if evidence_id not in named:
            continue
        shown += 1
        if statement_text(statement) in text or statement in text:
            stated += 1
    return EvidenceInView(count, shown, stated)
