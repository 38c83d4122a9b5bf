"""Importing transcript files into threads: checked whole first, then appended in batches.

:func:`run_import` takes :class:`ImportJob` s (a file, its format, the thread it goes to) and

1. **checks** every file completely, streaming (memory does not grow with the file, except for
   the one-document formats, see :mod:`registre.importers.reading`), with each
   thread's tool-call pairing rebuilt from the entries it already holds, and the files of one
   thread read in order (so a file may start with the results of the calls the previous file
   left open). Any problem raises
   :class:`~registre.importers.TranscriptError` naming the file and the line or
   path, **before anything is written**;
2. **appends**: when all entries fit in one batch, they were kept from step 1 and are
   appended in one transaction per thread; otherwise the files are read again and appended
   ``batch`` entries per transaction. Step 1 has accepted every entry, so step 2 fails only
   if the database does (or another writer appends to the same thread meanwhile); the report
   then says how far it got.

Threads named by a job are created when ``create`` is set (``--thread-per-file``, tau-bench
tasks), else must exist (UnknownThreadError).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from registre.importers import (
    ImportedEntry,
    OpenedTranscript,
    Pairing,
    TranscriptError,
    import_values,
    open_transcript,
)
from registre.importers.core import Conversation
from registre.ledger.errors import UnknownThreadError
from registre.ledger.ledger import Ledger

__all__ = ["FileReport", "ImportJob", "ImportReport", "ImportedThread", "run_import"]

Progress = Callable[[str, int], None]
"""Called with the phase (``check`` or ``append``) and the number of bytes read since the
last call."""


@dataclass(frozen=True)
class ImportJob:
    """One file into ``thread`` (tau-bench: ``thread-TASK`` per task, or only ``task``)."""

    path: Path
    fmt: str
    thread: str
    task: str | None = None
    create: bool = False


@dataclass
class FileReport:
    path: str
    fmt: str
    why: str
    entries: int = 0


@dataclass
class ImportedThread:
    entries: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    created: bool = False


@dataclass
class ImportReport:
    files: list[FileReport] = field(default_factory=list)
    threads: dict[str, ImportedThread] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def entries(self) -> int:
        return sum(thread.entries for thread in self.threads.values())


class _Counting:
    """A binary stream that reports the bytes read through ``progress``."""

    def __init__(self, stream: IO[bytes], phase: str, progress: Progress | None) -> None:
        self._stream, self._phase, self._progress = stream, phase, progress

    def read(self, size: int = -1) -> bytes:
        return self._count(self._stream.read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._count(self._stream.readline(size))

    def _count(self, data: bytes) -> bytes:
        if self._progress is not None and data:
            self._progress(self._phase, len(data))
        return data


def _fail_in(path: Path, exc: TranscriptError, opened: OpenedTranscript | None) -> TranscriptError:
    reason = exc.reason
    if opened is not None and opened.detected not in (None, opened.fmt):
        reason += f" (read as {opened.fmt}; the file looks like {opened.detected})"
    error = type(exc)(f"{path}: {exc.where}", reason, exc.line)
    return error.with_hint(exc.hint) if exc.hint else error


class _Run:
    def __init__(self, ledger: Ledger, jobs: list[ImportJob], progress: Progress | None) -> None:
        self.ledger, self.jobs, self.progress = ledger, jobs, progress
        self.pairings: dict[str, Pairing] = {}
        self.exists: dict[str, bool] = {}

    def start_pairings(self) -> None:
        self.pairings = {}

    def pairing(self, thread: str) -> Pairing:
        if thread not in self.pairings:
            try:
                entries = self.ledger.thread(thread).entries()
                self.pairings[thread] = Pairing.from_entries((e.kind, e.body) for e in entries)
                self.exists[thread] = True
            except UnknownThreadError:
                self.pairings[thread] = Pairing()
                self.exists[thread] = False
        return self.pairings[thread]

    def entries(
        self, job: ImportJob, phase: str
    ) -> Iterator[tuple[str, ImportedEntry, OpenedTranscript]]:
        """``(thread, entry, opened)`` for every entry of ``job``'s file."""
        with job.path.open("rb") as raw:
            stream = _Counting(raw, phase, self.progress)
            opened = None
            try:
                opened = open_transcript(stream, job.fmt)  # type: ignore[arg-type]
                conversations: dict[str | None, Conversation] = {}

                def conversation_for(key: str | None) -> Conversation:
                    thread = _thread_of(job, key)
                    if key not in conversations:
                        conversations[key] = Conversation(
                            opened.fmt, self.pairing(thread), validate=phase == "check"
                        )
                    return conversations[key]

                tasks: set[str] = set()
                for key, entry in import_values(opened, conversation_for):
                    if key is not None:
                        tasks.add(key)
                    if job.task is not None and key != job.task:
                        continue
                    yield _thread_of(job, key), entry, opened
                if job.task is not None and tasks and job.task not in tasks:
                    raise TranscriptError(
                        "$", f"no task {job.task!r}; the file holds {', '.join(sorted(tasks))}"
                    )
                if not conversations:
                    conversation_for(None)
            except TranscriptError as exc:
                raise _fail_in(job.path, exc, opened) from None
            yield "", ImportedEntry("", {}, ""), opened  # end of file marker


