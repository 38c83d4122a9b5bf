"""specs/lifecycle.md and specs/vectors/lifecycle-bodies.json agree with the code."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from registre.lifecycle import KINDS, REASONS, parse_body, pin_set_items, pin_set_sha256, replay

ROOT = Path(__file__).resolve().parents[2]
SPEC = (ROOT / "specs" / "lifecycle.md").read_text(encoding="utf-8")
VECTORS: dict[str, Any] = json.loads(
    (ROOT / "specs" / "vectors" / "lifecycle-bodies.json").read_text(encoding="utf-8")
)


def spec_examples() -> list[dict[str, Any]]:
    blocks = re.findall(r"```json\n(.*?)\n```", SPEC, flags=re.S)
    return [json.loads(block) for block in blocks]


def test_every_kind_has_an_example_that_parses() -> None:
    examples = spec_examples()
    assert {example["kind"] for example in examples} == set(KINDS)
    for example in examples:
        parse_body(example["kind"], example["body"])


def test_spec_examples_are_events_of_the_vectors_file() -> None:
    events = VECTORS["events"]
    for example in spec_examples():
        assert example in events


def test_vectors_replay_to_the_recorded_final_state() -> None:
    events = [parse_body(item["kind"], item["body"]) for item in VECTORS["events"]]
    assert replay(events).snapshot() == VECTORS["final_state"]


def test_vector_digests_are_the_sha256_of_their_passages() -> None:
    passages = VECTORS["passages"]
    for item in VECTORS["events"]:
        if item["kind"] == "source.read":
            for reference in item["body"]["request"]["refs"]:
                text = passages[reference["ref"]].encode("utf-8")
                assert reference["sha256"] == hashlib.sha256(text).hexdigest()


def test_pin_set_vectors() -> None:
    events = [parse_body(item["kind"], item["body"]) for item in VECTORS["events"]]
    for case in VECTORS["pin_sets"]:
        state = replay(events[: case["after_events"]])
        assert pin_set_items(state) == case["items"]
        assert pin_set_sha256(state) == case["sha256"]
        assert case["sha256"] in SPEC


def test_reasons_table_matches_the_code() -> None:
    rows = re.findall(r"^\| `([a-z_]+)` \| (.+) \|$", SPEC, flags=re.M)
    assert dict(rows) == dict(REASONS)
