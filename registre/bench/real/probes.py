"""Probes of an agent transcript: what the agent reuses, that its context must carry.

An agent loop makes a model call before each step (an assistant turn with its tool calls).
The probes of the call before step ``k`` are the terms of the agent's own output in steps
``k .. k+4`` (its text and tool-call arguments) that already occur in the thread before the
call -- what the agent takes back from its history within five steps:

* ``path`` -- file paths (a ``/`` between name parts) and file names with a known extension;
* ``id`` -- tokens of at least 6 characters mixing letters and digits
  (``credit_card_9879898``, ``HAT001``, hashes, UUIDs);
* ``symbol`` -- code identifiers: dotted (``os.path.join``), snake_case, camelCase;
* ``number`` -- numbers of at least 3 digits (``1333``, ``120.50``);
* ``error`` -- a line of an earlier tool output that reports an error: it starts with
  ``Traceback (most recent call last)``, with an exception name and a colon
  (``TypeError: ...``, pytest's ``E   KeyError: ...``), or with ``error``, ``fatal``,
  ``FAILED`` or ``ERROR`` (after an optional ``path:line:`` prefix) -- a line of code that
  merely names an exception (``except OSError:``) is not one; it is a probe when the agent's
  next five steps use its exception name or one of its terms above. The probe is the whole
  line.

A term belongs to the first kind that matches, in that order. A probe is recalled when its
text occurs in the context (an ``error`` line: whitespace-normalized, in one message).

:func:`policy_sentences` are the sentences of the thread's leading system prompt with at
least :data:`POLICY_MIN_WORDS` words; one is recalled when it occurs verbatim
(whitespace-normalized) in one message of the context.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

from registre.bench.real.text import normalize

__all__ = [
    "FAR_ENTRIES",
    "POLICY_MIN_WORDS",
    "PROBE_KINDS",
    "REUSE_STEPS",
    "error_keys",
    "error_lines",
    "policy_sentences",
    "reused",
    "terms",
]

PROBE_KINDS: Final = ("path", "id", "symbol", "number", "error")
"""The kinds of probe, in the order a term is classified."""
REUSE_STEPS: Final = 5
"""A probe of the call before step k is reused in steps k .. k + REUSE_STEPS - 1."""
FAR_ENTRIES: Final = 20
"""A probe whose latest earlier occurrence is at least this many entries before the call is
also counted in the ``far`` group (what only a memory, not the recent tail, can carry)."""
POLICY_MIN_WORDS: Final = 5
"""A system-prompt sentence with fewer words is not a policy sentence."""

_EXTENSIONS: Final = (
    "py|pyi|js|ts|tsx|jsx|json|jsonl|md|rst|txt|toml|yaml|yml|cfg|ini|sh|c|h|cc|cpp|hpp|go|"
    "rs|java|kt|rb|php|html|css|sql|lock|log|csv|xml|ipynb|patch|diff"
)
_PATH: Final = re.compile(
    r"(?<![\w@:/.-])(?:~|\.{1,2})?/?(?:[\w.+-]+/)+[\w.+-]*[\w+-]"
    rf"|\b[\w-]+\.(?:{_EXTENSIONS})\b"
)
_ID: Final = re.compile(r"\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9][\w-]{5,}\b")
_SYMBOL: Final = re.compile(
    r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b"  # dotted
    r"|\b_*[A-Za-z][A-Za-z0-9]*_\w+\b"  # snake_case
    r"|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z0-9]+[A-Z]\w*\b"  # camelCase, PascalCase
)
_NUMBER: Final = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")
_ERROR_LINE: Final = re.compile(
    r"^(?:Traceback \(most recent call last\)"
    r"|E?\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\b(?::|$)"
    r"|(?:\S+:\d+(?::\d+)?:\s*)?(?:error|fatal|FAILED|ERROR)\b)"
)
_EXCEPTION: Final = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning)\b")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+")
_MARKER: Final = re.compile(r"^(?:[-*•>#]+|\d+[.)])\s*")


def terms(text: str) -> dict[str, str]:
    """The probe-able terms of ``text``: term -> kind (module docstring)."""
    found: dict[str, str] = {}
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in taken)

    for kind, pattern in (("path", _PATH), ("id", _ID), ("symbol", _SYMBOL)):
        for match in pattern.finditer(text):
            term = match.group(0)
            if len(term) < 4 or not free(match.start(), match.end()):
                continue
            if kind == "path" and "/" in term and not _path_like(term):
                continue
            taken.append(match.span())
            found.setdefault(term, kind)
    for match in _NUMBER.finditer(text):
        digits = sum(char.isdigit() for char in match.group(0))
        if digits >= 3 and free(*match.span()):
            found.setdefault(match.group(0).rstrip(","), "number")
    return found


def _path_like(term: str) -> bool:
    """A slashed term that names a file or folder, not prose (``and/or``)."""
    parts = [part for part in term.split("/") if part]
    return (
        len(parts) >= 3
        or any("." in part or "_" in part for part in parts)
        or (term.startswith(("/", "./", "../", "~")))
    )


def error_lines(text: str) -> list[str]:
    """The lines of a tool output that report an error (module docstring), normalized,
    each at most 300 characters and at least 8."""
    lines = []
    for raw in text.splitlines():
        line = normalize(raw)
        if 8 <= len(line) <= 300 and _ERROR_LINE.search(line):
            lines.append(line)
    return lines


def error_keys(line: str) -> set[str]:
    """What reusing an error line looks like: its exception names and terms."""
    return set(_EXCEPTION.findall(line)) | set(terms(line))


def policy_sentences(prompts: Iterable[str]) -> list[str]:
    """The policy sentences of the system prompt texts ``prompts`` (module docstring),
    normalized, distinct, in order."""
    seen: dict[str, None] = {}
    for prompt in prompts:
        for raw in prompt.splitlines():
            line = _MARKER.sub("", raw.strip())
            for sentence in _SENTENCE_END.split(line):
                sentence = normalize(sentence)
                if len(sentence.split()) >= POLICY_MIN_WORDS:
                    seen.setdefault(sentence, None)
    return list(seen)


def reused(outputs: Sequence[str]) -> dict[str, str]:
    """The terms of the agent's ``outputs`` (its next steps), term -> kind."""
    found: dict[str, str] = {}
    for output in outputs:
        for term, kind in terms(output).items():
            found.setdefault(term, kind)
    return found
