"""The transcript suite: any transcript the importers read, replayed as an agent loop, the
context of every model call scored on the probes the agent reuses.

Protocol (``docs/design/2026-12-06-real-data-bench.md``), per transcript and budget: the
file's entries (:mod:`registre.importers`; a tau-bench file's tasks one after another in one
thread, as one support agent serves them) are appended to a fresh thread; before each step
of the agent (an assistant turn or tool call following anything else) a model call is made
(:class:`~registre.bench.real.replay.LedgerReplay`), and each baseline builds its context for
the same call from the same transcript (BM25's query: the latest user turn and the pending
input, the messages after the agent's last output). Each context is scored
(:mod:`registre.bench.real.probes`): ``probes`` -- pooled recall of the probes of the call,
per kind and ``far``; ``policy`` -- the share of the system prompt's policy sentences in the
context; ``fill`` -- tokens sent / budget; refused calls count and score 0.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from registre.attest.notes import Signer
from registre.bench.real.locomo_run import render_messages
from registre.bench.real.methods import BASELINES, Transcript
from registre.bench.real.probes import (
    FAR_ENTRIES,
    PROBE_KINDS,
    REUSE_STEPS,
    error_keys,
    error_lines,
    policy_sentences,
    reused,
)
from registre.bench.real.replay import (
    LedgerReplay,
    baseline_rooms,
    scratch_dir,
)
from registre.bench.real.tally import Tallies
from registre.bench.real.text import normalize
from registre.context import Policy, TokenCounter, default_counter, entry_text
from registre.context.render import CONTROL_KINDS
from registre.importers import ImportedEntry, import_values, open_transcript
from registre.importers.core import Conversation

__all__ = ["TRANSCRIPT_SCORES", "TranscriptConfig", "load_entries", "run_transcripts"]

TRANSCRIPT_SCORES: Final = ("probes", "policy", "fill")
REGISTRE: Final = "registre"
_ASSISTANT_KINDS: Final = frozenset(("tool.call",))


@dataclass(frozen=True)
class TranscriptConfig:
    """``budgets`` in tokens; ``fmt``: the transcripts' format (``auto``: detected);
    ``counter``: the token counter (default: registre's); ``show``: write registre's context
    at the last call of each transcript at each budget into the work directory;
    ``baselines_full``: give the baselines the whole budget rather than the room registre's
    policy leaves beside its output reserve (``Policy.window_tokens``)."""

    budgets: tuple[int, ...] = (4000, 8000, 16000)
    fmt: str = "auto"
    counter: TokenCounter = field(default_factory=default_counter)
    show: bool = True
    baselines_full: bool = False


def load_entries(path: Path, fmt: str = "auto") -> tuple[str, list[ImportedEntry]]:
    """The format and entries of the transcript at ``path``, every thread of it (tau-bench:
    every task) one after another. Raises the importers' TranscriptError."""
    conversations: dict[str | None, Conversation] = {}
    with path.open("rb") as stream:
        opened = open_transcript(stream, fmt)

        def conversation_for(key: str | None) -> Conversation:
            if key not in conversations:
                conversations[key] = Conversation(opened.fmt)
            return conversations[key]

        entries = [entry for _key, entry in import_values(opened, conversation_for)]
    return opened.fmt, entries


def _is_agent(entry: ImportedEntry) -> bool:
    return entry.kind in _ASSISTANT_KINDS or (
        entry.kind == "turn" and entry.body.get("role") == "assistant"
    )


def steps_of(entries: Sequence[ImportedEntry]) -> list[tuple[int, int]]:
    """The agent's steps: ``(first, stop)`` index ranges of consecutive agent entries
    (assistant turns and tool calls; control entries between them do not split a step)."""
    steps: list[tuple[int, int]] = []
    start: int | None = None
    last = -1
    for index, entry in enumerate(entries):
        if entry.kind in CONTROL_KINDS:
            continue
        if _is_agent(entry):
            if start is None:
                start = index
            last = index
        elif start is not None:
            steps.append((start, last + 1))
            start = None
    if start is not None:
        steps.append((start, last + 1))
    return steps


def run_transcripts(
    paths: Sequence[Path],
    config: TranscriptConfig,
    workdir: Path,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the suite (module docstring), the ledgers in a scratch directory, the contexts
    shown written into ``workdir``; return the results
    (``registre-bench-real/1``, suite ``transcripts``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    signer = Signer.generate("bench")
    probes, calls, per = Tallies(), Tallies(), Tallies()
    described: list[dict[str, Any]] = []
    shown: dict[str, str] = {}
    started = time.perf_counter()
    for path in paths:
        fmt, entries = load_entries(path, config.fmt)
        steps = steps_of(entries)
        count = 0
        sentences = 0
        for budget in config.budgets:
            if progress:
                progress(f"{path.name} at {budget:,} tokens")
            with scratch_dir() as scratch:
                count, sentences, last = _run_one(
                    entries,
                    steps,
                    budget,
                    config.counter,
                    scratch,
                    signer,
                    path.name,
                    (probes, calls, per),
                    config.baselines_full,
                )
            if config.show and last is not None:
                name = f"context-transcript-{path.stem}-{budget}.txt"
                (workdir / name).write_text(last, encoding="utf-8")
                shown[f"{path.name}@{budget}"] = name
        described.append(
            {
                "name": path.name,
                "format": fmt,
                "entries": len(entries),
                "calls": len(steps),
                "probes": count,
                "policy_sentences": sentences,
            }
        )
    rows = []
    for key, tally in probes.items():
        row: dict[str, Any] = {"budget": key[0], "method": key[1], "kind": key[2]}
        row.update(tally.to_json(("probes",)))
        row.pop("calls")
        row.pop("refused")
        if key[2] == "all":
            row.update(calls[key[:2]].to_json(("policy", "fill")))
        rows.append(row)
    order = ["all", "far", *PROBE_KINDS]
    return {
        "schema": "registre-bench-real/1",
        "suite": "transcripts",
        "methods": [REGISTRE, *BASELINES],
        "budgets": list(config.budgets),
        "counter": config.counter.name,
        "baseline_room": baseline_rooms(config.budgets, config.baselines_full),
        "transcripts": described,
        "rows": sorted(rows, key=lambda r: (r["budget"], order.index(r["kind"]))),
        "per_transcript": [
            {"budget": key[0], "method": key[1], "kind": key[2], **t.to_json(("probes",))}
            for key, t in per.items()
        ],
        "shown": shown,
        "seconds": round(time.perf_counter() - started, 1),
    }


class _History:
    """The thread's text so far, with where each entry starts, for probe look-ups."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.starts: list[int] = []
        self.indices: list[int] = []
        self.size = 0
        self._joined: str | None = ""
        self.errors: dict[str, int] = {}  # error line -> index of its latest entry

    def add(self, index: int, entry: ImportedEntry) -> None:
        if entry.kind in CONTROL_KINDS:
            return
        text = entry_text(entry.kind, entry.body)
        self.parts.append(text)
        self.starts.append(self.size)
        self.indices.append(index)
        self.size += len(text) + 1
        self._joined = None
        if entry.kind == "tool.result":
            for line in error_lines(text):
                self.errors[line] = index

    @property
    def text(self) -> str:
        if self._joined is None:
            self._joined = "\n".join(self.parts)
        return self._joined

    def latest(self, term: str) -> int | None:
        """The index of the latest entry holding ``term``, or None."""
        at = self.text.rfind(term)
        if at < 0:
            return None
        return self.indices[bisect_right(self.starts, at) - 1]


def _probes(
    history: _History, outputs: Sequence[str], call_index: int
) -> list[tuple[str, str, bool]]:
    """``(text, kind, far)`` for each probe of the call before the agent's ``outputs``."""
    found: list[tuple[str, str, bool]] = []
    wanted = reused(outputs)
    for term, kind in wanted.items():
        latest = history.latest(term)
        if latest is not None:
            found.append((term, kind, call_index - latest >= FAR_ENTRIES))
    joined = "\n".join(outputs)
    for line, latest in history.errors.items():
        if any(key in joined for key in error_keys(line)):
            found.append((line, "error", call_index - latest >= FAR_ENTRIES))
    return found


def _run_one(
    entries: Sequence[ImportedEntry],
    steps: Sequence[tuple[int, int]],
    budget: int,
    counter: TokenCounter,
    workdir: Path,
    signer: Signer,
    name: str,
    tallies: tuple[Tallies, Tallies, Tallies],
    full: bool,
) -> tuple[int, int, str | None]:
    """Replay one transcript at ``budget``: how many probes and policy sentences it has, and
    registre's context at its last call."""
    policy_of_budget = Policy(budget_tokens=budget)
    room = budget if full else policy_of_budget.window_tokens()
    transcript = Transcript(counter, room, policy_of_budget)
    history = _History()
    starts = {first: number for number, (first, _stop) in enumerate(steps)}
    outputs = [
        "\n".join(
            entry_text(e.kind, e.body) for e in entries[first:stop] if e.kind not in CONTROL_KINDS
        )
        for first, stop in steps
    ]
    policy: list[str] = []
    total = 0
    last: str | None = None
    latest_user = ""
    try:
        with LedgerReplay(workdir, "transcript", budget, counter, signer) as replay:
            for index, entry in enumerate(entries):
                step = starts.get(index)
                if step is not None:
                    found = _probes(history, outputs[step : step + REUSE_STEPS], index)
                    total += len(found)
                    call = replay.call()
                    pending = _pending(transcript)
                    query = f"{latest_user}\n{pending}"
                    views: dict[str, tuple[list[str], int] | None] = {
                        method: (view.contents, view.tokens)
                        for method in BASELINES
                        for view in (transcript.view(method, query),)
                    }
                    if call.projection is None:
                        views[REGISTRE] = None
                    else:
                        projection = call.projection
                        views[REGISTRE] = (
                            [message.content for message in projection.messages],
                            projection.tokens,
                        )
                        last = render_messages(
                            projection.messages,
                            f"{name}: the call before entry {index} "
                            f"({projection.tokens} of {budget} tokens)",
                        )
                    for method, seen in views.items():
                        _score(method, seen, found, policy, budget, name, tallies)
                seq = replay.append(entry.kind, entry.body, entry.actor)
                transcript.add(seq, entry.kind, entry.body)
                history.add(index, entry)
                if transcript.system and len(transcript.messages) == transcript.system:
                    prompt = transcript.messages[: transcript.system]  # the leading system turns
                    policy = policy_sentences(message.content for message in prompt)
                if entry.kind == "turn" and entry.body.get("role") == "user":
                    latest_user = str(entry.body.get("text", ""))
    finally:
        transcript.close()
    return total, len(policy), last


def _pending(transcript: Transcript) -> str:
    """The text of the messages after the agent's last output."""
    parts: list[str] = []
    for message in reversed(transcript.messages):
        if message.role == "assistant":
            break
        parts.append(message.content)
    return "\n".join(reversed(parts))


def _score(
    method: str,
    seen: tuple[list[str], int] | None,
    found: Sequence[tuple[str, str, bool]],
    policy: Sequence[str],
    budget: int,
    name: str,
    tallies: tuple[Tallies, Tallies, Tallies],
) -> None:
    probes, calls, per = tallies
    contents, tokens = seen if seen is not None else ([], 0)
    text = "\n".join(contents)
    normalized = [normalize(content) for content in contents]
    for term, kind, far in found:
        hit = any(term in m for m in normalized) if kind == "error" else term in text
        score = {"probes": float(hit)}
        probes[(budget, method, "all")].add(score)
        probes[(budget, method, kind)].add(score)
        if far:
            probes[(budget, method, "far")].add(score)
        per[(budget, method, name)].add(score)
    share = None
    if policy:
        share = sum(any(s in message for message in normalized) for s in policy) / len(policy)
    calls[(budget, method)].add({"policy": share, "fill": tokens / budget}, refused=seen is None)
