"""The default summarizer, ``registre.extractive`` (``specs/context.md`` section 6).

:mod:`~registre.context.extractive.summarizer` holds :class:`ExtractiveSummarizer` and the
rules; :mod:`~registre.context.extractive.reader` reads the folded items into candidate
lines, :mod:`~registre.context.extractive.options` writes their options,
:mod:`~registre.context.extractive.lines` holds the candidates and their ranks, and
:mod:`~registre.context.extractive.budget` fits them to the allowance.
"""

from registre.context.extractive.summarizer import ExtractiveSummarizer

__all__ = ["ExtractiveSummarizer"]
