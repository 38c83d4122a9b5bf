"""``context.compaction`` events: writing one from a plan, and verifying a recorded one.

Writing (the ledger, inside its append transaction): :func:`prepare_compaction` plans,
summarizes, checks the summary and returns the body, or ``None`` when no compaction is due;
:func:`compaction_body` is the last step on its own. Nothing here writes anything: a
refusal or a failing summarizer leaves the ledger untouched.

Verifying (the offline verifier, entry by entry): :func:`validate_compaction` checks a
recorded compaction against the context state just before it, in the numbered steps of
``specs/context.md`` section 7, each failure its own
:class:`~registre.context.errors.CompactionVerificationError` subclass. It does not change
the state; apply the entry afterwards with :meth:`ContextState.apply`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from registre.context.compaction import CompactionPlan, check_summary, plan_compaction
from registre.context.errors import (
    CompactionDoesNotReduceError,
    CompactionElisionError,
    CompactionEmptySummaryError,
    CompactionFoldsRecentTurnsError,
    CompactionOverShareError,
    CompactionPinSetError,
    CompactionPointerError,
    CompactionQuoteError,
    CompactionSplitsToolCallError,
    CompactionStubError,
    CompactionTokensError,
    StalePlanError,
)
from registre.context.fold import ContextState, protected_start, safe_cuts
from registre.context.lineage import (
    check_line_quotes,
    check_lines_present,
    check_pointers_inside,
)
from registre.context.model import ContextEntry, Summary
from registre.context.policy import Policy
from registre.context.projection import context_tokens
from registre.context.record import CompactionRecord, parse_compaction, record_to_body
from registre.context.render import message_tokens, summary_message
from registre.context.summarize import Summarizer
from registre.context.tokens import TokenCounter, resolve_counter

__all__ = [
    "COMPACTION_ACTOR",
    "compaction_body",
    "prepare_compaction",
    "validate_compaction",
]

COMPACTION_ACTOR = "registre"
"""The actor the fold is given when it simulates a compaction (the fold ignores actors)."""


def prepare_compaction(
    state: ContextState,
    policy: Policy,
    counter: TokenCounter,
    summarizer: Summarizer,
    entries_text_by_seq: Mapping[int, str] | None = None,
    *,
    plan: CompactionPlan | None = None,
) -> dict[str, object] | None:
    """The body of the compaction due now, or ``None``: :func:`plan_compaction`, then
    ``summarizer.summarize(plan.items, plan)``, then :func:`check_summary` against the plan's
    own entry texts plus ``entries_text_by_seq`` (needed for a refold, whose lines may quote
    entries folded long ago), then :func:`compaction_body`.

    ``plan``, when given, is ``plan_compaction(state, policy, counter)`` already made by the
    caller on this very ``state`` (a plan is a pure function of them): it is used instead of
    planning again. A plan made on another state raises :class:`StalePlanError`
    (:func:`compaction_body`); one made with another policy or counter, too
    (:func:`check_summary`).

    ``None`` when no compaction is due, or when none would make the context smaller: the plan
    allows no summary that would (``plan_compaction``), and a body whose ``tokens_after`` is
    not below ``tokens_before`` is never returned (a verifier refuses it:
    CompactionDoesNotReduceError).

    Raises what those raise (ContextBudgetError, SummaryRefusedError subclasses, whatever the
    summarizer raises); ``state`` is never changed.
    """
    if plan is None:
        plan = plan_compaction(state, policy, counter)
        if plan is None:
            return None
    summary = summarizer.summarize(plan.items, plan)
    texts = _Overlay(plan.entry_texts(), entries_text_by_seq or {})
    check_summary(plan, summary, texts, policy, counter)
    body = compaction_body(state, plan, summary, summarizer)
    if not _reduces(body):
        return None  # cannot happen with a plan's allowance; never record one that does not pay
    return body


def compaction_body(
    state: ContextState, plan: CompactionPlan, summary: Summary, summarizer: Summarizer
) -> dict[str, object]:
    """The ``context.compaction`` body recording ``plan`` with ``summary`` (already accepted by
    :func:`check_summary`): folded range, stubs, elisions, lines, summarizer, policy, counter name,
    ``tokens_before`` (the plan's), ``tokens_after`` (the context once the entry is folded,
    computed on a copy of ``state``) and the live pin-set digest.

    Raises :class:`StalePlanError` if ``state`` is not the state the plan was made on.
    """
    if state.at != plan.at or state.pin_set_sha256() != plan.pin_set_sha256:
        raise StalePlanError(
            f"the plan was made at seq {plan.at} and the thread is at seq {state.at}; plan again"
        )
    record = CompactionRecord(
        seq=plan.seq,
        folded=plan.folded,
        stubbed=plan.stubbed,
        elided=plan.elided,
        lines=summary.lines if plan.folded is not None else (),
        summarizer_name=summarizer.name,
        summarizer_version=summarizer.version,
        policy=plan.policy,
        token_counter=plan.counter.name,
        tokens_before=plan.tokens_before,
        tokens_after=0,
        pin_set_sha256=plan.pin_set_sha256,
    )
    body = record_to_body(record)
    after = state.copy()
    after.apply(ContextEntry(plan.seq, "context.compaction", COMPACTION_ACTOR, body))
    body["tokens_after"] = context_tokens(after, plan.counter)
    return body


def validate_compaction(
    state: ContextState,
    entry: ContextEntry,
    entries_text_by_seq: Mapping[int, str],
    counters: Mapping[str, TokenCounter],
) -> ContextState:
    """Check the recorded compaction ``entry`` against ``state`` (the fold of the entries
    before it), in this order; the first failure raises:

    1. the body reads as a compaction, with lines exactly when it folds a range and every
       pointer inside that range (LifecycleFormatError, CompactionEmptySummaryError,
       CompactionPointerError);
    2. its counter is one of ``counters`` (UnknownTokenCounterError);
    3. the range starts and ends at fold boundaries before the entry, every stub is an
       unstubbed tool result of the kept tail and every elision one shown whole, of which it
       leaves something out (CompactionRangeError, CompactionStubError,
       CompactionElisionError);
    4. the fold keeps every tool call with its result (CompactionSplitsToolCallError);
    5. nothing of the policy's most recent turns is folded, and a stub or an elision lies
       there only if the context before took more than the budget
       (CompactionFoldsRecentTurnsError);
    6. every other stub and elision replaces a result bigger than the policy's threshold
       (CompactionStubError, CompactionElisionError);
    7. the summary is non-blank and its message fits the summary share the live summaries it
       does not fold leave (CompactionEmptySummaryError, CompactionOverShareError);
    8. every quoted span is in an entry its line points at (CompactionQuoteError), searching
       ``entries_text_by_seq`` (seq -> :func:`~registre.context.render.entry_text`);
    9. the pin-set digest is that of the pins live now: pins carried verbatim
       (CompactionPinSetError);
    10. ``tokens_before`` and ``tokens_after`` are what the counter gives
        (CompactionTokensError);
    11. ``tokens_after`` is strictly below ``tokens_before``: the compaction pays for itself
        (CompactionDoesNotReduceError).

    Returns the fold after the entry, ``state.copy()`` with ``entry`` applied (``state``
    itself is unchanged): a verifier may carry it on instead of folding the entry again.
    Raises ValueError if ``state`` is not at ``entry.seq - 1``. O(tail + live summaries +
    quoted spans x pointed entries).
    """
    if state.at != entry.seq - 1:
        raise ValueError(f"validate entry {entry.seq} against the state at {entry.seq - 1}")
    where = f"compaction at seq {entry.seq}"
    record = parse_compaction(entry.seq, entry.body)  # step 1
    counter = resolve_counter(record.token_counter, counters)  # step 2
    after = state.copy()
    after.apply_compaction(entry, record)  # step 3: the fold refuses what it cannot apply
    _check_tail_rules(state, record, counter, where)  # steps 4-6
    if record.folded is not None:  # steps 7-8
        _check_lines(state, after, record, counter, entries_text_by_seq, where)
    if record.pin_set_sha256 != state.pin_set_sha256():  # step 9
        raise CompactionPinSetError(
            f"{where} records pin-set digest {record.pin_set_sha256}, but the pins live then "
            f"give {state.pin_set_sha256()}: the pins were not carried verbatim"
        )
    for name, recorded, actual in (  # step 10
        ("tokens_before", record.tokens_before, context_tokens(state, counter)),
        ("tokens_after", record.tokens_after, context_tokens(after, counter)),
    ):
        if recorded != actual:
            raise CompactionTokensError(
                f"{where} records {name} = {recorded}, but {counter.name} counts {actual}"
            )
    if record.tokens_after >= record.tokens_before:  # step 11
        raise CompactionDoesNotReduceError(
            f"{where} leaves the context at {record.tokens_after} tokens, not below the "
            f"{record.tokens_before} it took: a compaction must make the context smaller"
        )
    return after


def _reduces(body: Mapping[str, object]) -> bool:
    after, before = body["tokens_after"], body["tokens_before"]
    return isinstance(after, int) and isinstance(before, int) and after < before


def _check_tail_rules(
    state: ContextState, record: CompactionRecord, counter: TokenCounter, where: str
) -> None:
    tail = state.tail
    policy = record.policy
    protected = protected_start(tail, policy.keep_recent_turns)
    if record.folded is not None and record.folded[1] >= state.boundary:
        cut = record.folded[1] - state.boundary
        if not safe_cuts(tail)[cut]:
            raise CompactionSplitsToolCallError(
                f"{where} ends its range at {record.folded[1]}, separating a tool call from "
                "its result (or folding a call not yet answered)"
            )
        if cut >= protected:
            raise CompactionFoldsRecentTurnsError(
                f"{where} folds up to {record.folded[1]}, into the {policy.keep_recent_turns} "
                f"most recent turns (from {tail[protected].seq}) that are never folded"
            )
    threshold = policy.bulky_tool_output_tokens
    before: int | None = None  # counted only when a stand-in lies in the recent turns
    for what, seqs, error in (
        ("stubs", record.stubbed, CompactionStubError),
        ("elides", tuple(seq for seq, _head, _tail in record.elided), CompactionElisionError),
    ):
        for seq in seqs:
            if seq - state.boundary >= protected:  # step 5: only for a context over budget
                before = context_tokens(state, counter) if before is None else before
                if before <= policy.window_tokens():  # the budget less the output reserve
                    raise CompactionFoldsRecentTurnsError(
                        f"{where} {what} entry {seq}, inside the {policy.keep_recent_turns} "
                        f"most recent turns, while the context ({before} tokens) fits the "
                        f"budget of {policy.window_tokens()}: the recent turns are kept whole "
                        "unless they do not fit"
                    )
                continue
            tokens = tail[seq - state.boundary].verbatim_tokens(counter)
            if tokens <= threshold:  # step 6
                raise error(
                    f"{where} {what} entry {seq}, whose {tokens} tokens are not above the "
                    f"policy's bulky threshold of {threshold}"
                )


def _check_lines(
    state: ContextState,
    after: ContextState,
    record: CompactionRecord,
    counter: TokenCounter,
    texts: Mapping[int, str],
    where: str,
) -> None:
    assert record.folded is not None
    first, last = record.folded
    check_lines_present(record.lines, where, CompactionEmptySummaryError)
    check_pointers_inside(record.lines, record.folded, where, CompactionPointerError)
    kept = sum(s.tokens(counter) for s in state.summaries if s.last < first or s.first > last)
    share = record.policy.summary_share_tokens - kept
    # the summary's message is the one the fold after the entry shows (counted once, there)
    summary = next((s for s in after.summaries if s.seq == record.seq), None)
    if summary is None:
        tokens = message_tokens(summary_message(record.seq, first, last, record.lines), counter)
    else:
        tokens = summary.tokens(counter)
    if tokens > share:
        raise CompactionOverShareError(
            f"{where}: the summary takes {tokens} tokens, {tokens - share} over the "
            f"{share} the summary share leaves beside the live summaries it keeps"
        )
    for index, line in enumerate(record.lines):
        check_line_quotes(line, index, texts, where, CompactionQuoteError)


class _Overlay(Mapping[int, str]):
    """``first``, then ``second`` for the seqs ``first`` lacks; nothing is copied."""

    def __init__(self, first: Mapping[int, str], second: Mapping[int, str]) -> None:
        self._first, self._second = first, second

    def __getitem__(self, seq: int) -> str:
        found = self._first.get(seq)
        return self._second[seq] if found is None else found

    def __iter__(self) -> Iterator[int]:
        yield from self._first
        yield from (seq for seq in self._second if seq not in self._first)

    def __len__(self) -> int:
        return sum(1 for _ in self)
