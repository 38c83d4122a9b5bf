"""Seeded text for synthetic investigations: sentences, document passages and tool outputs.

Everything here is a pure function of a :class:`random.Random` the caller seeds, so the same
seed gives the same words, byte for byte, on every run and every machine (``random.Random``
is specified to be reproducible for a given seed across platforms).

The domain is a supervisory review of expected credit losses (IFRS 9) on a bank's
commercial real-estate book: the kind of request a supervisor sends and an analyst answers
over weeks with queries, document reads and committee meetings.

**Tool output sizes** follow a log-normal law per tool, as in real agent traffic: most
results are a few hundred bytes, a long tail reaches tens of kilobytes. Draws are clipped to
``[MIN_OUTPUT_BYTES, MAX_OUTPUT_BYTES]``; a longer output is cut by the "tool runner" with a
``[truncated ...]`` line, as agent runtimes do. ``OUTPUT_PROFILES`` holds each tool's median
and spread.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DOCUMENTS",
    "MAX_OUTPUT_BYTES",
    "MIN_OUTPUT_BYTES",
    "OUTPUT_PROFILES",
    "SEGMENTS",
    "OutputProfile",
    "TextGen",
    "lognormal_bytes",
    "pick",
]

SEGMENTS: Final = (
    "Offices",
    "Retail",
    "Logistics",
    "Hotels",
    "Residential development",
    "Mixed use",
    "Student housing",
    "Data centres",
)
METRICS: Final = (
    "Stage 2 exposure",
    "ECL coverage",
    "12-month PD",
    "lifetime PD",
    "LGD",
    "loan-to-value",
    "interest cover ratio",
    "days past due",
    "EAD",
    "overlay",
)
DOCUMENTS: Final = (
    ("credit-risk-policy-2025.pdf", "Credit risk policy 2025"),
    ("ifrs9-methodology-v7.pdf", "IFRS 9 methodology manual, version 7"),
    ("model-validation-2024.pdf", "Model validation report 2024"),
    ("risk-committee-2025-07-14.pdf", "Risk committee minutes, 14 July 2025"),
    ("risk-committee-2025-09-22.pdf", "Risk committee minutes, 22 September 2025"),
    ("valuation-cbre-q3.pdf", "External valuation report, Q3"),
    ("loan-tape-q3.csv", "Loan tape extract, 30 September 2025"),
    ("overlay-memo-2025-06.pdf", "Management overlay memo, June 2025"),
    ("sicr-backtest-2025.xlsx", "SICR back-test workbook"),
    ("audit-letter-2024.pdf", "External auditor's management letter 2024"),
)
_VERBS: Final = ("rose", "fell", "moved", "increased", "decreased", "shifted", "jumped", "eased")
_CAUSES: Final = (
    "the lower valuations booked in August",
    "the new SICR threshold applied from July",
    "a reclassification of forborne loans",
    "the refinancing wall in 2026",
    "a data error in the loan tape",
    "the expiry of the June overlay",
    "migration of three large borrowers",
    "the updated macroeconomic scenarios",
    "interest cover breaches after rate resets",
    "a change in the collateral haircut table",
)
_HEDGES: Final = (
    "This is consistent with",
    "This does not explain",
    "The figures point to",
    "The extract contradicts",
    "The minutes attribute the change to",
    "Part of the gap comes from",
    "The back-test suggests",
    "We cannot yet rule out",
)
_NAMES: Final = ("Amsel", "Berger", "Costa", "Dufour", "Eriksen", "Ferrand", "Gallo", "Haas")
_FILLER: Final = (
    "the portfolio",
    "the segment",
    "each borrower",
    "the reporting date",
    "the committee",
    "the methodology",
    "collateral values",
    "the watch list",
    "forbearance flags",
    "the credit file",
    "the scenario weights",
    "the staging engine",
)

MIN_OUTPUT_BYTES: Final = 40
MAX_OUTPUT_BYTES: Final = 32 * 1024


@dataclass(frozen=True, slots=True)
class OutputProfile:
    """A tool's output size law: log-normal with this median (bytes) and sigma."""

    median_bytes: int
    sigma: float


