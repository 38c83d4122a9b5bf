"""The lifecycle block: what the agent must cite, in view (``specs/context.md`` section 4.1).

A projection built with the lifecycle state at ``at`` (a ``model.call`` recording
``"lifecycle_block": V``, V the block's version) ends with one ``system`` message listing the
live lifecycle state: the active evidence ids with their statements, the conclusions left
stale by evidence changes and the open questions pinned. It is the *last* message, after the
verbatim tail, so the stable prefix (header and live summaries) never changes when evidence
does.

The block is budgeted: it takes at most :data:`BLOCK_SHARE_PERMILLE` per mille of the call's
budget, and never more than what the rest of the context leaves, so it never makes a call
refuse. Two versions, each rebuilt exactly as recorded:

* **version 2** (:data:`LIFECYCLE_BLOCK_VERSION`, what model calls record) names *every*
  active evidence id whenever their list fits: one line of all active ids in id order, runs
  of consecutive ids written as ranges (``ev-6–9``), then as many statements as fit (most
  cited, then most recent, first). When even the id list does not fit, it names the most
  cited and most recent ids that fit (``some_ids``), then a count line, then nothing.
* **version 1** (calls recorded before it) shows as many statements as fit and lists at most
  16 of the other ids, the rest only counted: past a few dozen active entries most ids were
  in no message the model was sent.

Pure and deterministic: a function of the lifecycle state, ``at``, the allowance, the counter
and the version. Cost: the view comes kept with the lifecycle state
(:mod:`~registre.context.block_view`: updated in O(what changed since the last
call), with the id list as ranges and their default counts); the statement lines' counts
are kept with the view (prefix sums per counter name, those before a change handed on to
the next view) and bisected for the estimate; the candidate block is then counted exactly,
from the kept line counts when the counter adds lines up (the default counter's block
counter; the id line's count then comes from its ranges' counts, so a list of thousands of
ids is neither rewritten nor recounted by Python code per call), else rendered and counted
whole (again, one fewer, only while over).
"""

from __future__ import annotations

import functools
import operator
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, islice
from typing import Final

from registre.context.block_view import (
    STATEMENT_CHARS,
    LifecycleView,
    StatementLines,
    id_ranges,
    lifecycle_view,
    statement_text,
)
from registre.context.block_view import statement_line as _statement_line
from registre.context.line_counts import LineCounter, block_counter
from registre.context.model import Message
from registre.context.render import MESSAGE_OVERHEAD_TOKENS, message_tokens
from registre.context.tokens import CachedCounter, TokenCounter

__all__ = [
    "BLOCK_FORMS",
    "BLOCK_SHARE_PERMILLE",
    "LIFECYCLE_BLOCK_VERSION",
    "LIFECYCLE_BLOCK_VERSIONS",
    "LISTED_IDS",
    "STATEMENT_CHARS",
    "LifecycleBlock",
    "LifecycleView",
    "block_allowance",
    "id_ranges",
    "lifecycle_block",
    "lifecycle_view",
    "statement_text",
]

LIFECYCLE_BLOCK_VERSION: Final = 2
"""The rendering rules new model calls use; a ``model.call`` records them as
``lifecycle_block``."""

LIFECYCLE_BLOCK_VERSIONS: Final = (1, 2)
"""Every version a recorded ``model.call`` may name; each is rebuilt by its own rules."""

BLOCK_SHARE_PERMILLE: Final = 100
"""The block takes at most ⌊budget·100/1000⌋ tokens (a tenth of the call's budget)."""

LISTED_IDS: Final = 16
"""Version 1: at most this many ids are listed on one line; the rest are counted. (Version 2
lists every active evidence id; stale conclusions and open questions as version 1.)"""

BLOCK_FORMS: Final = ("statements", "ids", "some_ids", "count", "none")
"""The forms of the block, largest first: statements (version 1: with the other ids listed;
version 2: after the list of every active id), the id list (version 2: every active id),
the most cited and most recent ids that fit (version 2 only), a count line, no message."""

