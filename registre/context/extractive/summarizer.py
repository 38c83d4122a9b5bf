"""The default summarizer, ``registre.extractive`` version ``3`` (``specs/context.md``
section 6): deterministic, no model; every line quotes the entries' own words or counts
them, and points at exactly the entries it stands for.

**Candidate lines.** Each folded item offers a line in one or more *options*, best first
(its words whole, the sentences holding its figures and exceptions, the first of them, that
one cut at a word boundary):

* the thread's first system turn and first user turn, when this fold starts the thread:
  ``decisions``, ``task: …`` (whole, else its opening sentences, as far as three fifths of
  the allowance go);
* the other turns, whoever spoke: ``findings`` ``user: …`` / ``assistant: …`` /
  ``system: …``, or ``open_threads`` ``user asked: …`` when the first sentence asks, or
  ``decisions`` ``user: …`` for a user or system turn stating a standing rule
  (:func:`~registre.context.extractive.salience.is_directive`: ``from now on``,
  ``always``, ``never``, ``must``, ``do not``, ``make sure`` …);
  *phatic* turns (``Thanks!``, ``Sure!``, ``1.``, ``[Request interrupted by user]``:
  :func:`~registre.context.extractive.salience.is_phatic`) get no line at all;
  ``decision`` entries ``decided: …``;
* accepted evidence, conclusions and revisions: ``findings``
  (``evidence ev-3: …``, ``ev-6 superseded by ev-8: …``); refused requests and retractions:
  ``dead_ends``;
* tool calls with their results: the aggregates and quotes of
  :mod:`registre.context.toolcalls` (what was called, with which arguments, what
  came out; a line of its own for each failure, each result unlike the others, the id and
  value fields of each JSON result, each line of a table-like output that states a figure);
* source registrations are aggregated too; pins and unpins get no line (the header carries
  the live pins).

**Salience** (:mod:`~registre.context.extractive.salience`). Lines that quote the same
terms are merged into the newest, pointing at all of them. Then, within each rank, lines are
ordered by the information they add: the BM25 weights (over the folded items' texts) of
their terms not said by a line before them, numbers, ids, paths and symbols counting
double and proper names half again.

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
take turns, most informative first in each. A folded entry whose whole text a live pin
carries (``plan.pinned``) gets no line. The ranks: task lines; standing rules, decisions,
failed calls, exceptional tool results and findings with a failure word (``does not
reconcile``); findings with a figure and an exception word, figures stated in tool outputs;
other findings with a figure or an exception word (evidence and conclusions, which the
lifecycle state keeps under their ids, rank here; so does every other non-phatic turn and
question: a turn is ranked by what it says, not by who said it); tool aggregates; the rest;
other aggregates. Within a rank, most informative first (salience), then newer first. A
finding about an id superseded or retracted in the same summary, and a statement made again
later with other figures (the same words once its numbers are blanked), rank with the rest.
Singles that do not fit are gathered into one ``N entries: more … not quoted here`` line per
section if that fits; what still does not fit is folded without mention. Lines are written
section by section in :data:`~registre.context.model.SECTIONS` order, task lines first, then
oldest first. Deterministic: equal items and plans give equal summaries.

**Where.** :mod:`~registre.context.extractive.reader` reads the items into
candidate lines, :mod:`~registre.context.extractive.options` writes their options,
:mod:`~registre.context.extractive.lines` holds the candidates and their ranks,
and :mod:`~registre.context.extractive.budget` fits them to the allowance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from registre.context.compaction import CompactionPlan, FoldItem
from registre.context.extractive.budget import fit_lines
from registre.context.extractive.reader import CandidateReader
from registre.context.model import Summary

__all__ = ["ExtractiveSummarizer"]


class ExtractiveSummarizer:
    """``registre.extractive`` / ``3``: lines by importance, quoting the entries' own words,
    each pointing at exactly the entries it stands for (the module docstring of
    :mod:`registre.context.extractive` says how)."""

    name: Final = "registre.extractive"
    version: Final = "3"

    def summarize(self, entries: Sequence[FoldItem], plan: CompactionPlan) -> Summary:
        """The summary of ``entries`` (``plan.items``) for ``plan``."""
        if plan.folded is None:
            return Summary(())
        reader = CandidateReader(entries, starts_thread=plan.folded[0] == 0, pinned=plan.pinned)
        return Summary(fit_lines(reader.candidates(), entries, plan))
