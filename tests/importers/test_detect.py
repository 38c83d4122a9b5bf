"""Detection asks each format's own ``sniff`` in turn (registre.importers.detect.SNIFFERS)."""

from __future__ import annotations

import importlib

import pytest

from registre.importers import FORMAT_NAMES
from registre.importers.detect import SNIFFERS, detect


def test_every_format_declares_a_sniff_that_detection_asks() -> None:
    assert {name for name, _ in SNIFFERS} == set(FORMAT_NAMES)
    for _name, sniff in SNIFFERS:
        assert sniff.__module__.startswith("registre.importers.")
        assert sniff.__module__ != "registre.importers.detect"


@pytest.mark.parametrize(("name", "sniff"), SNIFFERS, ids=[s.__module__ for _, s in SNIFFERS])
def test_no_sniff_claims_an_empty_object(name: str, sniff: object) -> None:
    assert callable(sniff) and sniff({}) is None, name
    assert detect({}) == (None, "an empty object")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"task_id": 1, "traj": []}, "tau-bench"),
        ({"messages": [], "info": {}}, "swe-agent"),
        ({"messages": []}, "anthropic"),
        ({"type": "human", "data": {}}, "langchain"),
        ({"type": "user", "uuid": "u"}, "claude-code"),
        ({"type": "function_call"}, "openai-responses"),
        ({"action": "run", "id": 1}, "openhands"),
        ({"role": "user", "content": [{"type": "tool_result"}]}, "anthropic"),
        ({"role": "user", "content": "hi"}, "openai"),
    ],
)
def test_the_first_sniff_that_recognises_a_value_names_its_format(
    value: dict[str, object], expected: str
) -> None:
    fmt, why = detect([value])
    assert fmt == expected and why
    module = importlib.import_module(next(s.__module__ for n, s in SNIFFERS if n == fmt))
    assert module.__name__.startswith("registre.importers.")
