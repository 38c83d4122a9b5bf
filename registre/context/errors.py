"""The exceptions of the working context (``specs/context.md``).

Three families, as everywhere in registre:

* **refusals** (:class:`~registre.errors.RefusedError`, nothing was changed): a context
  that cannot fit its budget (:class:`ContextBudgetError` and its subclasses, each saying by how
  many tokens), a summary the controller will not record (:class:`SummaryRefusedError` and
  its subclasses), a plan used against a state that moved on (:class:`StalePlanError`), a token
  counter that cannot be loaded (:class:`TokenCounterUnavailableError`);
* **failed verification** (:class:`~registre.errors.VerificationError`): a recorded
  ``context.compaction`` that breaks a rule when replayed (:class:`CompactionVerificationError`
  and its subclasses, one per rule), or a counter name the verifier does not have
  (:class:`UnknownTokenCounterError`);
* **malformed input** is :class:`~registre.lifecycle.errors.LifecycleFormatError` (a body, policy or
  summary of the wrong shape), whose message starts with the field path.

Shape problems and refusals never leave a state half-changed.
"""

from __future__ import annotations

from registre.errors import RefusedError, VerificationError

__all__ = [
    "CompactionDoesNotReduceError",
    "CompactionElisionError",
    "CompactionEmptySummaryError",
    "CompactionFoldsRecentTurnsError",
    "CompactionOverShareError",
    "CompactionPinSetError",
    "CompactionPointerError",
    "CompactionQuoteError",
    "CompactionRangeError",
    "CompactionSplitsToolCallError",
    "CompactionStubError",
    "CompactionTokensError",
    "CompactionVerificationError",
    "ContextBudgetError",
    "EmptySummaryError",
    "InventedQuoteError",
    "PinsOverBudgetError",
    "ProjectionOverBudgetError",
    "RecentTurnsOverBudgetError",
    "StalePlanError",
    "SummaryOverShareError",
    "SummaryPointerOutsideRangeError",
    "SummaryRefusedError",
    "TokenCounterUnavailableError",
    "UnknownTokenCounterError",
]


# --- budgets -------------------------------------------------------------------------------


class ContextBudgetError(RefusedError):
    """A context that cannot be made to fit its budget without a silent cut.

    ``needed`` is the smallest number of tokens the context could take, ``budget`` the budget,
    and ``over_by`` = ``needed - budget`` (> 0): the number of tokens to find.
    """

    def __init__(self, message: str, *, needed: int, budget: int) -> None:
        self.needed = needed
        self.budget = budget
        self.over_by = needed - budget
        super().__init__(message)


class PinsOverBudgetError(ContextBudgetError):
    """The live pins alone take more than the budget: no compaction can help. Unpin something
    or raise the budget."""


class RecentTurnsOverBudgetError(ContextBudgetError):
    """Pins, the smallest possible summary and the most recent turns (which are never folded)
    take more than the budget even at their smallest: every tool output among them stubbed,
    those of the latest turn elided down to their marker. ``needed`` is that
    smallest context. Lower ``keep_recent_turns`` or raise the budget."""


class ProjectionOverBudgetError(ContextBudgetError):
    """The context as the ledger now has it does not fit the budget: plan and record a
    compaction first (:func:`registre.context.compaction.plan_compaction`)."""

    hint = "record a compaction first (`registre compact THREAD --budget N`)"


# --- summaries, before they are recorded -----------------------------------------------------


class SummaryRefusedError(RefusedError):
    """A summary the controller refuses to record; the ledger is left untouched."""


class EmptySummaryError(SummaryRefusedError):
    """A summary with no line, or a line with blank text, for a plan that folds entries."""


class SummaryPointerOutsideRangeError(SummaryRefusedError):
    """A summary line pointing at a ledger entry outside the range the plan folds."""


class SummaryOverShareError(SummaryRefusedError):
    """A summary whose rendered message takes more tokens than the plan allows it."""


class InventedQuoteError(SummaryRefusedError):
    """A quoted span of a summary line that no entry the line points at contains byte for
    byte (checked lineage)."""


class StalePlanError(RefusedError):
    """A compaction plan applied to a state other than the one it was planned on (the thread
    moved on, or another policy or counter was given): plan again."""


# --- token counters --------------------------------------------------------------------------


class TokenCounterUnavailableError(RefusedError):
    """An optional token counter that cannot be loaded here (package missing, or its data
    cannot be read without the network)."""


class UnknownTokenCounterError(VerificationError):
    """A recorded token counter name the verifier has no counter for: the recorded token
    counts cannot be reproduced without it."""


# --- recorded compactions, when replayed --------------------------------------------------


class CompactionVerificationError(VerificationError):
    """A recorded ``context.compaction`` entry that breaks a rule of ``specs/context.md``."""


class CompactionRangeError(CompactionVerificationError):
    """A folded range that does not start at a fold boundary, does not end at one, or does not
    lie before the compaction's own entry."""


class CompactionSplitsToolCallError(CompactionVerificationError):
    """A folded range that separates a tool call from its result (or folds an unanswered
    call)."""


class CompactionFoldsRecentTurnsError(CompactionVerificationError):
    """A compaction that folds or stubs an entry of the most recent turns its policy keeps."""


class CompactionStubError(CompactionVerificationError):
    """A stubbed entry that is not a bulky, unstubbed tool result of the kept tail."""


class CompactionElisionError(CompactionVerificationError):
    """An elided entry (shown head and tail) that is not a bulky tool result of the kept tail
    shown whole, or an elision that would show all of it."""


class CompactionPointerError(CompactionVerificationError):
    """A summary line pointing outside the compaction's folded range (THREATS row 19)."""


class CompactionQuoteError(CompactionVerificationError):
    """A quoted span of a recorded summary line found in no entry the line points at."""


class CompactionEmptySummaryError(CompactionVerificationError):
    """A compaction that folds entries with no summary line, or that has lines but folds
    nothing."""


class CompactionOverShareError(CompactionVerificationError):
    """A recorded summary larger than the summary share of its policy's budget."""


class CompactionPinSetError(CompactionVerificationError):
    """A recorded pin-set digest that is not the digest of the pins live at that point: a pin
    was dropped or altered."""


class CompactionTokensError(CompactionVerificationError):
    """Recorded ``tokens_before`` or ``tokens_after`` that the named counter does not give."""


class CompactionDoesNotReduceError(CompactionVerificationError):
    """A compaction that does not pay for itself: ``tokens_after`` is not strictly below
    ``tokens_before``, so the context did not shrink (a controller never records one)."""