def _thread_of(job: ImportJob, key: str | None) -> str:
    if key is None or job.task is not None:
        return job.thread
    return f"{job.thread}-{_safe(key)}"


def _safe(key: str) -> str:
    cleaned = "".join(char if char.isalnum() or char in "._:-" else "_" for char in key)
    return cleaned or "task"


def run_import(
    ledger: Ledger,
    jobs: list[ImportJob],
    *,
    batch: int = 10_000,
    progress: Progress | None = None,
    check_only: bool = False,
) -> ImportReport:
    """Check then append every job (module docstring); with ``check_only``, only check
    (nothing is written, no thread created). Raises TranscriptError (nothing written),
    UnknownThreadError for a missing thread a job may not create."""
    started = time.perf_counter()
    run = _Run(ledger, jobs, progress)
    report = ImportReport()
    for job in jobs:
        if not job.create:
            ledger.thread(job.thread)  # UnknownThreadError before any reading
    kept: list[tuple[str, ImportedEntry]] | None = []
    for job in jobs:
        file_report: FileReport | None = None
        for thread, entry, opened in run.entries(job, "check"):
            if file_report is None:
                file_report = FileReport(str(job.path), opened.fmt, opened.why)
                report.files.append(file_report)
            if not thread:
                continue
            file_report.entries += 1
            report.threads.setdefault(thread, ImportedThread()).entries += 1
            if kept is not None:
                kept.append((thread, entry))
                if len(kept) > batch:
                    kept = None
    if check_only:
        report.seconds = time.perf_counter() - started
        return report
    for thread, thread_report in report.threads.items():
        if not run.exists.get(thread, True):
            ledger.create_thread(thread)
            thread_report.created = True
    if kept is not None:
        by_thread: dict[str, list[ImportedEntry]] = {}
        for thread, entry in kept:
            by_thread.setdefault(thread, []).append(entry)
        for thread, items in by_thread.items():
            _append(ledger, thread, items, report.threads[thread])
    else:
        run.start_pairings()
        pending: dict[str, list[ImportedEntry]] = {}
        for job in jobs:
            for thread, entry, _opened in run.entries(job, "append"):
                if not thread:
                    continue
                items = pending.setdefault(thread, [])
                items.append(entry)
                if len(items) >= batch:
                    _append(ledger, thread, items, report.threads[thread])
                    pending[thread] = []
        for thread, items in pending.items():
            if items:
                _append(ledger, thread, items, report.threads[thread])
    report.seconds = time.perf_counter() - started
    return report


def _append(
    ledger: Ledger, thread: str, items: list[ImportedEntry], report: ImportedThread
) -> None:
    appended = ledger.thread(thread).append_many(items)
    if appended:
        if report.first_seq is None:
            report.first_seq = appended[0].seq
        report.last_seq = appended[-1].seq
