"""Means over scored calls, grouped, for the real-data suites' rows."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["Tallies", "Tally"]


@dataclass
class Tally:
    """Running sums of named scores (each a share 0..1 or None when not applicable), with
    call and refusal counts."""

    calls: int = 0
    refused: int = 0
    sums: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, scores: Mapping[str, float | None], refused: bool = False) -> None:
        """One scored call."""
        self.calls += 1
        self.refused += int(refused)
        for name, value in scores.items():
            if value is not None:
                self.sums[name] += value
                self.counts[name] += 1

    def mean(self, name: str) -> float | None:
        """The mean of ``name`` over the calls that had it; None if none did."""
        count = self.counts.get(name, 0)
        return self.sums[name] / count if count else None

    def to_json(self, names: Iterable[str]) -> dict[str, object]:
        """``calls``, ``refused`` and the mean of each of ``names`` (rounded to 1e-4)."""
        data: dict[str, object] = {"calls": self.calls, "refused": self.refused}
        for name in names:
            value = self.mean(name)
            data[name] = None if value is None else round(value, 4)
            data[f"{name}_n"] = self.counts.get(name, 0)
        return data


class Tallies:
    """:class:`Tally` per key (a tuple such as ``(budget, method, group)``), kept in the
    order keys first appear."""

    def __init__(self) -> None:
        self._tallies: dict[tuple[object, ...], Tally] = {}

    def __getitem__(self, key: tuple[object, ...]) -> Tally:
        tally = self._tallies.get(key)
        if tally is None:
            tally = self._tallies[key] = Tally()
        return tally

    def items(self) -> list[tuple[tuple[object, ...], Tally]]:
        """Every ``(key, tally)``, in first-seen order."""
        return list(self._tallies.items())
