"""A transcript file, opened: its format settled (given, or detected and checked), then its
entries, lazily, each with the thread it belongs to.

:func:`open_transcript` reads a stream's first values to settle the format;
:func:`import_values` turns the opened transcript into entries with the format's parser;
:func:`parse_bytes` (and :func:`parse_openai`, :func:`parse_anthropic`, :data:`FORMATS`) does
both for a transcript held in memory. A file not in the format asked for, or in none registre
reads, raises :class:`WrongFormatError`.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from registre.importers.anthropic import parse_anthropic_values
from registre.importers.claude_code import parse_claude_code_values
from registre.importers.core import At, Conversation, ImportedEntry, TranscriptError
from registre.importers.detect import PLAIN_MESSAGE_FORMATS, detect
from registre.importers.langchain import parse_langchain_values
from registre.importers.openai_chat import parse_openai_values
from registre.importers.openai_responses import parse_responses_values
from registre.importers.openhands import parse_openhands_values
from registre.importers.pairing import Pairing
from registre.importers.reading import read_values
from registre.importers.swe_agent import parse_swe_agent_values
from registre.importers.tau_bench import parse_tau_bench_values

__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "OpenedTranscript",
    "Piece",
    "WrongFormatError",
    "import_values",
    "open_transcript",
    "parse_anthropic",
    "parse_bytes",
    "parse_openai",
]

Piece = tuple[str | None, ImportedEntry]
"""An entry and the thread key it belongs to (``None``: the one thread imported into;
tau-bench: the task's key)."""

_Values = Iterator[tuple[Any, At]]
_Single = Callable[[_Values, Conversation], Iterator[ImportedEntry]]

_SINGLE: dict[str, _Single] = {
    "openai": parse_openai_values,
    "openai-responses": parse_responses_values,
    "anthropic": parse_anthropic_values,
    "claude-code": parse_claude_code_values,
    "swe-agent": parse_swe_agent_values,
    "openhands": parse_openhands_values,
    "langchain": parse_langchain_values,
}
FORMAT_NAMES: tuple[str, ...] = (*_SINGLE, "tau-bench")
"""Every format ``--format`` takes besides ``auto``."""


_PEEK = 64
"""Values read to settle a file whose first message is a plain ``{role, content}``."""


class WrongFormatError(TranscriptError):
    """The file is not in the format asked for (or in none registre reads)."""


@dataclass
class OpenedTranscript:
    """A transcript file ready to import: its format (given or detected), why, its layout."""

    fmt: str
    why: str
    layout: str
    values: _Values
    detected: str | None = None


def open_transcript(stream: IO[bytes], fmt: str = "auto") -> OpenedTranscript:
    """Read the first value of ``stream`` to settle its format.

    ``fmt`` ``auto`` detects it; a named format is checked against what the file looks like
    (:class:`WrongFormatError`, saying which format it looks like). An empty file is
    ``fmt`` itself (``openai`` for ``auto``) with no values.
    """
    layout, values = read_values(stream)
    first = next(values, None)
    if first is None:
        chosen = "openai" if fmt == "auto" else fmt
        return OpenedTranscript(chosen, "an empty file", layout, values)
    value, at = first
    detected, why = detect(value)
    seen = [first]
    while detected == "openai" and why.startswith("a plain") and len(seen) < _PEEK:
        later = next(values, None)  # a plain first message: let a later one decide
        if later is None:
            break
        seen.append(later)
        more, more_why = detect(later[0])
        if more is not None and not more_why.startswith("a plain"):
            detected, why = more, f"{more_why} (at {later[1]})"
    if fmt == "auto":
        if detected is None:
            raise WrongFormatError(
                str(at),
                f"cannot tell the transcript format: the file starts with {why}; give --format "
                f"(one of {', '.join(FORMAT_NAMES)})",
            )
        chosen = detected
    else:
        plain = detected == "openai" and why.startswith("a plain")
        if (
            detected is not None
            and detected != fmt
            and not (plain and fmt in PLAIN_MESSAGE_FORMATS)
        ):
            raise WrongFormatError(
                str(at),
                f"--format {fmt} given, but the file looks like {detected} ({why}); "
                f"use --format {detected} or --format auto",
            )
        chosen = fmt
    return OpenedTranscript(chosen, why, layout, itertools.chain(seen, values), detected)


def import_values(
    opened: OpenedTranscript, conversation_for: Callable[[str | None], Conversation]
) -> Iterator[Piece]:
    """Every entry of an opened transcript, lazily, with its thread key.

    ``conversation_for(key)`` gives the conversation (with the thread's pairing) of each
    thread key; single-thread formats ask only for ``None``.
    """
    if opened.fmt == "tau-bench":
        yield from parse_tau_bench_values(opened.values, conversation_for)
        return
    parse = _SINGLE.get(opened.fmt)
    if parse is None:
        raise WrongFormatError("format", f"unknown format {opened.fmt!r}")
    conversation = conversation_for(None)
    for entry in parse(opened.values, conversation):
        yield None, entry


def parse_bytes(
    data: bytes, fmt: str = "auto", pairing: Pairing | None = None
) -> list[ImportedEntry]:
    """All entries of a transcript held in memory (one thread: for tau-bench, one task)."""
    opened = open_transcript(io.BytesIO(bytes(data)), fmt)
    conversations: dict[str | None, Conversation] = {}

    def conversation_for(key: str | None) -> Conversation:
        if key not in conversations:
            if conversations:
                raise TranscriptError("$", "the file holds several tasks; import it per task")
            conversations[key] = Conversation(opened.fmt, pairing)
        return conversations[key]

    return [entry for _key, entry in import_values(opened, conversation_for)]


def parse_openai(data: bytes) -> list[ImportedEntry]:
    """Entries of OpenAI chat-completions messages (JSONL or a JSON array)."""
    return parse_bytes(data, "openai")


def parse_anthropic(data: bytes) -> list[ImportedEntry]:
    """Entries of an Anthropic Messages conversation."""
    return parse_bytes(data, "anthropic")


def _parser(fmt: str) -> Callable[[bytes], list[ImportedEntry]]:
    def parse(data: bytes) -> list[ImportedEntry]:
        return parse_bytes(data, fmt)

    return parse


FORMATS: dict[str, Callable[[bytes], list[ImportedEntry]]] = {
    name: _parser(name) for name in FORMAT_NAMES
}
"""Transcript formats by the name the CLI's ``--format`` takes: bytes to entries."""
