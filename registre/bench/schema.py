"""The ``results.json`` schema, ``registre-bench/5`` (``specs/bench.md``), and its checker.

:data:`RESULTS` describes the document as nested Python values: a dict lists required keys
(every key must be present; others are refused, so a renamed field cannot slip through), a
one-item list is "a list of these", :class:`MapOf` is an object with free keys,
:class:`Nullable` is "this, or null", and a tuple is "one of these types". ``Number`` is an
int or a float; ``None`` in a tuple allows null.
:func:`check_results` raises :class:`ResultsSchemaError` naming the first path that breaks it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from registre.errors import MalformedError

__all__ = ["RESULTS", "SCHEMA", "MapOf", "Nullable", "ResultsSchemaError", "check_results"]

SCHEMA: Final = "registre-bench/5"
"""The schema's name; a change of fields is a new name."""


class ResultsSchemaError(MalformedError):
    """A results document that does not follow ``registre-bench/5``."""


@dataclass(frozen=True)
class MapOf:
    """An object with any keys, every value following ``value``."""

    value: Any


@dataclass(frozen=True)
class Nullable:
    """``value``, or null."""

    value: Any


Number: Final = (int, float)
_NUM_OR_NULL: Final = (int, float, None)
_LATENCY: Final = {
    "count": int,
    "p50_ms": _NUM_OR_NULL,
    "p99_ms": _NUM_OR_NULL,
    "max_ms": _NUM_OR_NULL,
    "total_s": Number,
}
_PIN: Final = {"id": str, "kind": str, "text": str}
_STEP: Final = {
    "seconds": Number,
    "peak_rss_mb": _NUM_OR_NULL,
    "start_rss_mb": _NUM_OR_NULL,
    "how": str,
}
_COUNTED_STEP: Final = {**_STEP, "count": int}
_SLICE: Final = {
    "part": int,
    "from": int,
    "to": int,
    "ours_samples": int,
    "ours_p50_ms": _NUM_OR_NULL,
    "ours_p99_ms": _NUM_OR_NULL,
    "model_calls": int,
    "model_call_p50_ms": _NUM_OR_NULL,
    "model_call_p99_ms": _NUM_OR_NULL,
    "call_total_p50_ms": _NUM_OR_NULL,
    "call_total_p99_ms": _NUM_OR_NULL,
}
_APPENDS: Final = {
    "count": int,
    "body_bytes": int,
    "raw_sqlite_txn_per_second": _NUM_OR_NULL,
    "raw_sign_per_second": Number,
    "single_per_second": Number,
    "concurrent_writers": int,
    "concurrent_per_second": Number,
    "batch_size": int,
    "batch_per_second": Number,
    "single_vs_raw": _NUM_OR_NULL,
    "concurrent_vs_raw": _NUM_OR_NULL,
    "batch_vs_sign": Number,
    "batch_vs_sign_cpu": Number,
}
_METHOD: Final = {
    "calls": int,
    "refused": {"calls": int, "pins_fit": int},
    "fact_recall": {
        "needs": int,
        "recalled": int,
        "verbatim": int,
        "summarized": int,
        "share": _NUM_OR_NULL,
        "by_kind": MapOf({"needs": int, "recalled": int}),
    },
    "pointers": {
        "samples": int,
        "spans": int,
        "span_p50": (int, None),
        "span_p95": (int, None),
        "span_max": (int, None),
    },
    "count_only": {"lines": int, "count_only": int, "share": _NUM_OR_NULL},
    "compactions": {"count": int, "not_reducing": int},
    "stable_prefix": {
        "declared_share": _NUM_OR_NULL,
        "identical_share": _NUM_OR_NULL,
        "reused_share": _NUM_OR_NULL,
    },
    "tokens": {"mean_use": _NUM_OR_NULL, "max_use": _NUM_OR_NULL},
}
_RUN: Final = {
    "size": int,
    "budget": int,
    "policy": MapOf(int),
    "thread": str,
    "entries": int,
    "kinds": MapOf(int),
    "phases": MapOf(int),
    "storyline": MapOf(int),
    "lean": bool,
    "wall_s": Number,
    "run_s": Number,
    "harness_s": Number,
    "harness": {
        "read_back_s": Number,
        "working_context_s": Number,
        "samples_s": Number,
        "naive_s": Number,
        "checkpoints_s": Number,
        "pointers_s": Number,
        "merkle_s": Number,
        "signatures_s": Number,
    },
    "steps": {
        "append": _STEP,
        "project": _COUNTED_STEP,
        "checkpoint": _STEP,
        "prove": _COUNTED_STEP,
        "export": _STEP,
        "verify": _STEP,
    },
    "append": {
        "entries": int,
        "ledger_s": Number,
        "per_second": _NUM_OR_NULL,
        "plain_per_second": _NUM_OR_NULL,
        "steps": MapOf(_LATENCY),
        "checkpoints": _LATENCY,
    },
    "projection": {
        "ours": {**_LATENCY, "points": [[Number]]},
        "naive": {**_LATENCY, "points": [[Number]]},
        "naive_equal": int,
        "naive_ratio": {
            "samples": int,
            "at": (int, None),
            "at_largest": _NUM_OR_NULL,
            "min_from_1000": _NUM_OR_NULL,
        },
        "by_third": [_SLICE],
        "by_history": [
            {
                "from": int,
                "to": (int, None),
                "ours_samples": int,
                "ours_p50_ms": _NUM_OR_NULL,
                "ours_p99_ms": _NUM_OR_NULL,
                "naive_samples": int,
                "naive_p50_ms": _NUM_OR_NULL,
                "model_calls": int,
                "model_call_p50_ms": _NUM_OR_NULL,
                "model_call_p99_ms": _NUM_OR_NULL,
            }
        ],
    },
    "model_calls": {
        **_LATENCY,
        "points": [[Number]],
        "with_compact": _LATENCY,
        "refused": int,
        "refusals": MapOf(int),
    },
    "compaction": {
        **_LATENCY,
        "checks": _LATENCY,
        "folds": int,
        "refolds": int,
        "stub_only": int,
        "stubbed": int,
        "seqs": [int],
    },
    "context": {
        "budget": int,
        "high_water": int,
        "final_tokens": int,
        "final_history_tokens": int,
        "compression_ratio": _NUM_OR_NULL,
        "mean_use": _NUM_OR_NULL,
        "max_use": _NUM_OR_NULL,
        "final_status": MapOf(int),
        "series": [[int]],
        "recent": [[int]],
    },
    "pins?": {
        "samples": int,
        "checks": int,
        "ours_kept": int,
        "truncation_kept": int,
        "by_kind": MapOf({"checks": int, "ours_kept": int, "truncation_kept": int}),
        "series": [[int]],
        "lost_at_end": {"at": (int, None), "ours": [_PIN], "truncation": [_PIN]},
    },
    "evidence?": {
        "samples": int,
        "named_share": _NUM_OR_NULL,
        "stated_share": _NUM_OR_NULL,
        "truncation_named_share": _NUM_OR_NULL,
        "truncation_stated_share": _NUM_OR_NULL,
        "ours_share": _NUM_OR_NULL,
        "truncation_share": _NUM_OR_NULL,
        "active_at_end": int,
        "named_at_end": int,
        "stated_at_end": int,
        "ours_at_end": int,
        "truncation_at_end": int,
        "series": [[int]],
    },
    "conclusions": {
        "computed": int,
        "revisions": int,
        "stale_events": int,
        "repaired": int,
        "abandoned": int,
        "refused_finals": int,
        "finals": int,
        "stale_at_end": int,
    },
    "pointers": {"spans": int, "checked": int, "resolved": int},
    "working_context?": {
        "facts": {
            "planted": int,
            "by_kind": MapOf(int),
            "needs": int,
            "calls_with_needs": int,
            "age_p50": _NUM_OR_NULL,
            "age_p95": _NUM_OR_NULL,
        },
        "methods": {
            "registre": _METHOD,
            "truncation": _METHOD,
            "observation_masking": _METHOD,
            "rolling_summary": _METHOD,
        },
    },
    "bundle": {
        "bytes": int,
        "entries": int,
        "checkpoints": int,
        "export_s": Number,
        "verify_s": Number,
        "verify_jobs": int,
        "signatures": int,
        "signatures_s": Number,
        "verified": bool,
        "path": (str, None),
    },
    "merkle?": {
        "leaves": int,
        "pymerkle": str,
        "ours": {
            "build_s": Number,
            "inclusion_s": Number,
            "consistency_s": Number,
            "stored_inclusion_s": Number,
        },
        "theirs?": {"build_s": Number, "inclusion_s": Number, "consistency_s": Number},
    },
}
RESULTS: Final = {
    "schema": str,
    "registre": str,
    "created": str,
    "machine": {"python": str, "platform": str, "cpus": int, "memory_mb": (int, None)},
    "config": {
        "seed": int,
        "sizes": [int],
        "budgets": [int],
        "summarizer": {"name": str, "version": str},
        "token_counter": str,
        "database": str,
        "model": str,
        "quality_samples": int,
        "naive_samples": int,
        "pointer_samples": int,
        "projection_samples": int,
        "prove_samples": int,
        "lean_above": int,
        "verify_jobs": int,
        "jobs": int,
    },
    "appends": Nullable(_APPENDS),
    "runs": [_RUN],
    "seconds": Number,
}
"""The schema. A key ending in ``?`` is optional (``merkle.theirs`` is absent when pymerkle
is not installed; a
lean run has no ``pins``, ``evidence``, ``working_context`` or ``merkle``)."""


