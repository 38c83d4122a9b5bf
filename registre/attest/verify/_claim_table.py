"""Step 7's admissions by id, packed by the number in ``ev-N``.

:class:`~registre.attest.verify.semantics.ClaimIndex` records, for every evidence id a bundle
admits, the seq that admitted it and what it cites (:class:`Admitted`). The ids are ``ev-N``
with N counted up from 1, so :class:`AdmittedTable` keeps them by N: the seq in an array and
the citations in a list (why, with the figures: ``docs/design/2026-12-04-verifier-memory.md``).
An id that is not ``<prefix>-N`` with a canonical N, or whose N lies far beyond the ids held
(a bundle could name ``ev-9007199254740991``), goes to a dict, so memory stays O(ids)
whatever the bundle says.

It is a ``Mapping[str, Admitted]`` that answers every lookup exactly as the dict it replaces
(a property test holds the two side by side); only its iteration order differs (numbered ids
by number, then the others in insertion order), and nothing reads it in order.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["Admitted", "AdmittedTable"]

_ABSENT: Final = -1
"""The seq stored for a number no id holds."""

_SLACK: Final = 1024
"""A number is kept in the arrays while it is at most twice the ids held plus this."""


@dataclass(frozen=True, slots=True)
class Admitted:
    """The admission of an id: the seq of the entry that admitted it, and what it cites."""

    seq: int
    cites: tuple[str, ...]


class AdmittedTable(Mapping[str, Admitted]):
    """``id -> Admitted`` for the ids ``<prefix>-N`` (module docstring); set with
    ``table[id] = admitted`` (a later value replaces an earlier one, as in a dict)."""

    __slots__ = ("_cites", "_count", "_others", "_prefix", "_seqs")

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix + "-"
        self._seqs = array("q")  # by N: the admitting seq, or _ABSENT
        self._cites: list[tuple[str, ...] | None] = []
        self._others: dict[str, Admitted] = {}
        self._count = 0  # the numbers held in the arrays

    def _number(self, key: object) -> int | None:
        """N for ``<prefix>-N`` (N decimal, no sign, no leading zero, below 2^62), else None."""
        if not isinstance(key, str) or not key.startswith(self._prefix):
            return None
        digits = key[len(self._prefix) :]
        if not (digits.isascii() and digits.isdigit()) or digits[0] == "0" or len(digits) > 18:
            return None
        return int(digits)

    def __setitem__(self, key: str, value: Admitted) -> None:
        number = self._number(key)
        if number is not None and key not in self._others and value.seq >= 0:
            seqs = self._seqs
            if number >= len(seqs) and number <= 2 * self._count + _SLACK:
                more = number + 1 - len(seqs)
                seqs.extend(array("q", [_ABSENT]) * more)
                self._cites.extend([None] * more)
            if number < len(seqs):
                if seqs[number] == _ABSENT:
                    self._count += 1
                seqs[number] = value.seq
                self._cites[number] = value.cites
                return
        self._others[key] = value

    def __getitem__(self, key: str) -> Admitted:
        number = self._number(key)
        if number is not None and number < len(self._seqs):
            seq = self._seqs[number]
            if seq != _ABSENT:
                cites = self._cites[number]
                assert cites is not None
                return Admitted(seq, cites)
        return self._others[key]

    def __contains__(self, key: object) -> bool:
        number = self._number(key)
        if number is not None and number < len(self._seqs) and self._seqs[number] != _ABSENT:
            return True
        return key in self._others

    def __iter__(self) -> Iterator[str]:
        prefix = self._prefix
        for number, seq in enumerate(self._seqs):
            if seq != _ABSENT:
                yield f"{prefix}{number}"
        yield from self._others

    def __len__(self) -> int:
        return self._count + len(self._others)

    def __repr__(self) -> str:
        return f"AdmittedTable({dict(self.items())!r})"
