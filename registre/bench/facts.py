"""Facts a synthetic investigation plants, and the later steps that need them.

An agent working over weeks keeps coming back to a few precise things it saw long ago: the
figure a query returned for a segment, the one segment that did not reconcile, an instruction
the supervisor gave, a definition the committee validated. The investigation
(:mod:`registre.bench.investigation`) plants such facts into entries it writes anyway (a line
inside a tool output, the first sentence of an assistant finding, a supervisor's turn, a
definition read in a document), and before each model call it says which facts the step
after the call depends on. The harness (:mod:`registre.bench.measure`) then checks, for every
method of building the context, whether that context carried each needed fact.

A :class:`Fact` is stated word for word by one ledger entry (``seq``): ``text`` is those
words, ``keys`` the parts a summary line must quote for the fact to count as kept by the
summary (the segment and its figure, the definition's code and its criterion).
:class:`FactBook` is the investigation's register: facts by subject, the latest figure and
exception of each segment, the instructions in force.

The planting draws from its own random stream (:func:`facts_rng`), never from the
storyline's, so planting changes the words of a few entries but not the investigation's
shape: the same entries, kinds and sizes (within the planted words) at every budget.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "FACT_KINDS",
    "Fact",
    "FactBook",
    "choose",
    "definition_keys",
    "exception_fact",
    "facts_rng",
    "figure_fact",
    "instruction_fact",
    "unique",
]

FACT_KINDS: Final = ("figure", "exception", "instruction", "definition")
"""``figure``: a segment's Stage 2 exposure in a tool output; ``exception``: the segment that
does not reconcile, the first sentence of an assistant finding; ``instruction``: a
supervisor's standing instruction, the first sentence of a user turn; ``definition``: a
validated definition read in a document (and pinned by the storyline)."""

_DEFINITION_KEYS: Final = ("doubled", "forborne", "post-model", "backstop")


@dataclass(frozen=True)
class Fact:
    """A fact stated word for word by ledger entry ``seq`` (module docstring). ``subject``
    is the segment it is about (the code, for a definition)."""

    id: str
    kind: str
    seq: int
    text: str
    keys: tuple[str, ...]
    subject: str

    def quoted_by(self, text: str) -> bool:
        """Whether ``text`` (a summary line's) holds every key of the fact."""
        return all(key in text for key in self.keys)


def facts_rng(seed: int) -> random.Random:
    """The planting's own random stream for an investigation seeded ``seed``."""
    return random.Random(f"registre.bench.facts/{seed}")


def figure_fact(rng: random.Random, segment: str) -> tuple[str, tuple[str, ...]]:
    """The words of a figure for ``segment`` (a line of a tool output) and its keys. The
    amounts (EUR 100m and more, one decimal) never occur in the storyline's other words."""
    now = rng.randrange(1000, 9000) / 10
    before = rng.randrange(1000, 9000) / 10
    amount = f"EUR {now:.1f}m"
    text = (
        f"{segment}: Stage 2 exposure {amount} at 30 September 2025 "
        f"(EUR {before:.1f}m at 30 June 2025)."
    )
    return text, (segment, amount)


def exception_fact(rng: random.Random, segment: str) -> tuple[str, tuple[str, ...]]:
    """An assistant finding whose first sentence is the exception for ``segment``, and its
    keys (the amount has two decimals: no other words of the storyline have)."""
    amount = f"EUR {rng.randrange(50, 2000) / 100:.2f}m"
    text = (
        f"Exception: {segment} does not reconcile, the ECL differs from the loan tape by "
        f"{amount}. Every other segment reconciles within the materiality threshold."
    )
    return text, (segment, amount)


def instruction_fact(rng: random.Random, number: int, segment: str) -> tuple[str, tuple[str, ...]]:
    """The first sentence of a supervisor's turn: standing instruction ``number`` about
    ``segment``, and its keys."""
    label = f"Instruction {number}"
    choice = rng.randrange(4)
    if choice == 0:
        text, key = f"report {segment} separately in every table", "separately"
    elif choice == 1:
        floor = f"EUR {rng.randrange(2, 40) / 2:.1f}m"
        text, key = f"leave {segment} loans under {floor} out of the totals", floor
    elif choice == 2:
        text, key = f"take {segment} collateral values from the external valuations", "external"
    else:
        ltv = f"{rng.randrange(13, 19) * 5}%"
        text, key = f"flag every {segment} loan with a loan-to-value above {ltv}", ltv
    return f"{label}: from now on, {text}.", (label, segment, key)


def definition_keys(code: str, text: str) -> tuple[str, ...]:
    """The keys of a definition: its code and the word that carries its criterion."""
    return (code, next((key for key in _DEFINITION_KEYS if key in text), code))


@dataclass
class FactBook:
    """The facts an investigation planted, and what is current (module docstring)."""

    facts: list[Fact] = field(default_factory=list)
    figures: dict[str, Fact] = field(default_factory=dict)
    exceptions: dict[str, Fact] = field(default_factory=dict)
    instructions: list[Fact] = field(default_factory=list)
    definitions: list[Fact] = field(default_factory=list)

    def add(self, kind: str, seq: int, text: str, keys: tuple[str, ...], subject: str) -> Fact:
        """Register the fact entry ``seq`` states; a segment's new figure or exception
        replaces its previous one as the current one."""
        fact = Fact(f"fact-{len(self.facts) + 1}", kind, seq, text, keys, subject)
        self.facts.append(fact)
        if kind == "figure":
            self.figures[subject] = fact
        elif kind == "exception":
            self.exceptions[subject] = fact
        elif kind == "instruction":
            self.instructions.append(fact)
        else:
            self.definitions.append(fact)
        return fact

    def about(self, segment: str) -> list[Fact]:
        """The current figure and exception of ``segment`` (those that exist)."""
        return [f for f in (self.figures.get(segment), self.exceptions.get(segment)) if f]

    def current(self) -> list[Fact]:
        """Every fact still current: the latest figure and exception of each segment, the
        instructions and definitions."""
        return sorted(
            [
                *self.figures.values(),
                *self.exceptions.values(),
                *self.instructions,
                *self.definitions,
            ],
            key=lambda fact: fact.seq,
        )


def unique(facts: Iterable[Fact | None]) -> tuple[Fact, ...]:
    """``facts`` without Nones and repeats, in first-seen order."""
    seen: dict[str, Fact] = {}
    for fact in facts:
        if fact is not None and fact.id not in seen:
            seen[fact.id] = fact
    return tuple(seen.values())


def choose(rng: random.Random, facts: Sequence[Fact], count: int) -> list[Fact]:
    """Up to ``count`` distinct facts of ``facts``, drawn from ``rng``."""
    return rng.sample(list(facts), min(count, len(facts)))