_POINTER: Final = "registre evidence list"
_SHOW: Final = "statements: registre evidence show ID"


@dataclass(frozen=True, slots=True)
class LifecycleBlock:
    """The block as laid out: its ``form`` (:data:`BLOCK_FORMS`), the message (``None`` for
    ``none``), its tokens and the number of statements shown."""

    form: str
    message: Message | None
    tokens: int
    statements: int
    version: int = LIFECYCLE_BLOCK_VERSION

    def to_json(self, message_index: int | None) -> dict[str, object]:
        """``{"version", "form", "statements", "tokens"}`` plus ``"message"`` when shown."""
        data: dict[str, object] = {
            "version": self.version,
            "form": self.form,
            "statements": self.statements,
            "tokens": self.tokens,
        }
        if message_index is not None:
            data["message"] = message_index
        return data


def _none(version: int) -> LifecycleBlock:
    return LifecycleBlock("none", None, 0, 0, version)


def block_allowance(budget: int, rest_tokens: int) -> int:
    """Tokens the block may take: ⌊budget·:data:`BLOCK_SHARE_PERMILLE`/1000⌋, and no more
    than the budget left by the other messages."""
    return min(budget * BLOCK_SHARE_PERMILLE // 1000, budget - rest_tokens)


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:LISTED_IDS])
    if len(ids) > LISTED_IDS:
        shown += f", … ({len(ids) - LISTED_IDS} more)"
    return shown


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _lines(
    view: LifecycleView, at: int, shown: int, statements_too: bool = True
) -> tuple[list[str], list[str], list[str]]:
    """The block's lines with the first ``shown`` statements (``shown`` = 0: the id list), as
    (the lines before the statements, the statement lines, the lines after them); without
    ``statements_too``, the statement lines are left out (an empty list)."""
    head = [f"[lifecycle at entry {at}] a conclusion may cite only the active evidence below"]
    statements: list[str] = []
    after: list[str] = []
    active = view.active
    if not active:
        head.append("active evidence: none")
    elif shown == 0:
        ids = view.ids if view.ids is not None else [item[0] for item in active]
        head.append(f"active evidence ({len(active)}): {_ids(ids)} ({_POINTER})")
    else:
        head.append(f"active evidence ({len(active)}, most cited and most recent first):")
        if statements_too:
            statements = [_statement_line(item) for item in active[:shown]]
        if shown < len(active):
            after.append(_rest_line(active, shown))
    if view.stale:
        stale = [f"{cc} {kind}" for cc, kind in view.stale]
        after.append(f"stale conclusions (evidence they rely on changed): {_ids(stale)}")
    if view.questions:
        after.append(f"open questions (pinned): {_ids(list(view.questions))}")
    return head, statements, after


def _rest_line(active: Sequence[tuple[str, str, int]], shown: int) -> str:
    """``and M more active: IDS (registre evidence list)`` for the entries after ``shown``."""
    more = len(active) - shown
    ids = [item[0] for item in active[shown : shown + LISTED_IDS + 1]]
    listed = ", ".join(ids[:LISTED_IDS])
    if more > LISTED_IDS:
        listed += f", … ({more - LISTED_IDS} more)"
    return f"and {more} more active: {listed} ({_POINTER})"


def _render(view: LifecycleView, at: int, shown: int) -> str:
    """The block text with the first ``shown`` statements (``shown`` = 0: the id list)."""
    head, statements, after = _lines(view, at, shown)
    return "\n".join(head + statements + after)


def _count_line(view: LifecycleView, at: int) -> str:
    return (
        f"[lifecycle at entry {at}] "
        f"{_plural(len(view.active), 'active evidence entry', 'active evidence entries')}, "
        f"{_plural(len(view.stale), 'stale conclusion', 'stale conclusions')}, "
        f"{_plural(len(view.questions), 'open question', 'open questions')} ({_POINTER})"
    )


