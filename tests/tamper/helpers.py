"""Shared moves of the tamper tests: verify a bundle that must pass, or must fail exactly so."""

from __future__ import annotations

from typing import Any

import pytest

from registre.attest.bundles import ENTRIES_MEMBER
from registre.attest.verify import TrustPolicy, VerifyReport, report_of, verify_bundle
from registre.errors import RegistreError
from tests.bundles import members, policy, rezip

__all__ = ["entry_lines", "fails", "passes", "with_entry_lines"]


def passes(bundle: bytes, trust: TrustPolicy | None = None, **options: Any) -> VerifyReport:
    """Verify ``bundle`` and require success."""
    report = verify_bundle(bundle, trust or policy(), **options)
    assert report.verified, report.render()
    return report


def fails(
    bundle: bytes,
    error: type[RegistreError],
    trust: TrustPolicy | None = None,
    *,
    step: int | None = None,
    seq: int | None = None,
    **options: Any,
) -> RegistreError:
    """Verify ``bundle`` and require exactly ``error`` (not a parent, not a sibling), at
    ``step`` and ``seq`` when given; the report attached must say so."""
    with pytest.raises(RegistreError) as info:
        verify_bundle(bundle, trust or policy(), **options)
    raised = info.value
    assert type(raised) is error, (
        f"expected {error.__name__}, got {type(raised).__name__}: {raised}"
    )
    report = report_of(raised)
    assert report is not None and not report.verified and report.failure is not None
    assert report.failure.error == error.__name__
    if step is not None:
        assert report.failure.step == step, report.failure.sentence()
    if seq is not None:
        assert report.failure.seq == seq, report.failure.sentence()
    return raised


def entry_lines(bundle: bytes) -> list[bytes]:
    """The leaves of ``entries.jsonl``."""
    data = members(bundle)[ENTRIES_MEMBER]
    return data[:-1].split(b"\n") if data else []


def with_entry_lines(bundle: bytes, lines: list[bytes]) -> bytes:
    """The bundle with ``entries.jsonl`` replaced and the manifest recomputed to match, as
    an attacker who knows the format would do."""
    return rezip(bundle, {ENTRIES_MEMBER: b"".join(line + b"\n" for line in lines)})