def check_results(data: Any) -> None:
    """Raise ResultsSchemaError unless ``data`` follows :data:`RESULTS` and names the
    :data:`SCHEMA` schema, and every run has the quality fields (``pins``, ``evidence``,
    ``working_context``, ``merkle``) exactly when it is not lean."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ResultsSchemaError(f'results: expected an object with "schema": "{SCHEMA}"')
    _check(data, RESULTS, "results")
    for index, run in enumerate(data["runs"]):
        for name in _QUALITY:
            if run["lean"] == (name in run):
                state = "present in a lean run" if run["lean"] else "missing"
                raise ResultsSchemaError(f"results.runs[{index}].{name}: {state}")


_QUALITY: Final = ("pins", "evidence", "working_context", "merkle")
"""The fields a run has exactly when it is not lean."""


def _check(value: Any, spec: Any, path: str) -> None:
    if isinstance(spec, dict):
        _check_object(value, spec, path)
    elif isinstance(spec, Nullable):
        if value is not None:
            _check(value, spec.value, path)
    elif isinstance(spec, MapOf):
        if not isinstance(value, dict):
            raise ResultsSchemaError(f"{path}: expected an object")
        for key, item in value.items():
            _check(item, spec.value, f"{path}.{key}")
    elif isinstance(spec, list):
        if not isinstance(value, list):
            raise ResultsSchemaError(f"{path}: expected a list")
        for index, item in enumerate(value):
            _check(item, spec[0], f"{path}[{index}]")
    else:
        _check_scalar(value, spec if isinstance(spec, tuple) else (spec,), path)


def _check_object(value: Any, spec: dict[str, Any], path: str) -> None:
    if not isinstance(value, dict):
        raise ResultsSchemaError(f"{path}: expected an object")
    known = {key.rstrip("?") for key in spec}
    for key in value:
        if key not in known:
            raise ResultsSchemaError(f"{path}.{key}: not a field of {SCHEMA}")
    for key, item_spec in spec.items():
        name = key.rstrip("?")
        if name not in value:
            if key.endswith("?"):
                continue
            raise ResultsSchemaError(f"{path}.{name}: missing")
        _check(value[name], item_spec, f"{path}.{name}")


def _check_scalar(value: Any, types: tuple[Any, ...], path: str) -> None:
    for allowed in types:
        if allowed is None and value is None:
            return
        if allowed is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return
        if allowed is int and isinstance(value, int) and not isinstance(value, bool):
            return
        if allowed in (str, bool) and type(value) is allowed:
            return
    names = "/".join("null" if t is None else t.__name__ for t in types)
    raise ResultsSchemaError(f"{path}: expected {names}, got {type(value).__name__}")
