"""The digest a ``model.call`` records, made of cached parts.

:func:`registre.attest.projection.shape_digest` encodes the whole projection with the RFC 8785
encoder every time: at a budget of 128k or 1M tokens that is thousands of messages, most of
them the same as at the previous call. :func:`call_digest` gives the same hex SHA-256 over the
same bytes, built from parts:

* each message and each manifest run is encoded on its own (the bytes of
  :func:`registre.attest.canonical.canonical_bytes`, written directly by
  :func:`registre.attest.projection_stream.message_bytes` and ``run_bytes``, which fall back
  to it for any text they do not write themselves) and kept by object in a bounded cache:
  a projection's messages and runs are the objects the context state keeps
  (:mod:`registre.lifecycle.context.projection`), so the next call encodes only what is new;
* the rest (``Projection.json_skeleton``: the projection with ``"messages"`` and the
  manifest's ``"entries"`` empty) is encoded whole, and the two arrays are spliced in where
  their empty forms are. RFC 8785 writes an array as its elements' encodings joined by ``,``
  and sorts object keys, so the result is byte for byte the encoding of ``to_json()``: the
  top-level ``"messages"`` key is the last key of the encoding that reads ``"messages":[]``
  (only ``policy`` and ``token_counter`` follow it, and a string cannot hold an unescaped
  quote), and ``"manifest":{"entries":[]`` is the last such run before it.

Provider shapes are digested by :func:`~registre.attest.projection.shape_digest` as they are.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from registre.attest.canonical import canonical_bytes
from registre.attest.projection import REGISTRE_SHAPE, shape_digest
from registre.attest.projection_stream import message_bytes, run_bytes
from registre.lifecycle.context import ManifestRun, Message, Projection

__all__ = ["CACHE_BYTES", "call_digest", "projection_bytes"]

CACHE_BYTES: Final = 64 * 1024 * 1024
"""The most encoded bytes the part cache holds (the part encoded longest ago dropped first),
and the most the joins it keeps hold together (at most 32 joins, the oldest dropped first)."""

_MESSAGES: Final = b'"messages":[]'
_ENTRIES: Final = b'"manifest":{"entries":[]'


class _Parts:
    """Encodings by object: ``id(part) -> (part, bytes)`` (the part is held, so its id is
    not reused while it is cached); and the last joins, by their first part, so that a
    sequence that continues one (the same objects first, as a projection's messages continue
    those of the call before) is joined from it."""

    def __init__(self, max_bytes: int, max_joins: int = 32) -> None:
        self._parts: dict[int, tuple[object, bytes]] = {}
        self._joins: dict[int, _Join] = {}
        self._bytes = 0
        self._max, self._max_joins = max_bytes, max_joins
        self._lock = threading.Lock()

    def join(self, parts: Sequence[Message | ManifestRun]) -> bytes:
        """The parts' encodings joined by ``,``."""
        if not parts:
            return b""
        last = self._joins.get(id(parts[0]))
        common = 0
        if last is not None and last.parts[0] is parts[0]:
            common = _common_prefix(last.parts, parts)
        if common:
            assert last is not None
            head, ends = last.joined[: last.ends[common - 1]], last.ends[:common]
        else:
            head, ends = b"", []
        encoded = [self._encoded(part) for part in parts[common:]]
        position = len(head)
        for index, chunk in enumerate(encoded):
            position += len(chunk) + (1 if index or common else 0)
            ends.append(position)
        rest = b",".join(encoded)
        joined = head + b"," + rest if head and encoded else head + rest
        with self._lock:
            self._joins.pop(id(parts[0]), None)
            self._joins[id(parts[0])] = _Join(list(parts), ends, joined)
            while len(self._joins) > self._max_joins or (
                len(self._joins) > 1
                and sum(len(join.joined) for join in self._joins.values()) > self._max
            ):
                del self._joins[next(iter(self._joins))]
        return joined

    def _encoded(self, part: Message | ManifestRun) -> bytes:
        found = self._parts.get(id(part))
        if found is not None and found[0] is part:
            return found[1]
        # canonical_bytes(part.to_json()), written directly (the verifier's carried check's
        # encoders): a compaction renews every run of the manifest's prefix
        encoded = run_bytes(part) if isinstance(part, ManifestRun) else message_bytes(part)
        with self._lock:
            old = self._parts.pop(id(part), None)
            if old is not None:
                self._bytes -= len(old[1])
            self._parts[id(part)] = (part, encoded)
            self._bytes += len(encoded)
            while self._bytes > self._max and self._parts:
                oldest = next(iter(self._parts))
                self._bytes -= len(self._parts.pop(oldest)[1])
        return encoded


def _common_prefix(old: Sequence[object], new: Sequence[object]) -> int:
    """How many first items of ``old`` and ``new`` are the same objects. Checks whole
    prefixes at C speed, shorter and shorter from the end (a projection differs from the one
    before at its last messages), then steps forward from the longest that matched."""
    limit = min(len(old), len(new))
    length, back = limit, 0
    while length > 0 and not all(
        map(operator.is_, itertools.islice(old, length), itertools.islice(new, length))
    ):
        back = max(1, back * 2)
        length = max(0, limit - back)
    while length < limit and old[length] is new[length]:
        length += 1
    return length


@dataclass(frozen=True, slots=True, eq=False)
class _Join:
    """A join: its parts, the end of each part's encoding in it, the joined bytes."""

    parts: list[object]
    ends: list[int]
    joined: bytes


_PARTS: Final = _Parts(CACHE_BYTES)


def projection_bytes(projection: Projection) -> bytes:
    """``canonical_bytes(projection.to_json())``, from cached parts (module docstring)."""
    return b"".join(_pieces(projection))


def _pieces(projection: Projection) -> list[bytes]:
    """:func:`projection_bytes` in pieces, to be joined or hashed one after the other."""
    skeleton = canonical_bytes(projection.json_skeleton())
    at = skeleton.rfind(_MESSAGES)
    manifest = skeleton.rfind(_ENTRIES, 0, at)
    if at < 0 or manifest < 0:  # not the shape this module knows: encode it whole
        return [canonical_bytes(projection.to_json())]
    entries_at = manifest + len(_ENTRIES) - 1
    return [
        skeleton[:entries_at],
        _PARTS.join(projection.manifest.runs),
        skeleton[entries_at:at],
        b'"messages":[',
        _PARTS.join(projection.messages),
        skeleton[at + len(_MESSAGES) - 1 :],
    ]


def call_digest(projection: Projection, shape: str = REGISTRE_SHAPE) -> str:
    """:func:`~registre.attest.projection.shape_digest` of ``projection`` in ``shape``, the
    registre shape from cached parts."""
    if shape != REGISTRE_SHAPE:
        return shape_digest(projection, shape)
    digest = hashlib.sha256()
    for piece in _pieces(projection):
        digest.update(piece)
    return digest.hexdigest()
