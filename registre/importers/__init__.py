"""Transcript import: agent transcripts in the shapes they come in, to ledger entries.

Pure parsing, no database: a file is read as a stream of JSON values
(:mod:`.reading`: JSONL, a JSON array item by item, or one document), its format detected
(:mod:`.detect`) or given, and each source message turned into entries by the format's module
(one per format below). Every message is kept losslessly (:mod:`.core`), every tool result
pairs with the most recent unanswered call of its id, in the file or earlier in the thread
(:mod:`.pairing`); :mod:`.transcript` opens a file and imports it. Problems raise
:class:`TranscriptError` naming the line or JSON path. Normative text: ``specs/entries.md``
section 6. The face is lazy: a name's module is imported when the name is first used.

============================  =====================================================
``--format``                  what it reads
============================  =====================================================
``openai``                    Chat Completions messages: JSONL or one JSON array
``openai-responses``          Responses API / Agents SDK items
``anthropic``                 Anthropic Messages ``{system, messages}`` (or messages)
``claude-code``               Claude Code session JSONL
``tau-bench``                 tau-bench results ``[{task_id, traj}]``: a thread per task
``swe-agent``                 SWE-agent / mini-swe-agent ``.traj``
``openhands``                 OpenHands event streams
``langchain``                 LangChain ``messages_to_dict`` dumps
============================  =====================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registre._lazy import lazy_face

if TYPE_CHECKING:
    from registre.importers.core import (
        ImportedEntry,
        TranscriptError,
        rebuild_message,
        skeleton_of,
    )
    from registre.importers.pairing import Pairing
    from registre.importers.transcript import (
        FORMAT_NAMES,
        FORMATS,
        OpenedTranscript,
        WrongFormatError,
        import_values,
        open_transcript,
        parse_anthropic,
        parse_bytes,
        parse_openai,
    )

__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "ImportedEntry",
    "OpenedTranscript",
    "Pairing",
    "TranscriptError",
    "WrongFormatError",
    "import_values",
    "open_transcript",
    "parse_anthropic",
    "parse_bytes",
    "parse_openai",
    "rebuild_message",
    "skeleton_of",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "core": ("ImportedEntry", "TranscriptError", "rebuild_message", "skeleton_of"),
        "pairing": ("Pairing",),
        "transcript": (
            "FORMATS",
            "FORMAT_NAMES",
            "OpenedTranscript",
            "WrongFormatError",
            "import_values",
            "open_transcript",
            "parse_anthropic",
            "parse_bytes",
            "parse_openai",
        ),
    },
)