def lifecycle_block(
    view: LifecycleView,
    at: int,
    allowance: int,
    counter: TokenCounter,
    version: int = LIFECYCLE_BLOCK_VERSION,
) -> LifecycleBlock:
    """The largest form of the block, by the rules of ``version``, that takes at most
    ``allowance`` tokens (as a message); an empty view gives none. Version 2: every active
    id listed and as many statements as fit (estimated line by line, then counted whole, one
    fewer while over), else the id list alone, else the most cited and most recent ids that
    fit, else the count line, else none. Version 1: as many statements as fit with at most
    16 other ids listed, else the 16-id list, else the count line, else none. ValueError
    for another version."""
    if version not in LIFECYCLE_BLOCK_VERSIONS:
        raise ValueError(f"no lifecycle block version {version}; known: 1, 2")
    if view.empty or allowance <= 0:
        return _none(version)
    counter = block_counter(counter)  # the same counts; each line counted once per counter
    if version == 2:
        return _block_v2(view, at, allowance, counter)

    def sized(text: str) -> tuple[Message, int]:
        message = Message("system", text)
        return message, message_tokens(message, counter)

    ids_message, ids_tokens = sized(_render(view, at, 0))
    if ids_tokens > allowance:
        count_message, count_tokens = sized(_count_line(view, at))
        if count_tokens > allowance:
            return _none(1)
        return LifecycleBlock("count", count_message, count_tokens, 0, 1)
    shown = _statements_estimate(view, at, allowance, counter)
    while shown > 0:  # exact counts decide; the estimate is rarely over
        tokens = _block_tokens(view, at, shown, counter)
        if tokens is None:
            message, tokens = sized(_render(view, at, shown))
        else:
            message = None
        if tokens <= allowance:
            if message is None:
                message = Message("system", _render(view, at, shown))
            return LifecycleBlock("statements", message, tokens, shown, 1)
        shown -= 1
    return LifecycleBlock("ids", ids_message, ids_tokens, 0, 1)


def _extend(lines: StatementLines, view: LifecycleView, counter: TokenCounter, upto: int) -> None:
    """Count the lines up to ``upto`` (at most all of them)."""
    _count(lines, view, counter, upto, None)


def _grow_until(
    lines: StatementLines, view: LifecycleView, counter: TokenCounter, limit: int
) -> None:
    """Count lines until their sum is over ``limit`` or none is left."""
    _count(lines, view, counter, len(view.active), limit)


def _count(
    lines: StatementLines,
    view: LifecycleView,
    counter: TokenCounter,
    upto: int,
    limit: int | None,
) -> None:
    """Count the statement lines after those ``lines`` holds (:class:`StatementLines`:
    ``sums[s]`` the tokens of the first ``s`` lines, each plus one for its line break;
    ``clean`` how many of the first lines a :class:`LineCounter` adds up, ``_adds_up``), up
    to ``upto``, stopping once the sum is over ``limit``."""
    active, sums, count = view.active, lines.sums, counter.count
    index, total, clean = len(sums) - 1, sums[-1], lines.clean
    upto = min(upto, len(active))
    while index < upto and (limit is None or total <= limit):
        line = _statement_line(active[index])
        total += count(line) + 1
        sums.append(total)
        if clean == index and _adds_up(line):
            clean = index + 1
        index += 1
    lines.clean = clean


def _statement_lines(view: LifecycleView, counter: TokenCounter) -> StatementLines:
    found = view._lines.get(counter.name)
    if found is None:
        found = view._lines[counter.name] = StatementLines()
    return found


def _adds_up(line: str) -> bool:
    """Whether :class:`LineCounter` counts ``line`` as a line of its own (``line_counts``)."""
    return bool(line) and "\n" not in line and line[0] not in _SPACES and line[-1] not in _SPACES


_SPACES: Final = "\t\n\v\f\r "


