"""The prompt the language-model summarizers send, and how their replies are read.

The request is two parts: :data:`SYSTEM_PROMPT`, the same for every compaction (so a
provider's prompt cache keeps it), and :func:`user_prompt`, the plan's folded range, its
token allowance and the folded items. The reply is the ``SECTION | SEQS | TEXT`` lines of
:func:`registre.context.summarize.parse_reply`; :func:`read_reply` also takes them
inside a Markdown code fence, which models add unasked.

Nothing here is checked against the ledger: the controller does that
(:func:`registre.context.check_summary`, inside ``Thread.compact``) and refuses a
summary that points outside the fold, quotes words no pointed entry holds, or overruns the
allowance, with nothing written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from registre.context import (
    SUMMARY_LINE_KIND,
    CompactionPlan,
    FoldItem,
    Summary,
    SummaryRefusedError,
)
from registre.context.model import format_spans
from registre.context.summarize import parse_reply

__all__ = [
    "ITEM_CHARS",
    "PROMPT_VERSION",
    "SYSTEM_PROMPT",
    "ClientSummarizer",
    "UnusableReplyError",
    "read_reply",
    "render_item",
    "user_prompt",
]

PROMPT_VERSION: Final = "1"
"""Recorded as ``summarizer.version`` by the adapters: change the prompt, change it."""

ITEM_CHARS: Final = 2000
"""The most characters of one item's text the prompt shows by default."""

SYSTEM_PROMPT: Final = """\
You compact the working memory of an AI agent. You are given a range of entries from the \
agent's ledger (its conversation turns, tool calls and their results, decisions, evidence, \
and lines of earlier summaries) and you write the summary that replaces that range in the \
agent's context from now on. The agent keeps working from your summary alone; the full text \
of every entry stays one lookup away through the seqs each line lists.

Reply with summary lines only, one per line, each exactly:
SECTION | SEQS | TEXT

SECTION is one of:
- findings: what was established, with its figures (numbers, units, names, identifiers)
- decisions: the task and the user's instructions, choices made and why, constraints in force
- dead_ends: what was tried and failed or was refuted, and why
- tool_outputs: which tools were run on what, and what came out
- open_threads: questions still open, work still to do

SEQS lists the entries the line stands for, as seqs and ranges separated by commas, \
for example: 12 or 2-5, 12. Every seq must lie within the folded range given with the \
entries; a line outside it is refused. Point each line at the few entries it stands for, \
not at a wide range. To keep a line of an earlier summary, list the seqs that line points at.

TEXT is one line of plain text. Put words in “curly quotes” only when they appear verbatim, \
character for character, in an entry the line lists (for a quote kept from an earlier \
summary line, list that line's seqs); a quote that no listed entry contains is refused, so \
paraphrase without quotes when in doubt. Do not use straight double quotes.

Keep specific, each in a line of its own: figures with their units, exceptions and \
anomalies, decisions with their reasons, the user's instructions and the task statement, \
definitions, error messages. Aggregate repetitive work into one line that says what was done \
and what came out (for example: 18 sql queries on risk_mart over 7 segments; 16 returned \
rows, 2 empty), naming the tools and their key arguments. Leave out chit-chat.

The whole summary must fit within the token allowance given with the entries; a longer \
summary is refused. Write nothing else: no preamble, no headings, no blank lines."""


class UnusableReplyError(SummaryRefusedError):
    """The model's reply cannot be a summary (no text, cut at the reply's token limit,
    refused by the model); nothing is recorded."""


def user_prompt(
    entries: Sequence[FoldItem], plan: CompactionPlan, *, item_chars: int = ITEM_CHARS
) -> str:
    """The folded range, the token allowance, then every item (:func:`render_item`)."""
    first, last = plan.folded if plan.folded is not None else (0, -1)
    head = (
        f"Folded range: entries {first}-{last}. Every line's SEQS must lie within {first}-{last}.\n"
        f"Token allowance: the whole summary must fit in {plan.max_summary_tokens} tokens.\n\n"
        f"The {len(entries)} items folded:\n"
    )
    return head + "\n\n".join(render_item(item, item_chars) for item in entries)


def render_item(item: FoldItem, item_chars: int = ITEM_CHARS) -> str:
    """One item: a bracketed header line, then its text (cut to ``item_chars`` characters,
    saying how many were left out; trailing whitespace dropped).

    ``[seq 12 | tool.call | agent | tool bash, result at 13]`` for an entry;
    ``[summary line | findings | points at 2-5, 9]`` for a line of a summary folded again.
    """
    if item.kind == SUMMARY_LINE_KIND:
        header = f"[summary line | {item.section} | points at {format_spans(item.pointers)}]"
    else:
        notes = _notes(item)
        header = f"[seq {item.seq} | {item.kind} | {item.actor}{''.join(notes)}]"
    text = item.text
    if len(text) > item_chars:
        text = f"{text[:item_chars]}\n[... {len(text) - item_chars} more characters]"
    return f"{header}\n{text.rstrip()}"


def _notes(item: FoldItem) -> list[str]:
    body: Mapping[str, object] = item.body or {}
    notes = []
    if item.kind == "turn" and isinstance(body.get("role"), str):
        notes.append(f"role {body['role']}")
    if item.kind == "tool.call" and isinstance(body.get("name"), str):
        notes.append(f"tool {body['name']}")
    if item.kind == "tool.result" and body.get("is_error") is True:
        notes.append("error")
    if item.partner is not None:
        other = "result" if item.kind == "tool.call" else "call"
        notes.append(f"{other} at {item.partner}")
    return [f" | {', '.join(notes)}"] if notes else []


def read_reply(reply: str | None) -> Summary:
    """The summary the reply's lines give (``parse_reply``), after removing a Markdown code
    fence around them. Raises :class:`UnusableReplyError` for an empty reply and
    :class:`~registre.lifecycle.errors.LifecycleFormatError` for a line out of format."""
    if reply is None or not reply.strip():
        raise UnusableReplyError("the model's reply holds no summary line")
    lines = reply.strip().splitlines()
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1].strip() == "```":
        lines = lines[1:-1]
    return parse_reply("\n".join(lines))


class ClientSummarizer:
    """What the provider adapters share: a model name, the recorded name and version, the
    request options, and one round trip per compaction. A subclass says how to ask
    (:meth:`_ask`: the reply's text, or None when it has none)."""

    provider: str = ""

    def __init__(
        self,
        model: str,
        options: Mapping[str, Any],
        *,
        item_chars: int = ITEM_CHARS,
        name: str | None = None,
    ) -> None:
        if not model:
            raise ValueError("a model name is needed")
        self._model = model
        self._options: dict[str, Any] = dict(options)
        self._item_chars = item_chars
        self._name = name or f"{self.provider}:{model}"

    @property
    def name(self) -> str:
        """``<provider>:<model>`` unless another name was given."""
        return self._name

    @property
    def version(self) -> str:
        """The prompt's version."""
        return PROMPT_VERSION

    @property
    def model(self) -> str:
        """The model asked."""
        return self._model

    def summarize(self, entries: Sequence[FoldItem], plan: CompactionPlan) -> Summary:
        """Ask the model for the summary of ``entries``; read its reply."""
        if plan.folded is None:
            return Summary(())
        return read_reply(self._ask(user_prompt(entries, plan, item_chars=self._item_chars)))

    def _ask(self, prompt: str) -> str | None:
        raise NotImplementedError
