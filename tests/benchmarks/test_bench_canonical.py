"""Reading and writing one typical ~1 KB ledger entry (group "canonical").

A verifier reads every entry with parse_canonical (= parse_strict + the RFC 8785 form
check), so these per-entry costs multiply by the ledger size. Baselines side by side:
``json.loads`` (C, lenient) for the reader and ``rfc8785.dumps`` (no refusal checks) for
the writer.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import rfc8785

from registre.attest.canonical_json import canonical_bytes, parse_canonical, parse_strict


def _typical_entry() -> dict[str, Any]:
    paragraph = (
        "The measured latency was 41 ms at p50 and 212 ms at p99; the café's Wi-Fi, not the "
        "server, explains the tail. Next step: re-run the probe from the wired network.\n"
    )
    return {
        "entry": {
            "v": 1,
            "log": "registre.example/agent-7",
            "thread": "th_01HZX3K9V6Q2M8R4T7Y1B5N0CD",
            "seq": 48213,
            "time": "2025-03-14T09:26:53.589Z",
            "kind": "turn",
            "actor": "assistant",
            "body": {
                "role": "assistant",
                "text": paragraph * 4 + "Done ✓.",
                "tokens": 187,
                "tags": ["latency", "network"],
                "temperature": 0.2,
            },
            "prev": {
                "size": 48213,
                "root": base64.b64encode(hashlib.sha256(b"root").digest()).decode(),
            },
            "key": "a1b2c3d4",
        },
        "sig": base64.b64encode(hashlib.sha512(b"sig").digest()).decode(),
    }


ENTRY = _typical_entry()
DATA = canonical_bytes(ENTRY)


def test_entry_is_about_one_kilobyte() -> None:
    assert 900 <= len(DATA) <= 1300


def test_bench_json_loads_baseline(benchmark: Any) -> None:
    benchmark.group = "canonical"
    assert benchmark(json.loads, DATA) == ENTRY


def test_bench_parse_strict(benchmark: Any) -> None:
    benchmark.group = "canonical"
    assert benchmark(parse_strict, DATA) == ENTRY


def test_bench_parse_canonical(benchmark: Any) -> None:
    benchmark.group = "canonical"
    assert benchmark(parse_canonical, DATA) == ENTRY


def test_bench_rfc8785_dumps_baseline(benchmark: Any) -> None:
    benchmark.group = "canonical"
    assert benchmark(rfc8785.dumps, ENTRY) == DATA


def test_bench_canonical_bytes(benchmark: Any) -> None:
    benchmark.group = "canonical"
    assert benchmark(canonical_bytes, ENTRY) == DATA
