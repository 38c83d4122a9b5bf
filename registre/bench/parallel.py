"""Runs of ``registre bench --jobs N``: tasks in N worker processes, results in task order.

:func:`map_in_processes` calls one top-level ``function(*task, progress=...)`` per task in a
pool of ``jobs`` processes started with the ``spawn`` method (never ``fork``: the parent holds
a database engine and threads), and returns the results in the order of ``tasks``, whatever
order they finish in. Each worker's ``progress`` calls reach the parent's callback through a
queue, in batches, so a progress bar advances while the runs do.

A :class:`~registre.errors.RegistreError` raised in a worker comes back as a
:class:`BenchWorkerError` with the same message, hint and exit code (the CLI prints it as one
line, exactly as the serial run would); pending tasks are cancelled and the running ones
finish. A worker that dies (killed, out of memory) is a :class:`BenchWorkerError` too.
"""

from __future__ import annotations

import multiprocessing
import queue
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Final

from registre.errors import RegistreError, UnavailableError

__all__ = ["BatchedProgress", "BenchWorkerError", "map_in_processes"]

PROGRESS_BATCH: Final = 50
"""Planned entries a progress callback sums before it passes them on."""
_POLL_S: Final = 0.2

_progress_queue: Any = None  # in a worker: the queue to the parent's progress callback


class BenchWorkerError(RegistreError):
    """An error raised in a ``--jobs`` worker, carried to the parent with its exit code and
    hint (its message is the worker's error's)."""

    def __init__(self, message: str, exit_code: int = 2, hint: str | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.hint = hint

    def __reduce__(self) -> tuple[Any, ...]:
        return (BenchWorkerError, (str(self), self.exit_code, self.hint))


class BatchedProgress:
    """A progress callback (``progress(entries)``) that passes counts on to ``sink`` in sums
    of at least ``every``; :meth:`flush` passes on what is left."""

    def __init__(self, sink: Callable[[int], object], every: int = PROGRESS_BATCH) -> None:
        self._sink = sink
        self._every = every
        self._pending = 0

    def __call__(self, entries: int) -> None:
        self._pending += entries
        if self._pending >= self._every:
            self.flush()

    def flush(self) -> None:
        """Pass on the entries counted since the last sum passed on (if any)."""
        if self._pending:
            self._sink(self._pending)
            self._pending = 0


def _init_worker(progress_queue: Any) -> None:
    global _progress_queue
    _progress_queue = progress_queue


def _call(function: Callable[..., Any], task: tuple[Any, ...]) -> Any:
    """In a worker: ``function(*task, progress=...)``; a registre error becomes a
    BenchWorkerError (its class need not survive pickling)."""
    progress = BatchedProgress(_progress_queue.put)
    try:
        return function(*task, progress=progress)
    except RegistreError as exc:
        raise BenchWorkerError(str(exc), exc.exit_code, exc.hint) from None
    finally:
        progress.flush()


def _drain(progress_queue: Any, progress: Callable[[int], None] | None, timeout: float) -> None:
    try:
        entries = progress_queue.get(timeout=timeout) if timeout else progress_queue.get_nowait()
        while True:
            if progress is not None:
                progress(entries)
            entries = progress_queue.get_nowait()
    except queue.Empty:
        return


def map_in_processes(
    function: Callable[..., Any],
    tasks: Sequence[tuple[Any, ...]],
    jobs: int,
    progress: Callable[[int], None] | None = None,
) -> list[Any]:
    """``[function(*task, progress=...) for task in tasks]``, computed in ``jobs`` spawned
    processes; ``function`` must be importable (a module-level function) and ``tasks``
    picklable. Raises the first worker failure as a BenchWorkerError (or the worker's own
    exception when it is not a registre error)."""
    context = multiprocessing.get_context("spawn")
    progress_queue = context.Queue()
    try:
        with ProcessPoolExecutor(
            max_workers=max(1, min(jobs, len(tasks))),
            mp_context=context,
            initializer=_init_worker,
            initargs=(progress_queue,),
        ) as pool:
            futures = [pool.submit(_call, function, task) for task in tasks]
            _wait(futures, progress_queue, progress)
            results = [future.result() for future in futures]
    except BrokenProcessPool as exc:
        raise BenchWorkerError(
            f"a bench worker process died: {exc}", UnavailableError.exit_code
        ).with_hint("it may have run out of memory; use fewer --jobs") from None
    finally:
        _drain(progress_queue, progress, 0)
        progress_queue.close()
    return results


def _wait(
    futures: Sequence[Future[Any]], progress_queue: Any, progress: Callable[[int], None] | None
) -> None:
    """Until every future is done, pass progress on; on the first failure cancel the tasks
    not started and raise it."""
    remaining = list(futures)
    while remaining:
        _drain(progress_queue, progress, _POLL_S)
        for future in [f for f in remaining if f.done()]:
            remaining.remove(future)
            if future.exception() is not None:
                for other in remaining:
                    other.cancel()
                future.result()  # raises
