"""LoCoMo conversations as the user brings them, read into plain records.

LoCoMo (Maharana et al., ACL 2024; ``snap-research/locomo``) is a set of long two-speaker
conversations split into dated sessions, with questions whose evidence names the turns that
hold the answer (``D<session>:<turn>``). The project ships none of it: :func:`load_locomo`
reads the user's copy in any of the shapes it is published in --

* the public ``locomo10.json``: a JSON list of samples ``{"sample_id", "conversation":
  {"speaker_a", "speaker_b", "session_N", "session_N_date_time", ...}, "qa": [...]}``;
* one such sample (a JSON object with ``conversation``);
* a per-conversation file (``speaker_a``, ``session_N`` and ``qa`` at the top level, as in
  ``data/multimodal_dialog/locomo10_v2/*.json``), or a directory of them;
* a zip of any of the above (``data/locomo10.zip``).

:func:`pick_questions` chooses the questions a run asks, deterministically.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from registre.errors import MalformedError

__all__ = [
    "CATEGORIES",
    "LocomoConversation",
    "LocomoError",
    "LocomoQuestion",
    "LocomoSession",
    "LocomoTurn",
    "load_locomo",
    "pick_questions",
]

CATEGORIES: Final = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
"""The question categories a run asks, by LoCoMo's number (5, adversarial, has no answer in
the conversation and is never asked)."""

_SESSION: Final = re.compile(r"session_(\d+)")
_DIA_ID: Final = re.compile(r"D\d+:\d+")


class LocomoError(MalformedError):
    """The file is not LoCoMo data in a shape :func:`load_locomo` reads."""


@dataclass(frozen=True)
class LocomoTurn:
    """One turn: its ``dia_id`` (``D3:14``), speaker, and text as written to the ledger
    (``"Speaker: text"``, a shared photo's caption appended as ``[shares CAPTION]``)."""

    dia_id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class LocomoSession:
    """Session ``number`` (from 1), its date line as given, and its turns in order."""

    number: int
    date: str
    turns: tuple[LocomoTurn, ...]


@dataclass(frozen=True)
class LocomoQuestion:
    """A question, its gold answer as text, the dia_ids of its evidence turns, its category."""

    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class LocomoConversation:
    """One conversation: speaker A (the user) and B (the assistant), sessions, questions."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[LocomoSession, ...]
    questions: tuple[LocomoQuestion, ...]

    @property
    def turns(self) -> int:
        """How many turns the conversation has."""
        return sum(len(session.turns) for session in self.sessions)


def load_locomo(path: Path) -> list[LocomoConversation]:
    """Every conversation at ``path`` (module docstring), in file then sample order.
    LocomoError (a MalformedError) for a file in none of those shapes; OSError as raised."""
    if path.is_dir():
        files = sorted(path.glob("*.json"), key=_natural)
        if not files:
            raise LocomoError(f"{path}: a directory with no .json file")
        return [conv for file in files for conv in _document(_read(file), file.stem, file)]
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = sorted(
                (name for name in archive.namelist() if name.endswith(".json")), key=_natural
            )
            if not names:
                raise LocomoError(f"{path}: a zip with no .json member")
            found: list[LocomoConversation] = []
            for name in names:
                try:
                    data = json.loads(archive.read(name))
                except ValueError as error:
                    raise LocomoError(f"{path}!{name}: not JSON ({error})") from None
                found.extend(_document(data, Path(name).stem, Path(name)))
            return found
    return list(_document(_read(path), path.stem, path))


def pick_questions(
    conversation: LocomoConversation, count: int, categories: frozenset[int] = frozenset(CATEGORIES)
) -> list[LocomoQuestion]:
    """Up to ``count`` questions of ``categories`` whose evidence names at least one turn of
    the conversation: the first ``count`` by SHA-256 of ``sample_id`` and the question (a
    fixed, unbiased choice), returned in the conversation's order."""
    known = {turn.dia_id for session in conversation.sessions for turn in session.turns}
    eligible = [
        (index, question)
        for index, question in enumerate(conversation.questions)
        if question.category in categories and any(d in known for d in question.evidence)
    ]

    def rank(item: tuple[int, LocomoQuestion]) -> bytes:
        key = f"{conversation.sample_id}\n{item[0]}\n{item[1].question}"
        return hashlib.sha256(key.encode()).digest()

    chosen = sorted(eligible, key=rank)[: max(0, count)]
    return [question for _index, question in sorted(chosen, key=lambda item: item[0])]


def _natural(path: Path | str) -> tuple[int, str]:
    stem = Path(path).stem
    return (int(stem), stem) if stem.isdigit() else (1 << 62, str(path))


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except ValueError as error:
        raise LocomoError(f"{path}: not JSON ({error})") from None


def _document(data: Any, stem: str, where: Path) -> Iterator[LocomoConversation]:
    if isinstance(data, list):
        for index, sample in enumerate(data):
            yield _sample(sample, f"{stem}-{index}", f"{where}[{index}]")
    else:
        yield _sample(data, stem, str(where))


def _sample(sample: Any, default_id: str, where: str) -> LocomoConversation:
    if not isinstance(sample, Mapping):
        raise LocomoError(f"{where}: expected a LoCoMo sample (a JSON object)")
    conversation = sample.get("conversation", sample)
    if not isinstance(conversation, Mapping) or "speaker_a" not in conversation:
        raise LocomoError(f"{where}: no conversation with speaker_a and session_N")
    speaker_a = str(conversation["speaker_a"])
    speaker_b = str(conversation.get("speaker_b", ""))
    numbers = sorted(
        int(match.group(1))
        for key in conversation
        if (match := _SESSION.fullmatch(str(key))) and isinstance(conversation[key], list)
    )
    sessions = tuple(
        LocomoSession(
            number,
            str(conversation.get(f"session_{number}_date_time", "")),
            tuple(
                _turn(turn, f"{where}.session_{number}")
                for turn in conversation[f"session_{number}"]
            ),
        )
        for number in numbers
    )
    if not any(session.turns for session in sessions):
        raise LocomoError(f"{where}: the conversation has no turn")
    qa = sample.get("qa", [])
    if not isinstance(qa, list):
        raise LocomoError(f"{where}.qa: expected a list")
    questions = tuple(q for q in (_question(item) for item in qa) if q is not None)
    return LocomoConversation(
        str(sample.get("sample_id", default_id)), speaker_a, speaker_b, sessions, questions
    )


def _turn(turn: Any, where: str) -> LocomoTurn:
    if not isinstance(turn, Mapping) or not {"speaker", "dia_id", "text"} <= turn.keys():
        raise LocomoError(f"{where}: expected turns with speaker, dia_id and text")
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text += f" [shares {caption.strip()}]"
    return LocomoTurn(str(turn["dia_id"]), str(turn["speaker"]), text)


def _question(item: Any) -> LocomoQuestion | None:
    """A question with an answer, or None (adversarial ones have none)."""
    if not isinstance(item, Mapping) or "answer" not in item or "question" not in item:
        return None
    raw = item.get("evidence", [])
    evidence = tuple(
        dia_id
        for part in (raw if isinstance(raw, list) else [raw])
        for dia_id in _DIA_ID.findall(str(part))
    )
    category = item.get("category")
    return LocomoQuestion(
        str(item["question"]),
        str(item["answer"]),
        evidence,
        category if type(category) is int else 0,
    )
