"""The default summarizer, ``registre.extractive`` version ``2`` (``specs/context.md``
section 6): deterministic, no model; every line quotes the entries' own words or counts
them, and points at exactly the entries it stands for.

**Candidate lines.** Each folded item offers a line in one or more *options*, best first
(its words whole, the sentences holding its figures and exceptions, the first of them, that
one cut at a word boundary):

* the thread's first system turn and first user turn, when this fold starts the thread:
  ``decisions``, ``task: …`` (whole, else its opening sentences, as far as three fifths of
  the allowance go);
* user turns: ``decisions`` ``instruction: …``, or ``open_threads`` ``question: …``; other
  system turns ``system: …``; ``decision`` entries ``decided: …``;
* assistant turns and accepted evidence, conclusions and revisions: ``findings``
  (``evidence ev-3: …``, ``ev-6 superseded by ev-8: …``); refused requests and retractions:
  ``dead_ends``;
* tool calls with their results: the aggregates and quotes of
  :mod:`registre.lifecycle.context.toolcalls` (what was called, with which arguments, what
  came out; a line of its own for each failure, each result unlike the others, each line of
  a table-like output that states a figure);
* short turns without a figure, an exception word or a question (chit-chat: fewer than 12
  words, 4 for a user) and source registrations are aggregated too; pins and unpins get no
  line (the header carries the live pins).

**Refolds.** A line of a summary folded again is kept verbatim with its own pointers (a
quote an older summarizer cut inside a word is cut back to a word boundary, ``……`` becomes
``…``, a one-character quote is dropped); if it does not fit it may lose its last quotes,
then the sentences after its first, then words. Aggregate lines of one section and noun are
merged, old and new, into one whose counts are summed and whose pointers are the union of
theirs (coalesced, never bridged), or, if that does not fit, the newest of them.

**Budget.** Lines are taken by importance, most important first (each at most a quarter of
``plan.max_summary_tokens``, or 64 tokens; a task line three fifths): the lines kept whole
(ranks up to the other findings) first in their compact option, the shortest that still
quotes their key sentence whole; then the others in their best option that fits; then the
first ones get their better options while the allowance lasts. Within a rank the sections
take turns, newest first in each. A folded entry whose whole text a live pin carries
(``plan.pinned``) gets no line. The ranks: task lines; instructions, decisions, failed
calls, exceptional tool results and findings with a failure word (``does not reconcile``);
findings with a figure and an exception word, figures stated in tool outputs, questions;
other findings with a figure or an exception word (evidence and conclusions, which the
lifecycle state keeps under their ids, rank here); tool aggregates; the rest; other
aggregates. Within a rank, newer first. A finding about an id superseded or retracted in the
same summary, and a statement made again later with other figures (the same words once its
numbers are blanked), rank with the rest. Singles that do not fit are gathered into one
``N entries: more … not quoted here`` line per section if that fits; what still does not fit
is folded without mention. Lines are written section by section in
:data:`~registre.lifecycle.context.model.SECTIONS` order, task lines first, then oldest
first. Deterministic: equal items and plans give equal summaries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from registre.lifecycle.context.compaction import (
    SUMMARY_LINE_KIND,
    CompactionPlan,
    FoldItem,
    summary_tokens,
)
from registre.lifecycle.context.excerpt import (
    ELLIPSIS,
    Aggregate,
    Segment,
    cut_at_word,
    distinct,
    first_line_quote,
    has_exception,
    has_figure,
    has_strong_exception,
    has_strong_figure,
    key_sentences,
    merge_aggregates,
    name_text,
    older_line_variants,
    plain,
    plain_part,
    quote,
    read_aggregate,
    render,
    sentences,
    split_segments,
    write_aggregate,
)
from registre.lifecycle.context.jsontext import escape_string
from registre.lifecycle.context.model import (
    SECTIONS,
    Span,
    Summary,
    SummaryLine,
    coalesce,
    format_spans,
    span_count,
)
from registre.lifecycle.context.tokens import TokenCounter
from registre.lifecycle.context.toolcalls import ToolPair, digest_tool_group, tool_name

__all__ = ["ExtractiveSummarizer"]

_LABELS: Final = {
    "findings": "findings",
    "decisions": "decisions",
    "dead_ends": "dead ends",
    "tool_outputs": "tool outputs",
    "open_threads": "open threads",
}
_WHOLE_CHARS: Final = 600
_TASK_CHARS: Final = 20_000
_SENTENCE_CHARS: Final = 400
_LEADING: Final = (8000, 4000, 2000, 1000, 500, 250)
_CUTS: Final = (200, 100, 50)
_MIN_CAP: Final = 64
_LEGACY: Final = re.compile(
    r"\d+ (?:findings|decisions|dead ends|tool outputs|open threads)(?:; latest: .*)?"
    r"|\d+ items folded",
    re.DOTALL,
)
_RETIRED: Final = re.compile(r"\b([A-Za-z]+-\d+) (?:superseded by|retracted)\b")
_NAMED: Final = re.compile(r"^(?:evidence|conclusion|final answer) ([A-Za-z]+-\d+): ")
_RECORDED: Final = re.compile(
    r"^(?:(?:evidence|conclusion|final answer) [A-Za-z]+-\d+: |[A-Za-z]+-\d+ superseded by )"
)
_NUMBER: Final = re.compile(r"[+-]?\d+(?:[.,]\d+)*")

# ranks, most important first
_TASK, _KEY, _FACT_EXCEPTION, _FACT, _TOOLS, _OTHER, _BULK = range(7)


@dataclass(frozen=True, slots=True)
class _Option:
    text: str
    pointers: tuple[Span, ...]


@dataclass(slots=True)
class _Candidate:
    section: str
    options: tuple[_Option, ...]
    rank: int
    ids: tuple[str, ...] = ()
    aggregate: bool = False

    @property
    def newest(self) -> int:
        return self.options[0].pointers[-1][1]

    def order(self) -> tuple[int, int, str]:
        return (self.rank, -self.newest, self.options[0].text)


@dataclass(frozen=True, slots=True)
class _Part:
    section: str
    aggregate: Aggregate
    pointers: tuple[Span, ...]


class ExtractiveSummarizer:
    """``registre.extractive`` / ``2``: lines by importance, quoting the entries' own words,
    each pointing at exactly the entries it stands for (the module docstring of
    :mod:`registre.lifecycle.context.extractive` says how)."""

    name: Final = "registre.extractive"
    version: Final = "2"

    def summarize(self, entries: Sequence[FoldItem], plan: CompactionPlan) -> Summary:
        """The summary of ``entries`` (``plan.items``) for ``plan``."""
        if plan.folded is None:
            return Summary(())
        reader = _Reader(entries, starts_thread=plan.folded[0] == 0, pinned=plan.pinned)
        return Summary(_fill(reader.candidates(), entries, plan))


# --- reading the items ----------------------------------------------------------------------


@dataclass
class _Reader:
    items: Sequence[FoldItem]
    starts_thread: bool
    pinned: frozenset[int] = frozenset()
    singles: list[_Candidate] = field(default_factory=list)
    parts: list[_Part] = field(default_factory=list)
    tools: dict[str, list[ToolPair]] = field(default_factory=dict)
    short: list[FoldItem] = field(default_factory=list)
    roles: set[str] = field(default_factory=set)

    def candidates(self) -> list[_Candidate]:
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
                options = _quote_options(
                    line.prefix, line.source, line.pointers, strong=line.strong
                )
                self._add(line.section, options)
            self.parts.extend(_Part("tool_outputs", a, p) for a, p in digest.aggregates)
        if self.short:
            example = tuple(first_line_quote(self.short[-1].text, 60))
            aggregate = Aggregate(len(self.short), "short turn", example=example)
            pointers = coalesce((item.seq, item.seq) for item in self.short)
            self.parts.append(_Part("findings", aggregate, pointers))
        _demote(self.singles)
        return self.singles + _aggregates(self.parts)

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
        options = _quote_options(prefix, text, ((item.seq, item.seq),), escape=escape)
        self._add(section, options, ids, rank)

    def _add(
        self,
        section: str,
        options: Sequence[_Option],
        ids: tuple[str, ...] = (),
        rank: int | None = None,
    ) -> None:
        if options:
            chosen = _rank(section, options[0].text) if rank is None else rank
            self.singles.append(_Candidate(section, tuple(options), chosen, ids))

    def _turn(self, item: FoldItem, *, first_allowed: bool) -> None:
        role = str((item.body or {}).get("role", "user"))
        text = item.text
        first = first_allowed and role in ("system", "user") and role not in self.roles
        self.roles.add(role)
        if first:
            prefix = "task: " if role == "user" else "task: system prompt "
            pointers = ((item.seq, item.seq),)
            options = _quote_options(prefix, text, pointers, whole=_TASK_CHARS, leading=True)
            self._add("decisions", options, rank=_TASK)
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
                self._single("dead_ends", prefix, text, item, escape=True, rank=_OTHER)

    def _revision(self, item: FoldItem) -> None:
        body = item.body or {}
        request, outcome = _mapping(body.get("request")), _mapping(body.get("outcome"))
        target = name_text(str(request.get("id", "")))
        pointers = ((item.seq, item.seq),)
        successor = outcome.get("successor")
        if outcome.get("accepted") is not True:
            reason = name_text(str(outcome.get("reason", "refused")))
            line = _Option(f"revision of {target} refused ({reason})", pointers)
            self._add("dead_ends", (line,), rank=_OTHER)
        elif successor is None:
            self._add("dead_ends", (_Option(f"{target} retracted", pointers),), rank=_OTHER)
        else:
            successor_id = name_text(str(successor))
            prefix = f"{target} superseded by {successor_id}"
            replacement = _mapping(request.get("replacement")).get("text")
            options: list[_Option] = []
            if isinstance(replacement, str):
                options.extend(_quote_options(prefix + ": ", replacement, pointers, escape=True))
            options.append(_Option(prefix, pointers))
            self._add("findings", options, ids=(successor_id,))

    def _reads(self, item: FoldItem) -> None:
        request = _mapping((item.body or {}).get("request"))
        refs = [_mapping(ref) for ref in _list(request.get("refs"))]
        names = distinct(name_text(str(ref.get("ref", "")), 20) for ref in refs)
        sources = distinct(name_text(str(ref.get("source", "")), 40) for ref in refs)
        args = tuple((k, tuple(v), 0) for k, v in (("refs", names), ("source", sources)) if v)
        aggregate = Aggregate(1, "source read", args)
        self.parts.append(_Part("tool_outputs", aggregate, ((item.seq, item.seq),)))

    def _old_line(self, item: FoldItem) -> None:
        section = item.section if item.section in SECTIONS else "findings"
        parsed = read_aggregate(item.text)
        if parsed is not None:
            self.parts.append(_Part(section, parsed[1], item.pointers))
        elif _LEGACY.fullmatch(item.text):  # a count line of version 1
            aggregate = Aggregate(None, f"earlier {_LABELS[section]}")
            self.parts.append(_Part(section, aggregate, item.pointers))
        else:
            texts = distinct(render(segments) for segments in older_line_variants(item.text))
            options = [_Option(text, item.pointers) for text in texts if text.strip()]
            self._add(section, options)


# --- options ----------------------------------------------------------------------------------


def _quote_options(
    prefix: str,
    source: str,
    pointers: tuple[Span, ...],
    *,
    escape: bool = False,
    whole: int = _WHOLE_CHARS,
    strong: bool = False,
    leading: bool = False,
) -> tuple[_Option, ...]:
    """Ways to write ``prefix`` and quotes of ``source``, best first: whole (``leading``:
    then its opening sentences), its key sentences, the first key sentence, that sentence
    cut at a word boundary. ``escape``: the entry's text holds ``source`` as a JSON string
    (a lifecycle body)."""
    quoted: Callable[[str], list[Segment]] = (
        (lambda raw: quote(escape_string(raw))) if escape else quote
    )
    texts: list[str] = []

    def emit(spans: Sequence[tuple[int, int]], limit: int | None = None) -> None:
        segments: list[Segment] = [("", prefix)] if prefix else []
        previous: int | None = None
        cut = False
        for start, end in spans:
            raw = source[start:end]
            if limit is not None and len(raw) > limit:
                raw, cut = cut_at_word(raw, limit), True
            pieces = quoted(raw)
            if not pieces:
                continue
            if previous is not None:
                gap = source[previous:start].strip()
                segments.append(("", f" {ELLIPSIS} " if gap else " "))
            segments.extend(pieces)
            previous = end
        if previous is not None:
            text = render([*segments, ("", ELLIPSIS)] if cut else segments)
            if text not in texts:
                texts.append(text)

    stripped = source.strip()
    if stripped and len(stripped) <= whole:
        emit([(0, len(source))])
    if leading:  # a task: its opening sentences, as many as fit
        spans = sentences(source)
        for limit in _LEADING:
            opening = [span for span in spans if span[1] - spans[0][0] <= limit]
            if opening and len(opening) < len(spans):
                emit(opening)
                texts[-1] += "" if texts[-1].endswith(ELLIPSIS) else ELLIPSIS
    keyed = key_sentences(source, strong=strong)
    if keyed:
        if len(keyed) > 1:
            emit(keyed[:3])
        if keyed[0][1] - keyed[0][0] <= _SENTENCE_CHARS:
            emit(keyed[:1])
        for limit in _CUTS:
            emit(keyed[:1], limit)
    if not texts:
        texts.append((prefix.rstrip() or "entry:") + " (nothing to quote)")
    return tuple(_Option(text, pointers) for text in texts)


def _rank(section: str, text: str) -> int:
    """The importance of a single line, from its section and words alone, so a line keeps
    its rank when it is read back from a summary folded again."""
    words = plain_part(text)
    if words.startswith("task: "):
        return _TASK
    if section == "decisions":
        return _KEY
    if section == "open_threads":
        return _FACT_EXCEPTION
    if section == "dead_ends":
        return _KEY if " failed: " in words or words.endswith(" failed") else _OTHER
    figure, strong = has_figure(text), has_strong_exception(text)
    if section == "tool_outputs":
        return _KEY if strong else _FACT_EXCEPTION if figure else _OTHER
    exception = has_exception(text)
    if _RECORDED.match(words):  # the lifecycle state keeps these too, under their ids
        return _FACT if figure or exception else _OTHER
    if strong:
        return _KEY
    if figure and exception:
        return _FACT_EXCEPTION
    return _FACT if figure or exception else _OTHER


def _demote(candidates: Iterable[_Candidate]) -> None:
    """Lines a newer line of the same summary replaces rank as other lines: findings about
    an id superseded or retracted, and a statement made again later with other figures
    (the same words once numbers are blanked: the newer figures are the current ones)."""
    candidates = list(candidates)
    retired = {
        match[1]
        for candidate in candidates
        for match in _RETIRED.finditer(plain_part(candidate.options[0].text))
    }
    newest: dict[tuple[str, str], _Candidate] = {}
    for candidate in candidates:
        named = _NAMED.match(plain_part(candidate.options[0].text))
        if named is not None and named[1] in retired:
            candidate.rank = max(candidate.rank, _OTHER)
        template = _statement(candidate.options[0].text)
        if template:
            key = (candidate.section, template)
            other = newest.get(key)
            if other is None or other.newest < candidate.newest:
                newest[key] = candidate
    for candidate in candidates:
        template = _statement(candidate.options[0].text)
        if template and newest[(candidate.section, template)] is not candidate:
            candidate.rank = max(candidate.rank, _OTHER)


def _statement(text: str) -> str:
    """The first quote of ``text`` with its numbers blanked, if it holds a figure."""
    first = next((piece for mark, piece in split_segments(text) if mark), "")
    if not has_figure(first):
        return ""
    return " ".join(_NUMBER.sub("#", first.lower()).split())


def _aggregates(parts: Sequence[_Part]) -> list[_Candidate]:
    """One candidate per section and noun; its options merge all its parts, then the newest
    half of them, and so on down to the newest one."""
    groups: dict[tuple[str, str], list[_Part]] = {}
    for part in parts:
        groups.setdefault((part.section, part.aggregate.noun), []).append(part)
    candidates = []
    for (section, noun), group in groups.items():
        group.sort(key=lambda part: part.pointers[-1][1])
        rank = _TOOLS if noun.endswith((" call", " result")) or noun == "source read" else _BULK
        union = coalesce(span for part in group for span in part.pointers)
        if span_count(union) != sum(span_count(part.pointers) for part in group):
            for part in group:  # parts that overlap: their counts cannot be summed
                text = write_aggregate(span_count(part.pointers), part.aggregate)
                option = _Option(text, part.pointers)
                candidates.append(_Candidate(section, (option,), rank, aggregate=True))
            continue
        options: list[_Option] = []
        size = len(group)
        while size >= 1:
            chosen = group[-size:]
            pointers = coalesce(span for part in chosen for span in part.pointers)
            merged = merge_aggregates([part.aggregate for part in chosen])
            for detail in _details(merged):
                text = write_aggregate(span_count(pointers), detail)
                if all(option.text != text for option in options):
                    options.append(_Option(text, pointers))
            size = size // 2 if size > 1 else 0
        candidates.append(_Candidate(section, tuple(options), rank, aggregate=True))
    return candidates


# --- the budget -------------------------------------------------------------------------------


def _fill(
    candidates: list[_Candidate], items: Sequence[FoldItem], plan: CompactionPlan
) -> tuple[SummaryLine, ...]:
    """Take candidates by importance (module docstring): first every line kept whole and
    specific (ranks up to ``_FACT``) in its compact option, the shortest that still quotes
    its key sentence whole; then the other lines, each in its best option that fits; then
    the first lines get their better options while the allowance lasts. Last, check the
    whole message and drop the least important lines while it is over."""
    counter = plan.counter
    budget = plan.max_summary_tokens
    used = summary_tokens(plan, (), counter)
    line_cap, task_cap = max(_MIN_CAP, budget // 4), max(_MIN_CAP, budget * 3 // 5)
    ordered = _interleaved(sorted(candidates, key=_Candidate.order))
    picked: dict[int, tuple[int, int]] = {}  # candidate index -> (option index, cost)
    left: list[_Candidate] = []

    def take(index: int, options: Sequence[int]) -> bool:
        nonlocal used
        candidate = ordered[index]
        cap = task_cap if candidate.rank == _TASK else line_cap
        for number in options:
            cost = _cost(candidate.section, candidate.options[number], counter)
            if cost <= cap and used + cost <= budget:
                picked[index] = (number, cost)
                used += cost
                return True
        return False

    first = {
        index
        for index, candidate in enumerate(ordered)
        if candidate.rank <= _FACT and not candidate.aggregate
    }
    for index in sorted(first):  # 1: what must be kept, compactly
        candidate = ordered[index]
        compact, count = _compact_option(candidate), len(candidate.options)
        if not take(index, [*range(compact, count), *range(compact - 1, -1, -1)]):
            left.append(candidate)
    for index, candidate in enumerate(ordered):  # 2: the rest, in their best forms
        if index in first:
            continue
        if not take(index, range(len(candidate.options))) and not candidate.aggregate:
            left.append(candidate)
    for index in sorted(picked):  # 3: better forms for the first lines
        number, cost = picked[index]
        candidate = ordered[index]
        cap = task_cap if candidate.rank == _TASK else line_cap
        for better in range(number):
            extra = _cost(candidate.section, candidate.options[better], counter)
            if extra <= cap and used - cost + extra <= budget:
                picked[index] = (better, extra)
                used += extra - cost
                break
    chosen = [(ordered[index], ordered[index].options[picked[index][0]]) for index in picked]
    for more in _more_lines(left):
        for option in more.options:
            cost = _cost(more.section, option, counter)
            if used + cost <= budget:
                chosen.append((more, option))
                used += cost
                break
    chosen.sort(key=lambda pair: pair[0].order())
    while chosen:
        lines = _ordered(chosen)
        if summary_tokens(plan, lines, counter) <= budget:
            return lines
        chosen.pop()  # the least important
    return _fallback(items, plan)


def _interleaved(ordered: Sequence[_Candidate]) -> list[_Candidate]:
    """``ordered`` (by rank, then newest first) with the sections of one rank taking turns,
    each newest first, so that no section crowds the others out of a rank."""
    result: list[_Candidate] = []
    start = 0
    while start < len(ordered):
        rank = ordered[start].rank
        end = start
        while end < len(ordered) and ordered[end].rank == rank:
            end += 1
        queues: dict[str, list[_Candidate]] = {}
        for candidate in ordered[start:end]:
            queues.setdefault(candidate.section, []).append(candidate)
        depth = max(len(queue) for queue in queues.values())
        result.extend(
            queue[turn] for turn in range(depth) for queue in queues.values() if turn < len(queue)
        )
        start = end
    return result


def _compact_option(candidate: _Candidate) -> int:
    """The index of the shortest option of ``candidate`` that still quotes its key sentence
    whole: the first sentence of its best option's first quote that states a figure, else
    the first that holds an exception word, else its first sentence (options are given best
    first, so longest first)."""
    options = candidate.options
    first = next((piece for mark, piece in split_segments(options[0].text) if mark), "")
    spans = sentences(first)
    if not spans:
        return 0
    texts = [first[start:end] for start, end in spans]
    key = next(
        (text for text in texts if has_strong_figure(text)),
        next((text for text in texts if has_exception(text)), texts[0]),
    )
    best = 0
    for number, option in enumerate(options):
        if any(key in piece for mark, piece in split_segments(option.text) if mark):
            best = number
    return best


def _cost(section: str, option: _Option, counter: TokenCounter) -> int:
    return counter.count(f"\n- {section}: {option.text} (seq {format_spans(option.pointers)})")


def _ordered(chosen: Sequence[tuple[_Candidate, _Option]]) -> tuple[SummaryLine, ...]:
    def key(pair: tuple[_Candidate, _Option]) -> tuple[int, int, int, str]:
        candidate, option = pair
        task = 0 if candidate.rank == _TASK else 1
        return (SECTIONS.index(candidate.section), task, option.pointers[0][0], option.text)

    return tuple(
        SummaryLine(candidate.section, option.text, option.pointers)
        for candidate, option in sorted(chosen, key=key)
    )


def _details(aggregate: Aggregate) -> list[Aggregate]:
    """An aggregate, then without its example, then with its first argument only; with no
    argument at all only when it has none (so it still names something)."""
    details = [aggregate, replace(aggregate, example=())]
    if len(aggregate.args) > 1:
        details.append(replace(aggregate, args=aggregate.args[:1], example=()))
    return details


def _more_lines(left: Sequence[_Candidate]) -> list[_Candidate]:
    """Per section, one aggregate for the singles that did not fit (its options: all of
    them, then the newest half, and so on), naming the ids they were about and quoting the
    opening words of the newest."""
    lines = []
    for section in SECTIONS:
        group = sorted((c for c in left if c.section == section), key=lambda c: c.newest)
        options: list[_Option] = []
        size = len(group)
        while size >= 1:
            chosen = group[-size:]
            pointers = coalesce(span for c in chosen for span in c.options[0].pointers)
            ids = distinct(ident for c in chosen for ident in c.ids)
            aggregate = Aggregate(
                None,
                f"more {_LABELS[section]} not quoted here",
                (("ids", tuple(ids), 0),) if ids else (),
                example=_opening(chosen[-1].options[-1].text),
            )
            for detail in _details(aggregate):
                text = write_aggregate(span_count(pointers), detail)
                if all(option.text != text for option in options):
                    options.append(_Option(text, pointers))
            size = size // 2 if size > 1 else 0
        if options:
            lines.append(_Candidate(section, tuple(options), _BULK, aggregate=True))
    return lines


def _opening(text: str) -> tuple[Segment, ...]:
    """The first quote of a line's ``text`` cut to about 40 characters (a substring of it,
    so of an entry the line points at)."""
    first = next((piece for mark, piece in split_segments(text) if mark), "")
    return tuple(first_line_quote(first, 40))


def _fallback(items: Sequence[FoldItem], plan: CompactionPlan) -> tuple[SummaryLine, ...]:
    """When no candidate fits: the kinds of what was folded, else the bare range."""
    assert plan.folded is not None
    shown = [item for item in items if item.kind != SUMMARY_LINE_KIND]
    if shown:
        pointers = coalesce((item.seq, item.seq) for item in shown)
        kinds = ", ".join(sorted({item.kind for item in shown}))
        line = SummaryLine("findings", f"{_entries(span_count(pointers))}: {kinds}", pointers)
        if summary_tokens(plan, (line,), plan.counter) <= plan.max_summary_tokens:
            return (line,)
    first, last = plan.folded
    what = "nothing to quote" if shown or len(items) else "model calls and compaction records"
    text = f"{_entries(last - first + 1)}: {what}"
    return (SummaryLine("findings", text, ((first, last),)),)


def _entries(count: int) -> str:
    return f"{count} {'entry' if count == 1 else 'entries'}"


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []
