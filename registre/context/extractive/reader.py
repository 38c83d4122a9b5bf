"""Reading the folded items into candidate lines, for the extractive summarizer
(:mod:`registre.context.extractive`, whose docstring lists which item offers
which line).

:class:`CandidateReader` goes through the items once, in order: turns, decisions, lifecycle
events and lines of summaries folded again give single lines; tool calls with their
results, short turns and source reads are gathered into aggregates. Its
:meth:`~CandidateReader.candidates` are the single lines (ranked, then demoted where a
newer one replaces them) followed by the merged aggregates. Pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

from registre.context.compaction import SUMMARY_LINE_KIND, FoldItem
from registre.context.excerpt import (
    Aggregate,
    distinct,
    first_line_quote,
    has_exception,
    has_figure,
    name_text,
    older_line_variants,
    plain,
    read_aggregate,
    render,
    sentences,
)
from registre.context.extractive.lines import (
    MEMO_SIZE,
    OTHER,
    SECTION_LABELS,
    TASK,
    Candidate,
    Option,
    Part,
    demote,
    line_rank,
)
from registre.context.extractive.options import aggregate_candidates, quote_options
from registre.context.model import SECTIONS, coalesce
from registre.context.toolcalls import ToolPair, digest_tool_group, tool_name

__all__ = ["CandidateReader"]

_TASK_CHARS: Final = 20_000
_LEGACY: Final = re.compile(
    r"\d+ (?:findings|decisions|dead ends|tool outputs|open threads)(?:; latest: .*)?"
    r"|\d+ items folded",
    re.DOTALL,
)


@dataclass
class CandidateReader:
    """Reads ``items`` (the items a compaction folds, in order) into candidate lines.
    ``starts_thread``: the fold starts at entry 0, so the thread's first system and user
    turns give task lines; ``pinned``: seqs of folded entries whose whole text a live pin
    carries (they get no line). The other fields are working state: read once, with
    :meth:`candidates`."""

    items: Sequence[FoldItem]
    starts_thread: bool
    pinned: frozenset[int] = frozenset()
    singles: list[Candidate] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)
    tools: dict[str, list[ToolPair]] = field(default_factory=dict)
    short: list[FoldItem] = field(default_factory=list)
    roles: set[str] = field(default_factory=set)

    def candidates(self) -> list[Candidate]:
        """The candidate lines of the items: the single lines (ranked, then demoted where
        a newer one replaces them), then one aggregate per section and noun."""
        shown = {item.seq: item for item in self.items if item.kind != SUMMARY_LINE_KIND}
        first_allowed = self.starts_thread and len(shown) == len(self.items)
        for item in self.items:
            if item.kind == SUMMARY_LINE_KIND:
                self._old_line(item)
            elif item.seq in self.pinned:  # a live pin carries its words in the header
                if item.kind == "turn":
                    self.roles.add(str((item.body or {}).get("role", "user")))
            elif item.kind == "turn":
                self._turn(item, first_allowed=first_allowed)
            elif item.kind in ("tool.call", "tool.result"):
                self._tool(item, shown)
            elif item.kind == "decision":
                self._single("decisions", "decided: ", item.text, item)
            elif item.kind in ("evidence.upsert", "conclusion.compute", "conclusion.final"):
                self._lifecycle(item)
            elif item.kind in ("evidence.revise", "conclusion.revise"):
                self._revision(item)
            elif item.kind == "source.read":
                self._reads(item)
        for name, pairs in self.tools.items():
            digest = digest_tool_group(name, pairs)
            for line in digest.quotes:
                options = quote_options(line.prefix, line.source, line.pointers, strong=line.strong)
                self._add(line.section, options)
            self.parts.extend(Part("tool_outputs", a, p) for a, p in digest.aggregates)
        if self.short:
            example = tuple(first_line_quote(self.short[-1].text, 60))
            aggregate = Aggregate(len(self.short), "short turn", example=example)
            pointers = coalesce((item.seq, item.seq) for item in self.short)
            self.parts.append(Part("findings", aggregate, pointers))
        demote(self.singles)
        return self.singles + aggregate_candidates(self.parts)

    def _single(
        self,
        section: str,
        prefix: str,
        text: str,
        item: FoldItem,
        *,
        escape: bool = False,
        ids: tuple[str, ...] = (),
        rank: int | None = None,
    ) -> None:
        options = quote_options(prefix, text, ((item.seq, item.seq),), escape=escape)
        self._add(section, options, ids, rank)

    def _add(
        self,
        section: str,
        options: Sequence[Option],
        ids: tuple[str, ...] = (),
        rank: int | None = None,
    ) -> None:
        if options:
            chosen = line_rank(section, options[0].text) if rank is None else rank
            self.singles.append(Candidate(section, tuple(options), chosen, ids))

    def _turn(self, item: FoldItem, *, first_allowed: bool) -> None:
        role = str((item.body or {}).get("role", "user"))
        text = item.text
        first = first_allowed and role in ("system", "user") and role not in self.roles
        self.roles.add(role)
        if first:
            prefix = "task: " if role == "user" else "task: system prompt "
            pointers = ((item.seq, item.seq),)
            options = quote_options(prefix, text, pointers, whole=_TASK_CHARS, leading=True)
            self._add("decisions", options, rank=TASK)
        elif len(text.split()) < (4 if role == "user" else 12) and not (
            has_figure(text) or has_exception(text) or "?" in text
        ):
            self.short.append(item)
        elif role == "user" and "?" in text[: (sentences(text) or [(0, len(text))])[0][1]]:
            self._single("open_threads", "question: ", text, item)
        elif role == "user":
            self._single("decisions", "instruction: ", text, item)
        elif role == "system":
            self._single("decisions", "system: ", text, item)
        else:
            self._single("findings", f"{plain(role)}: ", text, item)

    def _tool(self, item: FoldItem, shown: Mapping[int, FoldItem]) -> None:
        partner = shown.get(item.partner) if item.partner is not None else None
        if item.kind == "tool.call":
            result = partner if partner is not None and partner.kind == "tool.result" else None
            self.tools.setdefault(tool_name(item, result), []).append(ToolPair(item, result))
        elif partner is None or partner.kind != "tool.call":  # a result without its call
            self.tools.setdefault(tool_name(None, item), []).append(ToolPair(None, item))

    def _lifecycle(self, item: FoldItem) -> None:
        body = item.body or {}
        request, outcome = _mapping(body.get("request")), _mapping(body.get("outcome"))
        pairs: list[tuple[object, object]] = [(request, outcome)]
        if item.kind == "evidence.upsert":
            statements, results = _list(request.get("statements")), _list(outcome.get("results"))
            pairs = list(zip(statements, results, strict=False))
        what = {"evidence.upsert": "evidence", "conclusion.compute": "conclusion"}.get(
            item.kind, "final answer"
        )
        for statement, result in pairs:
            text, decided = _mapping(statement).get("text"), _mapping(result)
            if not isinstance(text, str):
                continue
            if decided.get("accepted") is True:
                ident = name_text(str(decided.get("id", "")))
                self._single("findings", f"{what} {ident}: ", text, item, escape=True, ids=(ident,))
            else:
                prefix = f"{what} refused ({name_text(str(decided.get('reason', 'refused')))}): "
                self._single("dead_ends", prefix, text, item, escape=True, rank=OTHER)

    def _revision(self, item: FoldItem) -> None:
        body = item.body or {}
        request, outcome = _mapping(body.get("request")), _mapping(body.get("outcome"))
        target = name_text(str(request.get("id", "")))
        pointers = ((item.seq, item.seq),)
        successor = outcome.get("successor")
        if outcome.get("accepted") is not True:
            reason = name_text(str(outcome.get("reason", "refused")))
            line = Option(f"revision of {target} refused ({reason})", pointers)
            self._add("dead_ends", (line,), rank=OTHER)
        elif successor is None:
            self._add("dead_ends", (Option(f"{target} retracted", pointers),), rank=OTHER)
        else:
            successor_id = name_text(str(successor))
            prefix = f"{target} superseded by {successor_id}"
            replacement = _mapping(request.get("replacement")).get("text")
            options: list[Option] = []
            if isinstance(replacement, str):
                options.extend(quote_options(prefix + ": ", replacement, pointers, escape=True))
            options.append(Option(prefix, pointers))
            self._add("findings", options, ids=(successor_id,))

    def _reads(self, item: FoldItem) -> None:
        request = _mapping((item.body or {}).get("request"))
        refs = [_mapping(ref) for ref in _list(request.get("refs"))]
        names = distinct(name_text(str(ref.get("ref", "")), 20) for ref in refs)
        sources = distinct(name_text(str(ref.get("source", "")), 40) for ref in refs)
        args = tuple((k, tuple(v), 0) for k, v in (("refs", names), ("source", sources)) if v)
        aggregate = Aggregate(1, "source read", args)
        self.parts.append(Part("tool_outputs", aggregate, ((item.seq, item.seq),)))

    def _old_line(self, item: FoldItem) -> None:
        section = item.section if item.section in SECTIONS else "findings"
        parsed = read_aggregate(item.text)
        if parsed is not None:
            self.parts.append(Part(section, parsed[1], item.pointers))
        elif _LEGACY.fullmatch(item.text):  # a count line of version 1
            aggregate = Aggregate(None, f"earlier {SECTION_LABELS[section]}")
            self.parts.append(Part(section, aggregate, item.pointers))
        else:
            options = [Option(text, item.pointers) for text in _older_texts(item.text)]
            self._add(section, options)


@lru_cache(maxsize=MEMO_SIZE)
def _older_texts(text: str) -> tuple[str, ...]:
    """The texts a line of an older summary may be written again as, best first (a pure
    function of the line, remembered: a refold reads every live line again)."""
    texts = distinct(render(segments) for segments in older_line_variants(text))
    return tuple(text for text in texts if text.strip())


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []
