"""The working context on data the user brings: LoCoMo conversations and agent transcripts,
registre beside truncation, observation masking, the rolling summary and BM25 retrieval alone
(``specs/bench.md`` section 6). ``registre bench --suite locomo PATH`` and ``registre bench
--transcripts FILE...`` run it; so does ``python -m registre.bench.real``. The face is lazy:
a name's module is imported when the name is first used."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from registre.bench.real.compare import render_comparison
    from registre.bench.real.locomo import load_locomo
    from registre.bench.real.locomo_run import LocomoConfig, run_locomo
    from registre.bench.real.outputs import write_real_outputs
    from registre.bench.real.report import render_real_report
    from registre.bench.real.transcript_run import TranscriptConfig, run_transcripts

__all__ = [
    "LocomoConfig",
    "TranscriptConfig",
    "load_locomo",
    "render_comparison",
    "render_real_report",
    "run_locomo",
    "run_transcripts",
    "write_real_outputs",
]

_MODULES = {
    "LocomoConfig": "locomo_run",
    "TranscriptConfig": "transcript_run",
    "load_locomo": "locomo",
    "render_comparison": "compare",
    "render_real_report": "report",
    "run_locomo": "locomo_run",
    "run_transcripts": "transcript_run",
    "write_real_outputs": "outputs",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