def _counts_lines(counter: TokenCounter) -> bool:
    """Whether ``counter`` is a :class:`LineCounter`, or a :class:`CachedCounter` (which gives
    its wrapped counter's counts) of one: its count of a text whose lines all add up is the
    sum of its lines' counts plus one per line break."""
    inner = counter
    while isinstance(inner, CachedCounter):
        inner = inner.counter
    return isinstance(inner, LineCounter)


def _block_tokens(view: LifecycleView, at: int, shown: int, counter: TokenCounter) -> int | None:
    """``message_tokens`` of the block showing ``shown`` statements, from the counts of its
    lines, when ``counter`` is a :class:`LineCounter` and every line adds up (then its count
    of the text is the sum of its lines' counts plus one per line break, which this is);
    else None (count the text). A :class:`CachedCounter` gives its wrapped counter's counts,
    so one wrapping a LineCounter is that LineCounter here."""
    if not _counts_lines(counter):
        return None
    lines = _statement_lines(view, counter)
    _extend(lines, view, counter, shown)
    if lines.clean < shown:
        return None
    head, _none, after = _lines(view, at, shown, statements_too=False)
    total = MESSAGE_OVERHEAD_TOKENS - 1 + lines.sums[shown]
    for line in head + after:
        if not _adds_up(line):
            return None
        total += counter.count(line) + 1
    return total


def _statements_estimate(
    view: LifecycleView, at: int, allowance: int, counter: TokenCounter
) -> int:
    """The most statements whose block, counted line by line (each line, plus one token per
    line break), takes at most ``allowance`` tokens. The statement lines' counts are kept
    with the view (:class:`StatementLines`): O(log statements + :data:`LISTED_IDS`) once
    they are counted.

    The rule, as a loop: for ``shown`` = 1, 2, ... add the ``shown``-th statement line; the
    "and N more" line, while more than :data:`LISTED_IDS` statements are left, is counted
    once as it reads after the first statement (the ids it lists have about the same
    length), then again for each shorter list; stop at the first ``shown`` over
    ``allowance``, and the answer is the one before. While more than LISTED_IDS are left,
    the used tokens only grow with ``shown`` (each line costs at least its line break), so
    the first ``shown`` over is found by bisection; the last LISTED_IDS go one by one."""
    active = view.active
    if not active:
        return 0
    head, _statements, after = _lines(view, at, 1)
    if len(active) > 1:
        after = after[1:]  # the "and N more" line, counted per candidate below
    # Every line and the breaks between them. The "and N more" line lists LISTED_IDS ids
    # while more than that are left: it is counted once for those (the ids it lists have
    # about the same length), then again for each shorter list.
    used = MESSAGE_OVERHEAD_TOKENS - 1 + sum(counter.count(line) + 1 for line in head + after)
    full = counter.count(_rest_line(active, 1)) + 1 if len(active) > 1 else 0
    lines = _statement_lines(view, counter)
    count = len(active)
    far = count - LISTED_IDS - 1  # the last shown with more than LISTED_IDS left
    start = 1
    if far >= 1:
        limit = allowance - used - full
        _grow_until(lines, view, counter, limit)
        fitting = bisect_right(lines.sums, limit, 0, min(len(lines.sums), far + 1)) - 1
        if fitting < far:
            return max(fitting, 0)  # shown = fitting + 1 is the first over
        start = far + 1
    _extend(lines, view, counter, count)
    sums = lines.sums
    best = start - 1
    for shown in range(start, count + 1):
        left = count - shown
        more = full if left > LISTED_IDS else 0
        if 0 < left <= LISTED_IDS:
            more = counter.count(_rest_line(active, shown)) + 1
        if used + sums[shown] + more > allowance:
            break
        best = shown
    return best


# --- version 2: every active id named ------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _all_ids_line(ids: tuple[str, ...]) -> str:
    """``active evidence (N): RANGES (statements: registre evidence show ID)``; kept for
    the last id sets (mostly the same from call to call)."""
    return f"active evidence ({len(ids)}): {', '.join(id_ranges(ids))} ({_SHOW})"


