"""The manifest of an audit bundle (``specs/bundle.md`` section 3): its schema, read strictly.

``manifest.json`` names the format, the origin, the disclosure (``full`` or ``partial``), the
tree size, the entry count, the checkpoint sizes, and the byte size and SHA-256 of every other
member; the member names are fixed (:data:`ENTRIES_MEMBER`, :func:`checkpoint_member`).
:func:`parse_manifest` reads it under the limits below and returns a
:class:`BundleManifest`; :meth:`BundleManifest.to_json` is what the writer serialises
(canonically). Keys
under ``informational`` are for people: verifiers never trust them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal

from registre.attest.canonical_json import parse_strict
from registre.errors import MalformedError

__all__ = [
    "CHECKPOINT_DIR",
    "ENTRIES_MEMBER",
    "FORMAT",
    "MANIFEST_BASE_VALUES",
    "MANIFEST_MEMBER",
    "MANIFEST_VALUES_PER_MEMBER",
    "MAX_MANIFEST_BYTES",
    "MAX_MANIFEST_STRING",
    "MAX_MANIFEST_VALUES",
    "BundleManifest",
    "Disclosure",
    "ManifestFormatError",
    "checkpoint_member",
    "parse_manifest",
]

FORMAT = "registre-bundle/1"
MANIFEST_MEMBER = "manifest.json"
ENTRIES_MEMBER = "entries.jsonl"
CHECKPOINT_DIR = "checkpoints/"
MAX_MANIFEST_BYTES = 16 << 20
MAX_MANIFEST_VALUES = 1 << 16
"""Values in a manifest at most: 64, and 4 per member of the zip (a member's record is 3, a
checkpoint's size 1), never more than this; so ``informational`` stays small."""
MANIFEST_BASE_VALUES = 64
MANIFEST_VALUES_PER_MEMBER = 4
MAX_MANIFEST_STRING = 1 << 16

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_MANIFEST_FIELDS = (
    "format",
    "origin",
    "disclosure",
    "tree_size",
    "entry_count",
    "checkpoint_sizes",
    "members",
)

Disclosure = Literal["full", "partial"]


class ManifestFormatError(MalformedError):
    """``manifest.json`` that does not follow the manifest schema."""


def checkpoint_member(size: int) -> str:
    """The member name of the checkpoint of ``size``: ``checkpoints/`` + 20 digits + ``.note``."""
    return f"{CHECKPOINT_DIR}{size:020d}.note"


@dataclass(frozen=True)
class BundleManifest:
    """The parsed ``manifest.json``. ``members`` maps each other member to (bytes, sha256 hex);
    ``informational`` holds keys the exporter named, which the verifier never trusts."""

    origin: str
    disclosure: Disclosure
    tree_size: int
    entry_count: int
    checkpoint_sizes: tuple[int, ...]
    members: Mapping[str, tuple[int, str]]
    informational: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "format": FORMAT,
            "origin": self.origin,
            "disclosure": self.disclosure,
            "tree_size": self.tree_size,
            "entry_count": self.entry_count,
            "checkpoint_sizes": list(self.checkpoint_sizes),
            "members": {
                name: {"bytes": size, "sha256": digest}
                for name, (size, digest) in sorted(self.members.items())
            },
        }
        if self.informational:
            document["informational"] = dict(self.informational)
        return document


def parse_manifest(data: bytes, max_values: int = MAX_MANIFEST_VALUES) -> BundleManifest:
    """The manifest in ``data``, strict JSON of at most ``max_values`` values
    (:data:`MAX_MANIFEST_VALUES` at most) following the schema; raises a JSONFormatError
    subclass or :class:`ManifestFormatError`."""
    value = parse_strict(
        data,
        max_depth=8,
        max_bytes=MAX_MANIFEST_BYTES,
        max_elements=min(max_values, MAX_MANIFEST_VALUES),
        max_string_length=MAX_MANIFEST_STRING,
    )
    if not isinstance(value, dict):
        raise ManifestFormatError("the manifest must be a JSON object")
    missing = [name for name in _MANIFEST_FIELDS if name not in value]
    extra = sorted(set(value) - set(_MANIFEST_FIELDS) - {"informational"})
    if missing or extra:
        raise ManifestFormatError(f"manifest fields: missing {missing}, unexpected {extra}")
    if value["format"] != FORMAT:
        raise ManifestFormatError(
            f"manifest format {value['format']!r} is not {FORMAT!r}; this verifier reads "
            f"{FORMAT} only"
        )
    origin = value["origin"]
    if not isinstance(origin, str) or not origin:
        raise ManifestFormatError("manifest origin must be a non-empty string")
    disclosure = value["disclosure"]
    if disclosure not in ("full", "partial"):
        raise ManifestFormatError('manifest disclosure must be "full" or "partial"')
    tree_size = _count(value["tree_size"], "tree_size")
    entry_count = _count(value["entry_count"], "entry_count")
    sizes = value["checkpoint_sizes"]
    if not isinstance(sizes, list) or not sizes:
        raise ManifestFormatError("manifest checkpoint_sizes must be a non-empty list")
    checked = tuple(_count(size, "checkpoint_sizes[]") for size in sizes)
    if any(b <= a for a, b in pairwise(checked)):
        raise ManifestFormatError("manifest checkpoint_sizes must be strictly increasing")
    if checked[-1] != tree_size:
        raise ManifestFormatError(
            f"manifest tree_size {tree_size} is not its largest checkpoint size {checked[-1]}"
        )
    informational = value.get("informational", {})
    if not isinstance(informational, dict):
        raise ManifestFormatError("manifest informational must be an object")
    return BundleManifest(
        origin=origin,
        disclosure=disclosure,
        tree_size=tree_size,
        entry_count=entry_count,
        checkpoint_sizes=checked,
        members=_parse_members(value["members"]),
        informational=informational,
    )


def _parse_members(value: object) -> dict[str, tuple[int, str]]:
    if not isinstance(value, dict):
        raise ManifestFormatError("manifest members must be an object")
    members: dict[str, tuple[int, str]] = {}
    for name, record in value.items():
        if name == MANIFEST_MEMBER:
            raise ManifestFormatError("the manifest cannot list itself")
        if not isinstance(record, dict) or set(record) != {"bytes", "sha256"}:
            raise ManifestFormatError(
                f'manifest member {name!r} must be {{"bytes": N, "sha256": HEX}}'
            )
        digest = record["sha256"]
        if not isinstance(digest, str) or not _SHA256_HEX.fullmatch(digest):
            raise ManifestFormatError(f"manifest member {name!r}: sha256 must be 64 hex digits")
        members[name] = (_count(record["bytes"], f"members[{name!r}].bytes"), digest)
    return members


def _count(value: object, name: str) -> int:
    if type(value) is not int or value < 0:
        raise ManifestFormatError(f"manifest {name} must be a non-negative integer")
    return value
