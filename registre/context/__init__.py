"""The working context: a pure fold over a thread's entries, its projection for a model, and
compaction with checked lineage (``specs/context.md``). Standard library and lifecycle only;
no I/O.

Typical use by the ledger, per thread: keep a :class:`ContextState`, ``apply`` every appended
entry (persist it with :func:`state_snapshot`, load it with :func:`restore_state`); before a
model call, ``body = prepare_compaction(state, policy, counter, summarizer)``
and, if not ``None``, append it as a ``context.compaction`` entry (and apply it); then
``projection = project(state, budget, policy, counter)`` and record the ``model.call`` with
the digest of what is sent (``registre.attest.projection_digest.digest.shape_digest``): the
projection
itself, or the provider request ``projection.as_openai_chat()``, ``as_openai_responses()`` or
``as_anthropic()`` (:mod:`registre.context.provider`).
"""

from registre.context.compaction import (
    MIN_SUMMARY_TOKENS,
    SUMMARY_LINE_KIND,
    CompactionPlan,
    FoldItem,
    check_summary,
    plan_compaction,
    summary_tokens,
)
from registre.context.errors import (
    CompactionDoesNotReduceError,
    CompactionElisionError,
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
from registre.context.events import (
    compaction_body,
    prepare_compaction,
    validate_compaction,
)
from registre.context.fold import ContextState
from registre.context.lifecycle_block import (
    BLOCK_SHARE_PERMILLE,
    LIFECYCLE_BLOCK_VERSION,
    LIFECYCLE_BLOCK_VERSIONS,
    LifecycleBlock,
    LifecycleView,
    lifecycle_block,
    lifecycle_view,
)
from registre.context.lineage import quoted_spans
from registre.context.model import SECTIONS, ContextEntry, Message, Summary, SummaryLine
from registre.context.policy import Policy, parse_policy
from registre.context.projection import (
    STATUSES,
    Manifest,
    ManifestRun,
    Projection,
    context_tokens,
    project,
)
from registre.context.provider import (
    PROVIDER_SHAPES,
    anthropic_messages,
    openai_chat,
    openai_responses,
    provider_call_id,
    provider_request,
)
from registre.context.record import CompactionRecord, parse_compaction
from registre.context.render import entry_text
from registre.context.snapshot import restore_state, state_snapshot
from registre.context.summarize import (
    ExtractiveSummarizer,
    PromptSummarizer,
    Summarizer,
    pointer_specificity,
)
from registre.context.task_pin import TASK_PIN_KIND, task_pins_due
from registre.context.tokens import (
    BPE_ENCODINGS,
    DEFAULT_COUNTER_NAME,
    BpeCounter,
    CachedCounter,
    DefaultTokenCounter,
    TiktokenCounter,
    TokenCounter,
    bpe_counter,
    bpe_counter_name,
    counter_registry,
    default_counter,
    resolve_counter,
)

__all__ = [
    "BLOCK_SHARE_PERMILLE",
    "BPE_ENCODINGS",
    "DEFAULT_COUNTER_NAME",
    "LIFECYCLE_BLOCK_VERSION",
    "LIFECYCLE_BLOCK_VERSIONS",
    "MIN_SUMMARY_TOKENS",
    "PROVIDER_SHAPES",
    "SECTIONS",
    "STATUSES",
    "SUMMARY_LINE_KIND",
    "TASK_PIN_KIND",
    "BpeCounter",
    "CachedCounter",
    "CompactionDoesNotReduceError",
    "CompactionElisionError",
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
    "LifecycleBlock",
    "LifecycleView",
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
    "anthropic_messages",
    "bpe_counter",
    "bpe_counter_name",
    "check_summary",
    "compaction_body",
    "context_tokens",
    "counter_registry",
    "default_counter",
    "entry_text",
    "lifecycle_block",
    "lifecycle_view",
    "openai_chat",
    "openai_responses",
    "parse_compaction",
    "parse_policy",
    "plan_compaction",
    "pointer_specificity",
    "prepare_compaction",
    "project",
    "provider_call_id",
    "provider_request",
    "quoted_spans",
    "resolve_counter",
    "restore_state",
    "state_snapshot",
    "summary_tokens",
    "task_pins_due",
    "validate_compaction",
]
