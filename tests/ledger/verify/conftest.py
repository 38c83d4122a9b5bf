"""Fixtures of the witness comparison tests (issue 29 item 4): a witness served in-process on
loopback, with and without its monitoring view, and fixed entry times
(:mod:`tests.ledger.verify.witness_helpers`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from registre.attest.notes import Signer
from registre.witness.client import WitnessEndpoint
from registre.witness.witness import Witness
from tests.ledger.verify.witness_helpers import (
    fix_times,
    make_witness,
    served_endpoint,
    viewless_endpoint,
)


@pytest.fixture
def fixed_time(monkeypatch: pytest.MonkeyPatch) -> None:
    fix_times(monkeypatch)


@pytest.fixture
def witness(tmp_path: Path, signer: Signer) -> Iterator[Witness]:
    with make_witness(tmp_path / "witness.db", signer) as made:
        yield made


@pytest.fixture
def served(witness: Witness) -> Iterator[WitnessEndpoint]:
    with served_endpoint(witness) as endpoint:
        yield endpoint


@pytest.fixture
def viewless(witness: Witness) -> Iterator[WitnessEndpoint]:
    with viewless_endpoint(witness) as endpoint:
        yield endpoint
