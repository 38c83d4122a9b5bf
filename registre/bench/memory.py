"""Peak resident memory of one step of a ``registre bench`` run, and its wall time.

:class:`StepMeter` times a block of this process and reads its peak resident set size
(RSS) over that block:

* ``vmhwm`` -- on Linux, the kernel's own high-water mark: ``/proc/self/clear_refs`` is
  written ``5`` before the block (which resets ``VmHWM`` to the current RSS) and
  ``VmHWM`` is read from ``/proc/self/status`` after it. Exact, no sampling;
* ``sampled`` -- elsewhere (or when the reset is refused), a daemon thread reads the RSS
  every :data:`SAMPLE_SECONDS` and keeps the largest: a peak shorter than the period can
  be missed.

A step run in a child process (:mod:`registre.bench.stepproc`) reports the child's own
``ru_maxrss`` instead (``subprocess``): the peak of that process from its start, the
interpreter and its imports included, so nothing else the harness holds is counted.

Every figure is in MiB; ``start_mb`` is the RSS when the block began (the harness's own
memory is part of an in-process step's peak: what the step added is ``peak - start``).
"""

from __future__ import annotations

import resource
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final

__all__ = ["SAMPLE_SECONDS", "StepMeasure", "StepMeter", "current_rss_mb", "peak_rss_mb"]

SAMPLE_SECONDS: Final = 0.01
"""The sampler's period, where the kernel's high-water mark cannot be reset."""
_STATUS: Final = Path("/proc/self/status")
_CLEAR_REFS: Final = Path("/proc/self/clear_refs")


def _status_kb(field: str) -> int | None:
    try:
        with _STATUS.open(encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _maxrss_mb(usage: resource.struct_rusage) -> float:
    # ru_maxrss is in KiB on Linux, in bytes on macOS
    scale = 1 if sys.platform == "darwin" else 1024
    return round(float(usage.ru_maxrss) * scale / 2**20, 1)


def current_rss_mb() -> float | None:
    """This process's resident set size now (MiB), or None where it cannot be read."""
    kb = _status_kb("VmRSS")
    return None if kb is None else round(kb / 1024, 1)


def peak_rss_mb() -> float:
    """This process's peak RSS since it started (MiB), its own and that of its waited-for
    children, whichever is larger (a verifier with ``jobs > 1`` forks). Its own is the
    address space's high-water mark (``VmHWM``) where ``/proc`` has it: ``ru_maxrss``
    survives ``exec``, so a child started by a harness holding 400 MB would report 400 MB."""
    kb = _status_kb("VmHWM")
    own = (
        round(kb / 1024, 1)
        if kb is not None
        else _maxrss_mb(resource.getrusage(resource.RUSAGE_SELF))
    )
    children = _maxrss_mb(resource.getrusage(resource.RUSAGE_CHILDREN))
    return max(own, children)


def _reset_high_water() -> bool:
    try:
        _CLEAR_REFS.write_text("5", encoding="ascii")
    except OSError:
        return False
    return _status_kb("VmHWM") is not None


@dataclass(frozen=True)
class StepMeasure:
    """One step: wall ``seconds``, ``peak_mb`` and ``start_mb`` of RSS (MiB; None where
    they cannot be read) and ``how`` the peak was taken (module docstring)."""

    seconds: float
    peak_mb: float | None
    start_mb: float | None
    how: str

    def to_json(self) -> dict[str, Any]:
        """The step's object of ``results.json`` (``specs/bench.md``)."""
        return {
            "seconds": round(self.seconds, 6),
            "peak_rss_mb": self.peak_mb,
            "start_rss_mb": self.start_mb,
            "how": self.how,
        }


class StepMeter:
    """``with StepMeter() as meter: ...`` then ``meter.measure``: the block's wall time and
    peak RSS (module docstring). Not re-entrant: one meter at a time per process."""

    def __init__(self) -> None:
        self.measure: StepMeasure | None = None
        self._how = "sampled"
        self._peak_kb = 0
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self._start_mb: float | None = None
        self._began = 0.0

    def __enter__(self) -> StepMeter:
        self._start_mb = current_rss_mb()
        if _reset_high_water():
            self._how = "vmhwm"
        elif self._start_mb is not None:
            self._peak_kb = int(self._start_mb * 1024)
            self._sampler = threading.Thread(target=self._sample, daemon=True)
            self._sampler.start()
        else:
            self._how = "unavailable"
        self._began = time.perf_counter()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            kb = _status_kb("VmRSS")
            if kb is not None and kb > self._peak_kb:
                self._peak_kb = kb

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        seconds = time.perf_counter() - self._began
        peak: float | None
        if self._how == "vmhwm":
            kb = _status_kb("VmHWM")
            peak = None if kb is None else round(kb / 1024, 1)
        elif self._sampler is not None:
            self._stop.set()
            self._sampler.join()
            kb = max(self._peak_kb, _status_kb("VmRSS") or 0)
            peak = round(kb / 1024, 1)
        else:
            peak = None
        self.measure = StepMeasure(seconds, peak, self._start_mb, self._how)