OUTPUT_PROFILES: Final = {
    "sql": OutputProfile(900, 1.25),
    "python": OutputProfile(320, 1.0),
    "search_documents": OutputProfile(700, 1.3),
    "read_document": OutputProfile(2400, 0.7),
    "list_files": OutputProfile(200, 0.6),
}


def lognormal_bytes(rng: random.Random, profile: OutputProfile) -> int:
    """A size drawn from ``profile``, clipped to ``[MIN_OUTPUT_BYTES, MAX_OUTPUT_BYTES]``;
    values above the maximum are returned as is, so the caller can truncate and say so."""
    value = rng.lognormvariate(math.log(profile.median_bytes), profile.sigma)
    return max(MIN_OUTPUT_BYTES, int(value))


class TextGen:
    """Words of one investigation, drawn from ``rng`` (shared with the caller, so that the
    whole investigation is one deterministic stream)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self._sentences = [self._sentence() for _ in range(512)]

    # --- prose -------------------------------------------------------------------------

    def _sentence(self) -> str:
        rng = self.rng
        pattern = rng.randrange(4)
        segment, metric = rng.choice(SEGMENTS), rng.choice(METRICS)
        if pattern == 0:
            pct = rng.randrange(2, 60)
            return f"{segment} {metric} {rng.choice(_VERBS)} by {pct}% over the quarter."
        if pattern == 1:
            return f"{rng.choice(_HEDGES)} {rng.choice(_CAUSES)} in {segment}."
        if pattern == 2:
            words = " ".join(rng.choice(_FILLER) for _ in range(rng.randrange(2, 5)))
            return f"For {segment}, {metric} depends on {words}."
        amount = rng.randrange(5, 900) / 10
        return f"{segment} carries EUR {amount:.1f}m of {metric} under {rng.choice(_CAUSES)}."

    def sentence(self) -> str:
        """One sentence from the investigation's pool."""
        return self.rng.choice(self._sentences)

    def sentences(self, count: int) -> str:
        """``count`` pool sentences joined by spaces."""
        return " ".join(self.rng.choices(self._sentences, k=count))

    def finding(self) -> str:
        """A fresh statement with numbers (never from the pool, so evidence texts differ)."""
        rng = self.rng
        segment = rng.choice(SEGMENTS)
        before, after = rng.randrange(50, 900) / 10, rng.randrange(50, 900) / 10
        return (
            f"{segment} {rng.choice(METRICS)} went from EUR {before:.1f}m to "
            f"EUR {after:.1f}m between Q2 and Q3; {rng.choice(_HEDGES).lower()} "
            f"{rng.choice(_CAUSES)}."
        )

    def person(self) -> str:
        """A surname for committee members and reviewers."""
        return self.rng.choice(_NAMES)

    def segment(self) -> str:
        return self.rng.choice(SEGMENTS)

    def cause(self) -> str:
        return self.rng.choice(_CAUSES)

    def metric(self) -> str:
        return self.rng.choice(METRICS)

    def document(self) -> tuple[str, str]:
        """``(file name, title)`` of one of the review's documents."""
        return self.rng.choice(DOCUMENTS)

    # --- tool traffic ------------------------------------------------------------------

    def query(self, tool: str) -> dict[str, object]:
        """Arguments of a call to ``tool`` (plain JSON: strings and integers only)."""
        rng = self.rng
        segment = rng.choice(SEGMENTS)
        if tool == "sql":
            column = rng.choice(("stage", "dpd", "ltv", "ecl_eur", "ead_eur", "icr"))
            return {
                "query": f"select loan_id, segment, stage, ead_eur, ecl_eur, dpd, ltv from "
                f"book_q3 where segment = '{segment}' and {column} > {rng.randrange(1, 90)} "
                f"order by {column} desc limit {rng.choice((50, 200, 1000))}",
                "database": "risk_mart",
            }
        if tool == "python":
            return {
                "code": f"df = load('book_q3'); print(stage_migration(df, segment='{segment}', "
                f"from_q='Q2', to_q='Q3', bucket={rng.randrange(1, 9)}))"
            }
        if tool == "search_documents":
            return {"pattern": f"{rng.choice(METRICS)} {segment}", "max_hits": 50}
        if tool == "read_document":
            name, _title = rng.choice(DOCUMENTS)
            page = rng.randrange(1, 140)
            return {"path": name, "pages": f"{page}-{page + rng.randrange(0, 4)}"}
        return {"path": f"/data/review/{rng.choice(('q2', 'q3', 'committee', 'valuations'))}"}

    def output(self, tool: str, size: int) -> str:
        """The text ``tool`` returns, about ``size`` UTF-8 bytes (cut at ``MAX_OUTPUT_BYTES``
        with a ``[truncated ...]`` line)."""
        limit = min(size, MAX_OUTPUT_BYTES)
        if tool == "sql":
            text = self._table(limit)
        elif tool == "python":
            text = self._printout(limit)
        elif tool == "search_documents":
            text = self._hits(limit)
        elif tool == "read_document":
            text = self.passage(limit)
        else:
            text = self._listing(limit)
        if size > MAX_OUTPUT_BYTES:
            text += f"\n[truncated by the tool runner: {size} bytes, {MAX_OUTPUT_BYTES} shown]"
        return text

    def passage(self, size: int) -> str:
        """Document prose of about ``size`` bytes, in numbered paragraphs."""
        rng = self.rng
        parts: list[str] = []
        used = 0
        section = rng.randrange(1, 12)
        paragraph = 1
        while used < size:
            text = f"{section}.{paragraph} {self.sentences(rng.randrange(2, 6))}"
            parts.append(text)
            used += len(text) + 2
            paragraph += 1
        return "\n\n".join(parts)

    def _table(self, size: int) -> str:
        rng = self.rng
        rows = ["loan_id | segment | stage | ead_eur | ecl_eur | dpd | ltv"]
        used = len(rows[0])
        while used < size:
            row = (
                f"L{rng.randrange(10**6, 10**7)} | {rng.choice(SEGMENTS)} | "
                f"{rng.choice((1, 1, 2, 2, 3))} | {rng.randrange(10**5, 10**8)} | "
                f"{rng.randrange(10**3, 10**7)} | {rng.choice((0, 0, 0, 15, 35, 95))} | "
                f"{rng.randrange(30, 140)}%"
            )
            rows.append(row)
            used += len(row) + 1
        rows.append(f"({len(rows) - 1} rows)")
        return "\n".join(rows)

    def _printout(self, size: int) -> str:
        rng = self.rng
        lines: list[str] = []
        used = 0
        while used < size:
            line = (
                f"{rng.choice(SEGMENTS)}: stage2_share={rng.randrange(50, 600) / 1000:.3f} "
                f"delta={rng.randrange(-90, 200) / 1000:+.3f} n={rng.randrange(3, 900)}"
            )
            lines.append(line)
            used += len(line) + 1
        return "\n".join(lines)

    def _hits(self, size: int) -> str:
        rng = self.rng
        lines: list[str] = []
        used = 0
        while used < size:
            name, _title = rng.choice(DOCUMENTS)
            line = f"{name}:p.{rng.randrange(1, 140)}: {self.sentence()}"
            lines.append(line)
            used += len(line) + 1
        return "\n".join(lines)

    def _listing(self, size: int) -> str:
        rng = self.rng
        lines: list[str] = []
        used = 0
        while used < size:
            name, _title = rng.choice(DOCUMENTS)
            line = f"{rng.randrange(10**3, 10**7):>9}  2025-{rng.randrange(1, 13):02d}-01  {name}"
            lines.append(line)
            used += len(line) + 1
        return "\n".join(lines)


def pick(rng: random.Random, weights: Sequence[tuple[str, float]]) -> str:
    """One name of ``weights`` (``(name, weight)`` pairs), drawn from ``rng``."""
    names = [name for name, _ in weights]
    return rng.choices(names, weights=[weight for _, weight in weights])[0]
