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
    name_text,
    older_line_variants,
    plain,
    quote,
    read_aggregate,
    render,
    sentences,
    split_segments,
)
from registre.context.extractive.lines import (
    FACT,
    KEY,
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
from registre.context.extractive.salience import (
    Salience,
    is_directive,
    is_phatic,
    novelty_order,
    terms,
)
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
                if line.fields:  # the id and value fields, most first, never cut inside
                    fields = line.source.split("\n")
                    options = [
                        Option(
                            line.prefix + render(quote("\n".join(fields[:count]))), line.pointers
                        )
                        for count in range(len(fields), 0, -1)
                    ]
                else:
                    options = list(
                        quote_options(line.prefix, line.source, line.pointers, strong=line.strong)
                    )
                self._add(line.section, options)
            self.parts.extend(Part("tool_outputs", a, p) for a, p in digest.aggregates)
        self.singles = _merge_duplicates(self.singles)
        demote(self.singles)
        _score(self.singles, Salience(item.text for item in self.items))
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
        if item.kind == "turn":  # a form quoting only a courtesy ("Thanks, Mel!") says nothing
            options = tuple(option for option in options if not _phatic_quote(option.text))
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
        if first and not is_phatic(text):
            prefix = "task: " if role == "user" else "task: system prompt "
            pointers = ((item.seq, item.seq),)
            options = quote_options(prefix, text, pointers, whole=_TASK_CHARS, leading=True)
            self._add("decisions", options, rank=TASK)
        elif first or is_phatic(text):  # says nothing a later step could need: no line
            return
        elif "?" in text[: (sentences(text) or [(0, len(text))])[0][1]]:
            self._single("open_threads", f"{plain(role)} asked: ", text, item, rank=FACT)
        elif role != "assistant" and is_directive(text):  # a standing rule: still in force
            self._single("decisions", f"{plain(role)}: ", text, item, rank=KEY)
        else:
            rank = min(FACT, line_rank("findings", text))
            self._single("findings", f"{plain(role)}: ", text, item, rank=rank)

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


def _phatic_quote(text: str) -> bool:
    """Whether the quotes of a line's ``text`` are phatic together (or it has none)."""
    quoted = " ".join(piece for mark, piece in split_segments(text) if mark)
    return is_phatic(quoted)


def _merge_duplicates(singles: list[Candidate]) -> list[Candidate]:
    """``singles`` with duplicates merged: lines of one section whose first option quotes the
    same terms (:func:`~registre.context.extractive.salience.terms`: the same words and
    figures, whatever the case, the punctuation and who said it or which call gave it; a
    line without quotes by its whole text) become the newest of them, pointing at all
    of theirs (its quotes are the newest entry's words, which it still points at). A
    statement made again with other figures is not merged: :func:`demote` ranks the older
    one lower."""
    groups: dict[tuple[str, str], list[Candidate]] = {}
    for candidate in singles:
        if candidate.rank == TASK or candidate.ids:
            groups[(candidate.section, f"\x00{id(candidate)}")] = [candidate]
            continue
        text = candidate.options[0].text
        quoted = " ".join(piece for mark, piece in split_segments(text) if mark)
        key = (candidate.section, " ".join(terms(quoted or text)))
        groups.setdefault(key, []).append(candidate)
    merged: list[Candidate] = []
    for group in groups.values():
        if len(group) == 1:
            merged.append(group[0])
            continue
        newest = max(group, key=lambda candidate: candidate.newest)
        spans = sorted(span for candidate in group for span in candidate.options[0].pointers)
        pointers = coalesce(spans)
        options = tuple(Option(option.text, pointers) for option in newest.options)
        rank = min(candidate.rank for candidate in group)
        merged.append(Candidate(newest.section, options, rank, newest.ids))
    return merged


def _score(singles: Sequence[Candidate], salience: Salience) -> None:
    """Give each single line (the task lines aside) the information it adds to the lines
    before it, in the order a greedy reader takes them within its rank
    (:func:`~registre.context.extractive.salience.novelty_order`)."""
    ranks = sorted({candidate.rank for candidate in singles if candidate.rank != TASK})
    for rank in ranks:
        group = [candidate for candidate in singles if candidate.rank == rank]
        texts = [candidate.options[0].text for candidate in group]
        for index, gain in novelty_order(texts, salience):
            group[index].score = gain


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
