"""LangGraph's checkpoint records on the ledger, and their fold (``specs/langgraph.md``).

Every write of :class:`registre.adapters.langgraph.RegistreSaver` is one ``transcript.entry``
(``framework: "langgraph"``) whose ``entry_json`` is the RFC 8785 text of a *record*: a
checkpoint, the writes of one task, a copy's header, a thread deletion or a removal. The
saver's state is :class:`CheckpointFold`, a deterministic fold over those records in seq
order: two savers reading the same thread answer the same, and an auditor replays it from a
bundle.

Values are kept as an *encoding*: ``{"json": value}`` when the value is plain JSON holding no
float (so it reads back as the same Python value, and stays readable in a bundle), else
``{"serde": TYPE, "b64": BASE64}``, the serializer's own typed bytes.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from langgraph.checkpoint.serde.base import SerializerProtocol

from registre.adapters.records import holds_float
from registre.attest.canonical_json import canonical_bytes

__all__ = [
    "FRAMEWORK",
    "CheckpointFold",
    "Saved",
    "Write",
    "decode",
    "encode",
    "version_key",
]

FRAMEWORK: Final = "langgraph"
"""The ``framework`` of every record's ``transcript.entry``."""

_MAX_INT: Final = 2**53 - 1

Encoded = dict[str, Any]


def _plain(value: object, depth: int = 0) -> bool:
    """Whether ``value`` is JSON that RFC 8785 spells one way and that reads back as itself:
    dicts with string keys, lists, strings, integers within +-(2^53-1), booleans, None."""
    if depth > 24:
        return False
    if value is None or type(value) is bool:
        return True
    if type(value) is int:
        return -_MAX_INT <= value <= _MAX_INT
    if type(value) is str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if type(value) is list:
        return all(_plain(item, depth + 1) for item in value)
    if type(value) is dict:
        return all(
            type(key) is str and _plain(key, depth) and _plain(item, depth + 1)
            for key, item in value.items()
        )
    return False


def encode(value: object, serde: SerializerProtocol) -> Encoded:
    """``value`` as a record holds it (module docstring)."""
    if _plain(value) and not holds_float(value):
        return {"json": value}
    kind, data = serde.dumps_typed(value)
    return {"serde": kind, "b64": base64.b64encode(data).decode("ascii")}


def decode(encoded: Encoded, serde: SerializerProtocol) -> Any:
    """The value behind ``encoded``: a fresh object the caller may change."""
    if "json" in encoded:
        return copy.deepcopy(encoded["json"])
    return serde.loads_typed((str(encoded["serde"]), base64.b64decode(encoded["b64"])))


def version_key(encoded: Encoded) -> str:
    """A channel version's encoding as a dictionary key (its RFC 8785 text)."""
    return canonical_bytes(encoded).decode("utf-8")


@dataclass(frozen=True)
class Saved:
    """A checkpoint as its record holds it: ``checkpoint`` without its channel values."""

    seq: int
    ns: str
    id: str
    parent: str | None
    checkpoint: Encoded
    metadata: Encoded


@dataclass(frozen=True)
class Write:
    """One pending write: ``idx`` is LangGraph's (negative for the special channels)."""

    task: str
    idx: int
    channel: str
    value: Encoded
    path: str


@dataclass
class CheckpointFold:
    """The live state of one LangGraph thread after the first ``size`` entries of its registre
    thread. ``saved[ns][id]`` the checkpoints not removed, in the order they were first
    written; ``writes[(ns, id)][(task, idx)]``; ``blobs[(ns, channel, version)]`` the channel
    values (None: the channel was emptied at that version). Blobs outlive the removal of the
    checkpoint that wrote them (a kept checkpoint may read them); only ``delete_thread``
    forgets them."""

    size: int = 0
    thread_id: str | None = None
    saved: dict[str, dict[str, Saved]] = field(default_factory=dict)
    writes: dict[tuple[str, str], dict[tuple[str, int], Write]] = field(default_factory=dict)
    blobs: dict[tuple[str, str, str], Encoded | None] = field(default_factory=dict)

    def apply(self, seq: int, record: dict[str, Any]) -> None:
        """Fold one record (``specs/langgraph.md`` section 3) written at ``seq``."""
        op = record["op"]
        self.thread_id = str(record["thread"])
        if op == "checkpoint":
            ns, cid = str(record["ns"]), str(record["id"])
            parent = record["parent"]
            saved = Saved(seq, ns, cid, parent, record["checkpoint"], record["metadata"])
            self.saved.setdefault(ns, {})[cid] = saved
            for blob in record["blobs"]:
                key = (ns, str(blob["channel"]), version_key(blob["version"]))
                self.blobs[key] = blob.get("value")
        elif op == "writes":
            held = self.writes.setdefault((str(record["ns"]), str(record["checkpoint"])), {})
            task, path = str(record["task"]), str(record["path"])
            for item in record["writes"]:
                idx = int(item["idx"])
                if idx >= 0 and (task, idx) in held:
                    continue
                held[task, idx] = Write(task, idx, str(item["channel"]), item["value"], path)
        elif op == "delete_thread":
            self.saved, self.writes, self.blobs = {}, {}, {}
        elif op == "remove":
            for ns, cid in record["checkpoints"]:
                self.saved.get(ns, {}).pop(cid, None)
                self.writes.pop((ns, cid), None)
        # "copy" is the header of a copy: it names the source and changes no state.

    def live(self) -> Iterator[Saved]:
        """Every checkpoint not removed, namespace by namespace, in order of first write."""
        for by_id in self.saved.values():
            yield from by_id.values()

    def latest(self, ns: str) -> Saved | None:
        """The checkpoint of ``ns`` with the greatest id (ids sort by time)."""
        by_id = self.saved.get(ns)
        return by_id[max(by_id)] if by_id else None

    def ordered_writes(self, ns: str, cid: str) -> list[Write]:
        """The writes of checkpoint ``cid`` in LangGraph's replay order
        (``writes_sort_key``: task path, task id, index)."""
        held = self.writes.get((ns, cid), {})
        return sorted(held.values(), key=lambda w: (w.path, w.task, w.idx))
