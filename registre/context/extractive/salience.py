"""How much a candidate line tells, whoever said it (``specs/context.md`` section 6).

The summarizer ranks the lines it may write by the information they carry, measured on the
thread itself and nothing about its domain:

* **rare words**: each term weighs its BM25 inverse document frequency over the texts of the
  items the compaction folds (a word every turn uses weighs little; a name said twice in
  three hundred turns weighs much);
* **specific tokens** weigh more: a token holding a digit (a number, a date, an id such as
  ``credit_card_9879898``) or the marks of an identifier or path (``_``, ``/``, ``.`` or
  ``:`` inside it, or an inner capital: ``get_user_details``, ``src/app.py``,
  ``ModuleNotFoundError``) counts double, a capitalised word inside a sentence (a proper
  name) half as much again;
* **novelty**: :func:`novelty_order` takes lines greedily by the weight of the terms no
  line before them has said, so the summary does not say the same thing twice.

**Directives** (:func:`is_directive`): a user or system turn stating a standing rule
(``from now on``, ``always``, ``never``, ``must``, ``do not``, ``make sure``) ranks with
the decisions: a later step must still obey it.

**Phatic** texts (:func:`is_phatic`) carry nothing a later step needs -- "Thanks!",
"Hello!", "Sure!", "1.", "[Request interrupted by user]" -- and never become a line.

:func:`~registre.context.jsontext.json_fields` picks, from a structured (JSON) tool output,
the ``"key": value`` pairs that carry ids and values, as they are written in the output (so
a quote of them is the entry's own bytes), rather than its first bytes.

Pure and deterministic: equal texts give equal weights.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Final

__all__ = [
    "Salience",
    "is_directive",
    "is_phatic",
    "novelty_order",
    "template",
    "terms",
]

_TOKEN: Final = re.compile(r"[^\W_](?:[\w./:@#-]*[^\W_])?|_\w+")
_LABEL: Final = re.compile(r"^\s*[A-Z][\w'’-]*(?: [A-Z][\w'’-]*){0,2}:\s")
_MARKER: Final = re.compile(r"\s*\[[^\]\d]*\]\s*")
_ENUMERATOR: Final = re.compile(r"\s*(?:\d{1,3}|[a-zA-Z])[.)]?\s*")
_SPECIFIC: Final = re.compile(r"\d|[^\W\d_][_/.:][^\W_]|[a-z][A-Z]")
_NUMBER: Final = re.compile(r"\d+(?:[.,]\d+)*")

STOPWORDS: Final = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "im",
        "ive",
        "id",
        "ill",
        "youre",
        "youve",
        "thats",
        "its",
        "dont",
        "didnt",
        "cant",
        "isnt",
        "wasnt",
        "also",
        "really",
        "well",
        "much",
        "many",
        "lot",
        "lots",
        "get",
        "got",
        "go",
        "going",
        "gonna",
        "one",
        "ones",
        "thing",
        "things",
        "way",
        "even",
        "still",
    ]
)
PHATIC_WORDS: Final = frozenset(
    [
        "thanks",
        "thank",
        "thx",
        "ty",
        "hello",
        "hi",
        "hey",
        "hiya",
        "sure",
        "ok",
        "okay",
        "yes",
        "yeah",
        "yep",
        "yup",
        "nope",
        "great",
        "awesome",
        "cool",
        "nice",
        "wow",
        "bye",
        "goodbye",
        "welcome",
        "please",
        "lol",
        "haha",
        "hahaha",
        "glad",
        "good",
        "morning",
        "evening",
        "afternoon",
        "night",
        "cheers",
        "right",
        "alright",
        "appreciate",
        "appreciated",
        "np",
        "sounds",
        "sound",
        "amazing",
        "wonderful",
        "fantastic",
        "perfect",
        "love",
        "oh",
        "ah",
        "hmm",
        "absolutely",
        "totally",
        "definitely",
        "indeed",
        "agreed",
        "exactly",
        "true",
        "congrats",
        "congratulations",
        "sorry",
        "see",
        "soon",
        "care",
    ]
)


def terms(text: str) -> list[str]:
    """The tokens of ``text`` as terms: lowercased words, numbers and identifiers (inner
    ``_ . / : @ # -`` kept, so ``credit_card_9879898`` and ``src/app.py`` are one term)."""
    return [token.lower() for token in _TOKEN.findall(text)]


def _content(text: str) -> list[str]:
    return [
        term
        for term in terms(text)
        if term not in STOPWORDS and term not in PHATIC_WORDS and len(term) > 1
    ]


@lru_cache(maxsize=16_384)
def is_phatic(text: str) -> bool:
    """Whether ``text`` is phatic: it says nothing a later step could need. After a leading
    speaker label (``Name: ``), it is empty, a bracketed marker holding no digit
    (``[Request interrupted by user]``), an enumerator alone (``1.``), or at most five
    words of which at most one is neither a stop word nor a courtesy (``Thanks, Melanie!``)
    and none holds a digit or an identifier's marks."""
    body = _LABEL.sub("", text, count=1)
    if not body.strip() or _MARKER.fullmatch(body) or _ENUMERATOR.fullmatch(body):
        return True
    words = terms(body)
    if len(words) > 5 or any(_SPECIFIC.search(token) for token in _TOKEN.findall(body)):
        return False
    return len(_content(body)) <= 1


_DIRECTIVE: Final = re.compile(
    r"\b(?:from now on|going forward|from here on|always|never|must|must not|do not|don't|"
    r"make sure|be sure to|remember to|every time|whenever|should not|shouldn't)\b",
    re.IGNORECASE,
)


def is_directive(text: str) -> bool:
    """Whether ``text`` states a standing rule for what follows (``from now on``,
    ``always``, ``never``, ``must``, ``do not``, ``make sure``, ...): a directive a later
    step must still obey, whatever the domain."""
    return _DIRECTIVE.search(text) is not None


def template(text: str) -> str:
    """``text`` lowercased with its numbers blanked and its punctuation dropped: two lines
    with the same template say the same thing (near duplicates)."""
    return " ".join(_NUMBER.sub("#", term) for term in terms(text))


class Salience:
    """Term weights over ``documents`` (the texts of the items a compaction folds)."""

    __slots__ = ("_count", "_df")

    def __init__(self, documents: Iterable[str]) -> None:
        self._df: Counter[str] = Counter()
        self._count = 0
        for document in documents:
            self._count += 1
            self._df.update(set(terms(document)))

    def idf(self, term: str) -> float:
        """BM25's inverse document frequency of ``term`` (at least a small positive value)."""
        df = self._df.get(term, 0)
        return math.log(1.0 + (self._count - df + 0.5) / (df + 0.5))

    def weights(self, text: str) -> dict[str, float]:
        """The weight of each distinct content term of ``text`` (module docstring)."""
        body = _LABEL.sub("", text, count=1)
        weights: dict[str, float] = {}
        tokens = _TOKEN.findall(body)
        for index, token in enumerate(tokens):
            term = token.lower()
            if term in STOPWORDS or term in PHATIC_WORDS or len(term) < 2 or term in weights:
                continue
            weight = self.idf(term)
            if _SPECIFIC.search(token):
                weight *= 2.0
            elif token[0].isupper() and index > 0 and not _sentence_start(body, token):
                weight *= 1.5
            weights[term] = weight
        return weights

    def score(self, text: str) -> float:
        """The sum of :meth:`weights`."""
        return sum(self.weights(text).values())


def _sentence_start(text: str, token: str) -> bool:
    at = text.find(token)
    before = text[:at].rstrip()
    return not before or before[-1] in '.!?:"“'


def novelty_order(texts: Sequence[str], salience: Salience) -> list[tuple[int, float]]:
    """``(index, gain)`` of ``texts`` in the order a greedy reader takes them: each time the
    text whose terms not yet said weigh most (ties: the later text first), its gain being
    that weight. Lazy greedy: O(n log n) recomputations in practice."""
    import heapq

    weights = [salience.weights(text) for text in texts]
    heap = [(-sum(w.values()), -index, index) for index, w in enumerate(weights)]
    heapq.heapify(heap)
    said: set[str] = set()
    order: list[tuple[int, float]] = []
    while heap:
        _weight, tie, index = heapq.heappop(heap)
        gain = sum(weight for term, weight in weights[index].items() if term not in said)
        if heap and gain < -heap[0][0] - 1e-12:
            heapq.heappush(heap, (-gain, tie, index))
            continue
        order.append((index, round(gain, 6)))
        said.update(weights[index])
    return order
