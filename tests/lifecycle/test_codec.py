"""The JSON forms: round trips, and every kind of bad shape refused with its field path."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from registre.lifecycle import (
    KINDS,
    ComputeRequest,
    LifecycleFormatError,
    LifecycleState,
    Statement,
    UpsertRequest,
    apply,
    decide,
    normalize_request,
    parse_body,
    request_to_json,
)
from tests.lifecycle.builders import digest


def upsert_body(**request: Any) -> dict[str, Any]:
    statements = [{"text": f"s{i}", "cites": ["r1"]} for i in range(3)]
    results = [{"accepted": True, "id": f"ev-{i + 1}"} for i in range(3)]
    body: dict[str, Any] = {"request": {"statements": statements}, "outcome": {"results": results}}
    body["request"].update(request)
    return body


def refused(kind: str, body: object) -> str:
    with pytest.raises(LifecycleFormatError) as caught:
        parse_body(kind, body)
    return str(caught.value)


def test_valid_upsert_body_parses() -> None:
    event = parse_body("evidence.upsert", upsert_body())
    assert event.kind == "evidence.upsert"
    assert event.request == UpsertRequest(tuple(Statement(f"s{i}", ("r1",)) for i in range(3)))


def test_bad_cites_are_named_by_path() -> None:
    body = upsert_body()
    body["request"]["statements"][2]["cites"] = "r1"
    assert refused("evidence.upsert", body).startswith(
        "body.request.statements[2].cites: expected a list of distinct strings"
    )


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (
            lambda b: b["request"]["statements"][0].update(extra=1),
            "body.request.statements[0].extra",
        ),
        (lambda b: b["request"]["statements"][1].pop("text"), "body.request.statements[1].text"),
        (
            lambda b: b["request"]["statements"][1].update(text=1.5),
            "body.request.statements[1].text",
        ),
        (
            lambda b: b["request"]["statements"][0]["cites"].append(7),
            "body.request.statements[0].cites[1]",
        ),
        (
            lambda b: b["request"]["statements"][0]["cites"].append("r1"),
            "body.request.statements[0].cites[1]",
        ),
        (lambda b: b["outcome"]["results"].pop(), "body.outcome.results"),
        (lambda b: b["outcome"]["results"][0].update(id="ev-01"), "body.outcome.results[0].id"),
        (lambda b: b["outcome"]["results"][0].update(id="cc-1"), "body.outcome.results[0].id"),
        (
            lambda b: b["outcome"]["results"][0].update(accepted=1),
            "body.outcome.results[0].accepted",
        ),
        (lambda b: b["outcome"]["results"][0].pop("accepted"), "body.outcome.results[0]"),
        (
            lambda b: b["outcome"]["results"].__setitem__(
                0, {"accepted": False, "reason": "because", "message": "no"}
            ),
            "body.outcome.results[0].reason",
        ),
        (lambda b: b.update(seq=3), "body.seq"),
        (lambda b: b.pop("outcome"), "body.outcome"),
        (lambda b: b["request"].update(statements=[]), "body.request.statements"),
    ],
)
def test_bad_upsert_shapes_are_refused_with_their_path(mutate: Any, path: str) -> None:
    body = upsert_body()
    mutate(body)
    assert refused("evidence.upsert", body).startswith(f"{path}: ")


def test_size_caps() -> None:
    many = upsert_body(statements=[{"text": "s", "cites": ["r1"]}] * 1001)
    assert "exceed the cap of 1000" in refused("evidence.upsert", many)
    long_text = upsert_body()
    long_text["request"]["statements"][1]["text"] = "é" * 32769
    message = refused("evidence.upsert", long_text)
    assert message.startswith("body.request.statements[1].text: 65538 bytes exceed")
    at_cap = upsert_body()
    at_cap["request"]["statements"][1]["text"] = "é" * 32768
    parse_body("evidence.upsert", at_cap)


def test_lone_surrogate_is_refused() -> None:
    body = upsert_body()
    body["request"]["statements"][0]["text"] = "bad \ud800 text"
    assert "lone surrogate" in refused("evidence.upsert", body)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sha256", "AB" * 32),
        ("sha256", "ab" * 31),
        ("ref", ""),
        ("source", "a\nb"),
        ("location", None),
    ],
)
def test_bad_reference_fields(field: str, value: object) -> None:
    reference = {"ref": "r1", "source": "s", "location": "l", "sha256": digest("p")}
    reference[field] = value  # type: ignore[assignment]
    body = {
        "request": {"refs": [reference]},
        "outcome": {"results": [{"accepted": True, "ref": "r1"}]},
    }
    assert refused("source.read", body).startswith(f"body.request.refs[0].{field}: ")


@pytest.mark.parametrize("seq", [True, -1, 2**53, 1.0, "3"])
def test_pin_seq_must_be_a_json_integer(seq: object) -> None:
    body = {
        "request": {"kind": "definition", "text": "t", "seq": seq},
        "outcome": {"accepted": True, "id": "pin-1"},
    }
    assert refused("context.pin", body).startswith("body.request.seq: ")


def test_pin_kind_must_be_known() -> None:
    body = {
        "request": {"kind": "fact", "text": "t", "seq": 1},
        "outcome": {"accepted": True, "id": "pin-1"},
    }
    assert refused("context.pin", body).startswith("body.request.kind: expected one of")


def test_revise_requires_explicit_replacement_and_the_right_id_family() -> None:
    base = {"accepted": True, "id": "ev-1", "successor": None, "stale": []}
    assert refused("evidence.revise", {"request": {"id": "ev-1"}, "outcome": base}).startswith(
        "body.request.replacement: missing field"
    )
    wrong_family = {"request": {"id": "cc-1", "replacement": None}, "outcome": base}
    assert refused("evidence.revise", wrong_family).startswith("body.request.id: ")
    stale_pins = dict(base, stale=["pin-1"])
    body = {"request": {"id": "ev-1", "replacement": None}, "outcome": stale_pins}
    assert refused("evidence.revise", body).startswith("body.outcome.stale[0]: ")


def test_conclusion_cites_must_be_evidence_or_conclusion_ids() -> None:
    body = {
        "request": {"text": "t", "cites": ["ev-1", "r1"]},
        "outcome": {"accepted": True, "id": "cc-1"},
    }
    assert refused("conclusion.final", body).startswith("body.request.cites[1]: ")


def test_unknown_kind_and_non_object_body() -> None:
    assert refused("turn", {}).startswith("kind: ")
    assert refused("context.unpin", []).startswith("body: expected an object")


def test_body_round_trip_through_json_text() -> None:
    body = upsert_body()
    event = parse_body("evidence.upsert", json.loads(json.dumps(body)))
    assert {"request": request_to_json(event.request)} == {"request": body["request"]}
    assert set(KINDS) == {
        "source.read",
        "evidence.upsert",
        "evidence.revise",
        "conclusion.compute",
        "conclusion.final",
        "conclusion.revise",
        "context.pin",
        "context.unpin",
    }


def test_parse_does_not_keep_references_to_the_input() -> None:
    body = upsert_body()
    event = parse_body("evidence.upsert", body)
    snapshot = copy.deepcopy(event)
    body["request"]["statements"][0]["cites"].append("r2")
    assert event == snapshot


def test_decide_refuses_a_malformed_python_request() -> None:
    bad = ComputeRequest("t", ["ev-1", 2])  # type: ignore[list-item]
    with pytest.raises(LifecycleFormatError, match=r"^request\.cites\[1\]: "):
        decide(LifecycleState.empty(), bad)
    with pytest.raises(
        LifecycleFormatError, match=r"^request\.statements\[0\]: expected a Statement"
    ):
        normalize_request(UpsertRequest(({"text": "t", "cites": []},)))  # type: ignore[arg-type]


def test_normalize_turns_lists_into_tuples() -> None:
    loose = UpsertRequest([Statement("t", ["r1"])])  # type: ignore[arg-type, list-item]
    assert normalize_request(loose) == UpsertRequest((Statement("t", ("r1",)),))


def test_decide_refuses_something_that_is_not_a_request() -> None:
    with pytest.raises(LifecycleFormatError, match=r"^request: expected a lifecycle request"):
        decide(LifecycleState.empty(), {"text": "t"})  # type: ignore[arg-type]


def test_ids_and_source_names_read_from_separate_bodies_are_one_string_each() -> None:
    """The codec interns what a long thread repeats (reference ids, evidence and conclusion
    ids, source names), so a state or index holding many citations holds each once; and
    ``apply`` keeps the recorded outcome's ids, so the state shares them too."""
    reads = [
        parse_body(
            "source.read",
            json.loads(
                json.dumps(
                    {
                        "request": {"refs": [{"ref": "r1", "source": "doc.pdf",
                                              "location": f"p{n}", "sha256": digest(f"{n}")}]},
                        "outcome": {"results": [{"accepted": True, "ref": "r1"}]},
                    }
                )
            ),
        )
        for n in (1, 1)
    ]  # fmt: skip
    first, second = (event.request.refs[0] for event in reads)  # type: ignore[attr-defined]
    assert first.ref is second.ref and first.source is second.source
    upserts = [parse_body("evidence.upsert", json.loads(json.dumps(upsert_body()))) for _ in "ab"]
    cites = [s.cites[0] for event in upserts for s in event.request.statements]  # type: ignore[attr-defined]
    assert all(cite is first.ref for cite in cites)
    ids = [event.outcome.results[0].id for event in upserts]  # type: ignore[attr-defined]
    assert ids[0] is ids[1] == "ev-1"
    state = apply(apply(LifecycleState.empty(), reads[0]), upserts[0])
    (key,) = (k for k in state.tables().evidence if k == "ev-1")
    assert key is ids[0] and state.tables().evidence[key].cites[0] is first.ref