@functools.lru_cache(maxsize=64)
def _some_ids_line(ids: tuple[str, ...], total: int) -> str:
    """``active evidence (N), the K most cited and most recent: RANGES (the other N-K: ...)``;
    kept for the last id lists."""
    return (
        f"active evidence ({total}), the {len(ids)} most cited and most recent: "
        f"{', '.join(id_ranges(ids))} (the other {total - len(ids)}: {_POINTER})"
    )


_FIRST: Final = operator.itemgetter(0)
_HEADER: Final = "[lifecycle at entry {at}] a conclusion may cite only the active evidence below"
_STATEMENTS: Final = "with statements, most cited and most recent first:"


def _after_v2(view: LifecycleView) -> list[str]:
    """The stale-conclusion and open-question lines (as version 1)."""
    return _lines(LifecycleView((), view.stale, view.questions), 0, 0)[2]


def _block_v2(
    view: LifecycleView, at: int, allowance: int, counter: TokenCounter
) -> LifecycleBlock:
    """Version 2 of :func:`lifecycle_block` (``counter``: the block counter)."""

    def sized(lines: Sequence[str]) -> tuple[Message, int]:
        message = Message("system", "\n".join(lines))
        return message, message_tokens(message, counter)

    head = _HEADER.format(at=at)
    after = _after_v2(view)
    active = view.active
    if not active:
        message, tokens = sized([head, "active evidence: none", *after])
        if tokens <= allowance:
            return LifecycleBlock("ids", message, tokens, 0, 2)
        return _count_v2(view, at, allowance, counter)
    ids = view.ids if view.ids is not None else tuple(map(_FIRST, active))
    ids_line = _ids_line(view, ids)
    frame = [head, ids_line]
    # A LineCounter's count of the block is the line sum when every line adds up (see
    # _block_tokens): then the sums are the exact counts and the text is not counted again.
    summed = _counts_lines(counter) and all(map(_adds_up, [*frame, *after]))
    kept = _ids_line_tokens(view, counter) if summed else None
    ids_count = counter.count(ids_line) if kept is None else kept
    head_and_after = counter.count(head) + 1 + sum(counter.count(line) + 1 for line in after)
    ids_message: Message | None = None
    if summed:
        ids_tokens = MESSAGE_OVERHEAD_TOKENS - 1 + head_and_after + ids_count + 1
    else:
        ids_message, ids_tokens = sized([*frame, *after])
    if ids_tokens > allowance:
        return _some_ids_v2(view, ids, at, allowance, counter)
    # Line by line (each line plus one break; see _statements_estimate): the most statements
    # whose lines' sum (kept with the view, StatementLines) fits the room the other lines
    # leave, found by bisection; then exact, one fewer while over.
    used = MESSAGE_OVERHEAD_TOKENS - 1 + head_and_after + ids_count + 1
    used += counter.count(_STATEMENTS) + 1
    lines = _statement_lines(view, counter)
    room = allowance - used
    _grow_until(lines, view, counter, room)
    shown = max(bisect_right(lines.sums, room) - 1, 0)
    while shown > 0:
        statements = view.statements_text(shown)  # the lines joined: the same text
        if summed and lines.clean >= shown:
            tokens = used + lines.sums[shown]
            message = Message("system", "\n".join([*frame, _STATEMENTS, statements, *after]))
        else:
            message, tokens = sized([*frame, _STATEMENTS, statements, *after])
        if tokens <= allowance:
            return LifecycleBlock("statements", message, tokens, shown, 2)
        shown -= 1
    if ids_message is None:
        ids_message = Message("system", "\n".join([*frame, *after]))
    return LifecycleBlock("ids", ids_message, ids_tokens, 0, 2)


def _ids_line(view: LifecycleView, ids: tuple[str, ...]) -> str:
    """The line naming every active id (:func:`_all_ids_line`), from the ranges a kept view
    carries when it has them."""
    ranges = view.ranges
    if ranges is None:
        return _all_ids_line(ids)
    return f"active evidence ({len(ids)}): {ranges.text} ({_SHOW})"


