"""Each transcript format (specs/entries.md section 6): its fixture imports, every field of
every message survives, the three provider formats write back equal."""

from __future__ import annotations

import collections
import io
import json

import pytest

from registre.attest.entries import validate_body
from registre.importers import (
    FORMATS,
    ImportedEntry,
    Pairing,
    TranscriptError,
    WrongFormatError,
    open_transcript,
    parse_bytes,
)
from registre.importers.core import Conversation
from registre.importers.reading import read_values
from registre.ledger.exchange.writeback import write_chunks
from tests.importers.helpers import (
    FIXTURE_FORMATS,
    REAL,
    STEM,
    fixture,
    regrouped,
    source_messages,
    values,
    without_source,
)


def _entries(name: str) -> list[ImportedEntry]:
    data = fixture(name)
    if FIXTURE_FORMATS[name] != "tau-bench":
        return parse_bytes(data)
    opened = open_transcript(io.BytesIO(data))
    from registre.importers import import_values

    conversations: dict[str | None, Conversation] = {}

    def conversation_for(key: str | None) -> Conversation:
        return conversations.setdefault(key, Conversation("tau-bench"))

    return [entry for _key, entry in import_values(opened, conversation_for)]


@pytest.mark.parametrize(("name", "fmt"), sorted(FIXTURE_FORMATS.items()))
def test_format_is_detected(name: str, fmt: str) -> None:
    assert open_transcript(io.BytesIO(fixture(name))).fmt == fmt


@pytest.mark.parametrize("name", sorted(FIXTURE_FORMATS))
def test_every_field_of_every_message_survives(name: str) -> None:
    entries = _entries(name)
    for entry in entries:
        validate_body(entry.kind, entry.body)
        assert entry.body["source"]["format"] == FIXTURE_FORMATS[name]
    assert regrouped(entries) == source_messages(name, FIXTURE_FORMATS[name])


def _kinds(name: str) -> dict[str, int]:
    return dict(collections.Counter(entry.kind for entry in _entries(name)))


def _by_kind(name: str, kind: str) -> list[dict[str, object]]:
    return [entry.body for entry in _entries(name) if entry.kind == kind]


def test_openai_chat_fixture() -> None:
    calls = _by_kind("openai_chat.jsonl", "tool.call")
    assert [c["call_id"] for c in calls] == ["call_a", "call_b", "call_a", "call_c"]
    assert [c.get("call_ref") for c in calls] == [None, None, "call_a#2", None]
    assert calls[0]["arguments_json"] == '{"p":0.99,"service":"checkout","window":"1h"}'
    results = _by_kind("openai_chat.jsonl", "tool.result")
    assert [r.get("call_ref") for r in results] == [None, None, "call_a#2"]
    assert results[1]["content"] == "ERROR pool exhausted\nWARN retry 3/3"
    (image,) = _by_kind("openai_chat.jsonl", "imported")
    assert image["type"] == "image_url" and len(str(image["sha256"])) == 64


def test_anthropic_fixture() -> None:
    imported = _by_kind("anthropic.json", "imported")
    assert [b["type"] for b in imported] == [
        "thinking",
        "image",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "document",
    ]
    assert imported[0]["text"] == "I should look at metrics and logs in parallel."
    assert "signature" not in imported[0]  # kept verbatim in the message, not a body field
    results = _by_kind("anthropic.json", "tool.result")
    assert results[2] == {**results[2], "is_error": True, "call_ref": "toolu_01#2"}
    assert _kinds("anthropic.json") == {"turn": 6, "imported": 6, "tool.call": 3, "tool.result": 3}


def test_claude_code_fixture_records_compaction_as_imported() -> None:
    imported = _by_kind("claude_code.jsonl", "imported")
    types = [b["type"] for b in imported]
    assert types == [
        "summary",
        "thinking",
        "compact_boundary",
        "compact_summary",
        "file-history-snapshot",
    ]
    assert all(b["source"]["format"] == "claude-code" for b in imported)
    calls = _by_kind("claude_code.jsonl", "tool.call")
    assert [c.get("call_ref") for c in calls] == [None, "toolu_01#2", None]
    turns = [b["text"] for b in _by_kind("claude_code.jsonl", "turn")]
    assert "It is in db.yaml." in turns  # the sidechain's words, its flag kept in source


def test_responses_fixture() -> None:
    assert _kinds("openai_responses.jsonl") == {
        "turn": 2,
        "imported": 2,
        "tool.call": 3,
        "tool.result": 3,
    }
    reasoning, compaction = _by_kind("openai_responses.jsonl", "imported")
    assert (reasoning["type"], reasoning["text"]) == ("reasoning", "Check metrics and logs.")
    assert compaction["type"] == "compaction"


def test_tau_bench_fixture_one_thread_per_task() -> None:
    opened = open_transcript(io.BytesIO(fixture("tau_bench.json")))
    from registre.importers import import_values

    keys = collections.Counter(
        key for key, _e in import_values(opened, lambda k: Conversation("tau-bench"))
    )
    assert keys == {"0": 8, "1": 8}  # the task record, then its 7 trajectory entries
    with pytest.raises(TranscriptError, match="several tasks"):
        parse_bytes(fixture("tau_bench.json"))


def test_swe_agent_fixture_and_real_mini_swe_agent_file() -> None:
    assert _kinds("swe_agent.traj") == {"imported": 3, "turn": 4, "tool.call": 2, "tool.result": 2}
    real = (
        parse_bytes((REAL / f"{STEM}.original.traj.json").read_bytes())
        if (REAL / f"{STEM}.original.traj.json").exists()
        else None
    )
    del real


