"""The working context: a pure fold over a thread's entries, its projection for a model, and
compaction with checked lineage (``specs/context.md``). Standard library and lifecycle only;
no I/O.

Typical use by the ledger, per thread: keep a :class:`ContextState`, ``apply`` every appended
entry (persist it with :func:`state_snapshot`, load it with :func:`restore_state`); before a
model call, ``body = prepare_compaction(state, policy, counter, summarizer)``
and, if not ``None``, append it as a ``context.compaction`` entry (and apply it); then
``projection = project(state, budget, policy, counter)`` and record the ``model.call`` with
the projection's digest (``registre.attest.projection.projection_digest``).
"""

from registre.lifecycle.context.compaction import (
    MIN_SUMMARY_TOKENS,
    SUMMARY_LINE_KIND,
    CompactionPlan,
    FoldItem,
    check_summary,
    plan_compaction,
    summary_tokens,
)
from registre.lifecycle.context.errors import (
    CompactionEmptySummaryError,
    CompactionFoldsRecentTurnsError,
    CompactionOverShareError,
    CompactionPinSetError,
    CompactionPointerError,
    CompactionQuoteError,
    CompactionRangeError,
    CompactionSplitsToolCallError,
    CompactionStubError,
    CompactionTokensError,
    CompactionVerificationError,
    ContextBudgetError,
    EmptySummaryError,
    InventedQuoteError,
    PinsOverBudgetError,
    ProjectionOverBudgetError,
    RecentTurnsOverBudgetError,
    StalePlanError,
    SummaryOverShareError,
    SummaryPointerOutsideRangeError,
    SummaryRefusedError,
    TokenCounterUnavailableError,
    UnknownTokenCounterError,
)
from registre.lifecycle.context.events import (
    compaction_body,
    prepare_compaction,
    validate_compaction,
)
from registre.lifecycle.context.fold import ContextState
from registre.lifecycle.context.lineage import quoted_spans
from registre.lifecycle.context.model import SECTIONS, ContextEntry, Message, Summary, SummaryLine
from registre.lifecycle.context.policy import Policy, parse_policy
from registre.lifecycle.context.projection import (
    STATUSES,
    Manifest,
    ManifestRun,
    Projection,
    context_tokens,
    project,
)
from registre.lifecycle.context.record import CompactionRecord, parse_compaction
from registre.lifecycle.context.render import entry_text
from registre.lifecycle.context.snapshot import restore_state, state_snapshot
from registre.lifecycle.context.summarize import ExtractiveSummarizer, PromptSummarizer, Summarizer
from registre.lifecycle.context.tokens import (
    DEFAULT_COUNTER_NAME,
    DefaultTokenCounter,
    TiktokenCounter,
    TokenCounter,
    counter_registry,
    default_counter,
    resolve_counter,
)

__all__ = [
    "DEFAULT_COUNTER_NAME",
    "MIN_SUMMARY_TOKENS",
    "SECTIONS",
    "STATUSES",
    "SUMMARY_LINE_KIND",
    "CompactionEmptySummaryError",
    "CompactionFoldsRecentTurnsError",
    "CompactionOverShareError",
    "CompactionPinSetError",
    "CompactionPlan",
    "CompactionPointerError",
    "CompactionQuoteError",
    "CompactionRangeError",
    "CompactionRecord",
    "CompactionSplitsToolCallError",
    "CompactionStubError",
    "CompactionTokensError",
    "CompactionVerificationError",
    "ContextBudgetError",
    "ContextEntry",
    "ContextState",
    "DefaultTokenCounter",
    "EmptySummaryError",
    "ExtractiveSummarizer",
    "FoldItem",
    "InventedQuoteError",
    "Manifest",
    "ManifestRun",
    "Message",
    "PinsOverBudgetError",
    "Policy",
    "Projection",
    "ProjectionOverBudgetError",
    "PromptSummarizer",
    "RecentTurnsOverBudgetError",
    "StalePlanError",
    "Summarizer",
    "Summary",
    "SummaryLine",
    "SummaryOverShareError",
    "SummaryPointerOutsideRangeError",
    "SummaryRefusedError",
    "TiktokenCounter",
    "TokenCounter",
    "TokenCounterUnavailableError",
    "UnknownTokenCounterError",
    "check_summary",
    "compaction_body",
    "context_tokens",
    "counter_registry",
    "default_counter",
    "entry_text",
    "parse_compaction",
    "parse_policy",
    "plan_compaction",
    "prepare_compaction",
    "project",
    "quoted_spans",
    "resolve_counter",
    "restore_state",
    "state_snapshot",
    "summary_tokens",
    "validate_compaction",
]
