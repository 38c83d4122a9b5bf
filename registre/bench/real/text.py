"""What a context contains, judged from its text alone: the scoring rules of the real-data
suites (``docs/design/2026-12-06-real-data-bench.md``).

A context is judged by what the model would read -- the messages' contents -- never by a
method's own account of what it kept, so every method (registre and each baseline) is scored
by the same rule:

* :func:`content_words` -- the words that carry content: lower-cased runs of letters and
  digits (apostrophes inside a word kept), minus :data:`STOPWORDS`;
* :func:`turn_present` -- an evidence turn is in a context when its text appears verbatim
  (whitespace-normalized) in one message, or when one line of the context both points at its
  seq (``seq 12``, ``seqs 10-14``, ``(seq 3, 7)``, ``[entry 12, user]``) and holds at least
  :data:`EXCERPT_COVERAGE` of its distinct content words;
* :func:`answer_share` -- the share of the gold answer's distinct content words that occur as
  words of the context.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

__all__ = [
    "EXCERPT_COVERAGE",
    "STOPWORDS",
    "ContextText",
    "answer_share",
    "content_words",
    "normalize",
    "seq_refs",
    "turn_present",
    "words",
]

EXCERPT_COVERAGE: Final = 0.8
"""An excerpt that names a turn's seq stands for the turn when it holds this share of the
turn's distinct content words (strict: a pointer and a few words are not the turn)."""

_STOPWORD_TEXT: Final = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t don't i'm it's that's you're i've i'd i'll we're they're isn't wasn't"""
STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())
"""Words too common to carry content (English function words)."""

_WORD: Final = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_SPACE: Final = re.compile(r"\s+")
_SEQ_REF: Final = re.compile(
    r"\bseqs?\s*[:#]?\s*(\d+(?:\s*[-–]\s*\d+)?(?:\s*,\s*\d+(?:\s*[-–]\s*\d+)?)*)"
    r"|\bentry\s*[:#]?\s*(\d+)\b",
    re.IGNORECASE,
)
_SEQ_PART: Final = re.compile(r"(\d+)(?:\s*[-–]\s*(\d+))?")


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` (letters and digits; ``’`` read as ``'``)."""
    return [word.replace("’", "'") for word in _WORD.findall(text.lower())]


def content_words(text: str) -> frozenset[str]:
    """The distinct words of ``text`` that are not :data:`STOPWORDS`."""
    return frozenset(word for word in words(text) if word not in STOPWORDS)


def normalize(text: str) -> str:
    """``text`` with every run of whitespace made one space, stripped."""
    return _SPACE.sub(" ", text).strip()


def seq_refs(line: str) -> frozenset[int]:
    """The seqs a line points at: ``seq N``, ``seqs N-M``, ``seq N, M`` (ranges inclusive),
    ``entry N`` (one entry; ``entries N-M`` is a range header, not a pointer)."""
    found: set[int] = set()
    for match in _SEQ_REF.finditer(line):
        for part in _SEQ_PART.finditer(match.group(1) or match.group(2)):
            first = int(part.group(1))
            last = int(part.group(2)) if part.group(2) else first
            if last - first <= 10_000:
                found.update(range(first, last + 1))
    return frozenset(found)


@dataclass(frozen=True)
class ContextText:
    """A context as text, indexed once for many questions: the normalized contents of its
    messages, its words, and its lines that point at seqs (with their content words)."""

    messages: tuple[str, ...]
    vocabulary: frozenset[str]
    pointed: tuple[tuple[frozenset[int], frozenset[str]], ...]

    @staticmethod
    def of(contents: Iterable[str]) -> ContextText:
        """Index the message contents ``contents``."""
        raw = list(contents)
        messages = tuple(normalize(content) for content in raw)
        vocabulary: set[str] = set()
        pointed: list[tuple[frozenset[int], frozenset[str]]] = []
        for content in raw:
            vocabulary.update(words(content))
            for line in content.splitlines():
                refs = seq_refs(line)
                if refs:
                    pointed.append((refs, content_words(line)))
        return ContextText(messages, frozenset(vocabulary), tuple(pointed))

    def contains(self, text: str) -> bool:
        """Whether ``text`` (normalized) is a substring of one message."""
        needle = normalize(text)
        return bool(needle) and any(needle in message for message in self.messages)


def turn_present(context: ContextText, seq: int, text: str) -> bool:
    """Whether the turn ``seq`` whose text is ``text`` is in ``context`` (module docstring):
    verbatim, or as an excerpt naming its seq and holding :data:`EXCERPT_COVERAGE` of its
    content words."""
    if context.contains(text):
        return True
    wanted = content_words(text)
    if not wanted:
        return False
    need = EXCERPT_COVERAGE * len(wanted)
    return any(seq in refs and len(wanted & line) >= need for refs, line in context.pointed)


def answer_share(context: ContextText, answer: str) -> float | None:
    """The share of ``answer``'s distinct content words that are words of ``context``;
    ``None`` for an answer without content words (it is left out of the mean)."""
    wanted = content_words(answer)
    if not wanted:
        return None
    return len(wanted & context.vocabulary) / len(wanted)