def test_openhands_fixture() -> None:
    results = _by_kind("openhands.json", "tool.result")
    assert [r.get("is_error") for r in results] == [None, True]
    assert [b["role"] for b in _by_kind("openhands.json", "turn")] == [
        "system",
        "user",
        "assistant",
    ]


def test_langchain_fixture() -> None:
    calls = _by_kind("langchain.json", "tool.call")
    assert [c["name"] for c in calls] == ["query_metrics", "read_logs"]
    assert _by_kind("langchain.json", "tool.result")[1]["is_error"] is True


# --- the real public transcript (tests/data/transcripts, MIT) -------------------------------


def test_real_transcript_both_shapes_give_the_same_entries_but_source() -> None:
    openai = parse_bytes((REAL / f"{STEM}.openai.jsonl").read_bytes())
    anthropic = parse_bytes((REAL / f"{STEM}.anthropic.json").read_bytes())
    assert collections.Counter(e.kind for e in openai) == {
        "tool.call": 188,
        "tool.result": 188,
        "turn": 177,
    }
    assert without_source(openai) == without_source(anthropic)


@pytest.mark.parametrize(
    ("name", "fmt"),
    [(f"{STEM}.openai.jsonl", "openai"), (f"{STEM}.anthropic.json", "anthropic")],
)
def test_real_transcript_writes_back_equal(name: str, fmt: str) -> None:
    data = (REAL / name).read_bytes()
    entries = parse_bytes(data)
    text = "".join(write_chunks([(e.kind, e.body) for e in entries], fmt))
    if fmt == "openai":
        assert [json.loads(line) for line in text.split("\n") if line] == [
            json.loads(line) for line in data.splitlines()
        ]
    else:
        assert json.loads(text) == json.loads(data)
    assert parse_bytes(text.encode()) == entries


# --- round trips ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("openai_chat.jsonl", "openai"),
        ("anthropic.json", "anthropic"),
        ("claude_code.jsonl", "claude-code"),
    ],
)
def test_provider_fixture_writes_back_equal_and_reimports_identically(name: str, fmt: str) -> None:
    entries = _entries(name)
    text = "".join(write_chunks([(e.kind, e.body) for e in entries], fmt))
    if fmt == "anthropic":
        assert json.loads(text) == values(name)[0]
    else:
        assert [json.loads(line) for line in text.split("\n") if line] == values(name)
    assert parse_bytes(text.encode(), fmt) == entries


@pytest.mark.parametrize("target", ["openai", "anthropic", "claude-code"])
@pytest.mark.parametrize("name", ["openai_chat_array.json", "langchain.json", "openhands.json"])
def test_other_formats_convert_to_each_provider(name: str, target: str) -> None:
    entries = _entries(name)
    text = "".join(write_chunks([(e.kind, e.body) for e in entries], target))
    again = parse_bytes(text.encode(), target)

    def core(items: list[ImportedEntry]) -> list[tuple[str, object, str]]:
        kept = []
        for kind, body, actor in without_source(items):
            if kind == "imported" or (target != "openai" and body.get("role") == "system"):
                continue  # no counterpart: left out (a system turn is a record / the header)
            if target == "openai":
                body.pop("is_error", None)  # chat completions cannot say a result failed
            kept.append((kind, body, actor))
        return kept

    assert core(again) == core(entries)


# --- reading and detection --------------------------------------------------------------


def test_json_array_is_read_item_by_item() -> None:
    layout, items = read_values(io.BytesIO(b' [ {"a": 1} ,\n{"b": [2, 3]}, 4.5 ] \n'))
    assert layout == "array"
    assert [(value, str(at)) for value, at in items] == [
        ({"a": 1}, "$[0]"),
        ({"b": [2, 3]}, "$[1]"),
        (4.5, "$[2]"),
    ]


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (b'[{"role": "user", "content": "x"}, {"role": ', "$[1]"),
        (b'[{"role": "user", "content": "x"} {"a": 1}]', "$[1]"),
        (b'[{"role": "user", "content": "x"}] tail', "$"),
        (b'{"role": "user", "content": "x"}\n{"role": "user", "cont', "line 2"),
        (b'{"role": "user", "cont\n{"role": "user", "content": "x"}\n', "line 1"),
    ],
)
def test_truncated_or_broken_file_fail(data: bytes, where: str) -> None:
    with pytest.raises(TranscriptError) as caught:
        parse_bytes(data, "openai")
    assert caught.value.where == where and "invalid JSON" in caught.value.reason


def test_wrong_format_says_what_the_file_looks_like_fail() -> None:
    with pytest.raises(WrongFormatError) as caught:
        parse_bytes(fixture("claude_code.jsonl"), "openai")
    assert "looks like claude-code" in str(caught.value)
    with pytest.raises(WrongFormatError, match="cannot tell the transcript format"):
        parse_bytes(b'{"hello": "world"}\n')


def test_formats_by_name() -> None:
    assert set(FORMATS) == set(FIXTURE_FORMATS.values())


def test_result_with_no_call_anywhere_fail() -> None:
    data = b'{"role": "tool", "tool_call_id": "nobody", "content": "x"}\n'
    with pytest.raises(TranscriptError, match="which no call in this file or earlier") as info:
        parse_bytes(data, "openai")
    assert info.value.hint is not None and "imports after that file" in info.value.hint
    pairing = Pairing()
    pairing.call("nobody", "bash", "an earlier import")
    (entry,) = parse_bytes(data, "openai", pairing)  # a continuation pairs
    assert entry.body["call_id"] == "nobody" and entry.actor == "tool:bash"