def _ids_line_tokens(view: LifecycleView, counter: TokenCounter) -> int | None:
    """The count of :func:`_ids_line` by ``counter`` from the default counts of the ranges
    a kept view carries, when ``counter`` is a :class:`LineCounter` (``registre.default/1``);
    else None. Exact: the line is its opening, the ranges and their ``, `` separators, and
    its closing; at each of those cuts a digit meets ``,``, ``,`` a single space, a single
    space ``e``, or a digit a single space, so no run of the rule (letters, digits,
    punctuation, whitespace) spans a cut, a lone space stays a lone space (charged 0), and
    the count is the sum of the parts' counts."""
    ranges = view.ranges
    if ranges is None or not ranges.count or not _counts_lines(counter):
        return None
    opening = counter.count(f"active evidence ({len(view.active)}): ")
    separators = (ranges.count - 1) * counter.count(", ")
    return opening + ranges.tokens + separators + counter.count(f" ({_SHOW})")


def _some_ids_v2(
    view: LifecycleView, ids: tuple[str, ...], at: int, allowance: int, counter: TokenCounter
) -> LifecycleBlock:
    """The most cited and most recent of ``ids`` (the view's, in its order) whose line fits:
    estimated id by id (each id and its separator), then counted whole, a tenth fewer while
    over."""
    head = _HEADER.format(at=at)
    after = _after_v2(view)
    used = MESSAGE_OVERHEAD_TOKENS - 1 + sum(counter.count(line) + 1 for line in [head, *after])
    fit = _ids_fitting(ids, allowance - used, counter, view.id_costs)
    while fit > 0:
        text = "\n".join([head, _some_ids_line(ids[:fit], len(ids)), *after])
        message = Message("system", text)
        tokens = message_tokens(message, counter)
        if tokens <= allowance:
            return LifecycleBlock("some_ids", message, tokens, 0, 2)
        fit -= max(1, fit // 10)
    return _count_v2(view, at, allowance, counter)


_FITTING: dict[tuple[tuple[str, ...], int, str], int] = {}
_FITTING_KEPT: Final = 64


def _ids_fitting(
    ids: tuple[str, ...], room: int, counter: TokenCounter, costs: Sequence[int] | None = None
) -> int:
    """How many of the first ``ids`` the ``some_ids`` line has room for within ``room``
    tokens (with its break), estimated id by id at the id's tokens plus 2 (its ``, ``);
    kept for the last id lists and rooms, by counter name (a name is a counting rule).
    With ``costs`` (a kept view's: each id's ``registre.default/1`` count plus 2) and a
    :class:`LineCounter` (whose counts those are), from their running sums (C-level):
    every cost is at least 5 (``ev``, ``-``, a digit, the separator), so no more than
    room/5 + 1 of them are summed."""
    if costs is not None and _counts_lines(counter):
        left = room - counter.count(_some_ids_line((), len(ids))) - 1
        if left < 0:
            return 0
        return bisect_right(list(accumulate(islice(costs, left // 5 + 1))), left)
    key = (ids, room, counter.name)
    found = _FITTING.get(key)
    if found is not None:
        return found
    used = counter.count(_some_ids_line((), len(ids))) + 1
    fit = 0
    for evidence_id in ids:
        used += counter.count(evidence_id) + 2
        if used > room:
            break
        fit += 1
    _FITTING[key] = fit
    while len(_FITTING) > _FITTING_KEPT:
        _FITTING.pop(next(iter(_FITTING)), None)
    return fit


def _count_v2(
    view: LifecycleView, at: int, allowance: int, counter: TokenCounter
) -> LifecycleBlock:
    message = Message("system", _count_line(view, at))
    tokens = message_tokens(message, counter)
    if tokens > allowance:
        return _none(2)
    return LifecycleBlock("count", message, tokens, 0, 2)
