"""Transcript import (specs/entries.md section 6): real files, refusals, properties."""

from __future__ import annotations

import collections
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from registre.attest.bodies import MAX_ENTRY_TEXT_BYTES
from registre.attest.canonical import canonical_bytes, parse_strict
from registre.attest.errors import MalformedError
from registre.attest.keys import Signer
from registre.attest.strict_json import float_in_integer_gap
from registre.cli import main
from registre.ledger.exchange.importers import (
    FORMATS,
    ImportedEntry,
    TranscriptError,
    parse_anthropic,
    parse_openai,
)
from registre.ledger.ledger import Ledger

DATA = Path(__file__).resolve().parents[2] / "data" / "transcripts"
STEM = "01_mini-swe-agent_deepseek-chat_pylint-dev__astroid-1333"
OPENAI_FILE = (DATA / f"{STEM}.openai.jsonl").read_bytes()
ANTHROPIC_FILE = (DATA / f"{STEM}.anthropic.json").read_bytes()


def _jsonl(*messages: object) -> bytes:
    return b"".join(json.dumps(message).encode() + b"\n" for message in messages)


def _anthropic(*messages: object, **top: object) -> bytes:
    return json.dumps({**top, "messages": list(messages)}).encode()


CALL = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd":"ls"}'}}
ASK = {"role": "assistant", "content": "Listing.", "tool_calls": [CALL]}
ANSWER = {"role": "tool", "tool_call_id": "c1", "content": "a.py"}
USE = {"type": "tool_use", "id": "c1", "name": "bash", "input": {"cmd": "ls"}}
RESULT = {"type": "tool_result", "tool_use_id": "c1", "content": "a.py"}


def _openai_refusal(*messages: object) -> TranscriptError:
    with pytest.raises(TranscriptError) as caught:
        parse_openai(_jsonl(*messages))
    return caught.value


def _anthropic_refusal(data: bytes) -> TranscriptError:
    with pytest.raises(TranscriptError) as caught:
        parse_anthropic(data)
    return caught.value


# --- the real transcripts ------------------------------------------------------------------


def test_real_openai_transcript_imports() -> None:
    assert len(OPENAI_FILE.splitlines()) == 378
    entries = parse_openai(OPENAI_FILE)
    kinds = collections.Counter(entry.kind for entry in entries)
    # 1 system + 1 user + 188 assistant turns, of which 13 have empty text and make no entry.
    assert kinds == {"tool.call": 188, "tool.result": 188, "turn": 177}
    assert entries[0] == ImportedEntry(
        "turn",
        {
            "role": "system",
            "text": "You are a helpful assistant that can interact with a computer shell to "
            "solve programming tasks.",
        },
        "system",
    )
    assert entries[3] == ImportedEntry(
        "tool.call",
        {
            "call_id": "call_00_Me5GgGuSHcPSZSfxNGJuF9LD",
            "name": "bash",
            "arguments": {"command": 'find . -type f -name "*.py" | head -30'},
        },
        "assistant",
    )
    assert entries[4].actor == "tool:bash"
    assert entries[4].body["call_id"] == "call_00_Me5GgGuSHcPSZSfxNGJuF9LD"
    assert entries[4].body["content"].startswith("<returncode>0</returncode>")
    calls = [entry.body["call_id"] for entry in entries if entry.kind == "tool.call"]
    results = [entry.body["call_id"] for entry in entries if entry.kind == "tool.result"]
    assert calls == results  # every call answered, in order, none parallel
    assert entries[-1].body["call_id"] == "call_00_gMZPMGwv26vzsMtYCaQKDqds"


def test_real_anthropic_transcript_gives_the_same_entries() -> None:
    assert parse_anthropic(ANTHROPIC_FILE) == parse_openai(OPENAI_FILE)


def test_formats_by_name() -> None:
    assert {"openai": parse_openai, "anthropic": parse_anthropic} == FORMATS


# --- mapping details -----------------------------------------------------------------------


def test_text_parts_become_separate_turns() -> None:
    parts = [
        {"type": "text", "text": "one"},
        {"type": "text", "text": ""},
        {"type": "text", "text": "two"},
    ]
    entries = parse_openai(_jsonl({"role": "user", "content": parts}))
    assert [entry.body["text"] for entry in entries] == ["one", "two"]
    assert parse_anthropic(_anthropic({"role": "user", "content": parts})) == entries


def test_tool_result_parts_are_joined() -> None:
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    openai = parse_openai(_jsonl(ASK, ANSWER | {"content": parts}))
    anthropic = parse_anthropic(
        _anthropic(
            {"role": "assistant", "content": [{"type": "text", "text": "Listing."}, USE]},
            {"role": "user", "content": [RESULT | {"content": parts}]},
        )
    )
    assert openai == anthropic
    assert openai[-1] == ImportedEntry(
        "tool.result", {"call_id": "c1", "content": "ab", "name": "bash"}, "tool:bash"
    )


def test_is_error_kept_only_when_true() -> None:
    def result(**fields: object) -> dict[str, Any]:
        data = _anthropic(
            {"role": "assistant", "content": [USE]},
            {"role": "user", "content": [RESULT | fields]},
        )
        return parse_anthropic(data)[-1].body

    assert result(is_error=True)["is_error"] is True
    assert "is_error" not in result(is_error=False)
    assert result(content=[])["content"] == ""
    assert "is_error" not in result()


def test_float_arguments_travel_as_canonical_json() -> None:
    arguments = '{"threshold": 0.250, "n": 2.0, "big": 1E21}'
    call = CALL | {"function": {"name": "tune", "arguments": arguments}}
    entry = parse_openai(_jsonl({"role": "assistant", "tool_calls": [call]}, ANSWER))[0]
    assert entry.body["arguments_json"] == '{"big":1e+21,"n":2,"threshold":0.25}'
    same = parse_anthropic(
        _anthropic(
            {
                "role": "assistant",
                "content": [USE | {"name": "tune", "input": json.loads(arguments)}],
            },
            {"role": "user", "content": [RESULT]},
        )
    )
    assert same[0] == entry


def test_integral_numbers_stay_an_object() -> None:
    call = CALL | {"function": {"name": "f", "arguments": '{"n": 2.0, "m": -0.0, "k": 1E2}'}}
    (entry,) = parse_openai(_jsonl({"role": "assistant", "tool_calls": [call]}))
    assert entry.body["arguments"] == {"n": 2, "m": 0, "k": 100}
    assert all(type(value) is int for value in entry.body["arguments"].values())


def test_unanswered_calls_allowed_at_the_end() -> None:
    entries = parse_openai(_jsonl({"role": "user", "content": "go"}, ASK))
    assert [entry.kind for entry in entries] == ["turn", "turn", "tool.call"]


def test_parallel_calls_answered_in_any_order() -> None:
    second = CALL | {"id": "c2"}
    entries = parse_openai(
        _jsonl(
            ASK | {"tool_calls": [CALL, second]},
            ANSWER | {"tool_call_id": "c2"},
            ANSWER,
            {"role": "assistant", "content": "Done."},
        )
    )
    assert [entry.body.get("call_id") for entry in entries] == [None, "c1", "c2", "c2", "c1", None]


def test_blank_lines_skipped_and_line_numbers_kept() -> None:
    data = b"\n" + _jsonl({"role": "user", "content": "hi"}) + b"  \r\n" + b'{"role": "x"}\n'
    with pytest.raises(TranscriptError) as caught:
        parse_openai(data)
    assert caught.value.line == 4
    assert str(caught.value).startswith("line 4: role: unknown role 'x'")


def test_error_shape() -> None:
    error = _openai_refusal({"role": "user", "content": "hi"}, [])
    assert isinstance(error, MalformedError)
    assert error.exit_code == 2
    assert (error.where, error.line, error.position) == ("line 2", 2, 2)
    assert str(error) == "line 2: expected a message (an object), got a list"
    error = _anthropic_refusal(_anthropic({"role": "user", "content": 5}))
    assert (error.where, error.line) == ("$.messages[0].content", None)


# --- refusals: OpenAI ----------------------------------------------------------------------


def test_invalid_json_line_fail() -> None:
    data = _jsonl({"role": "user", "content": "hi"}) + b'{"role": "user", "content": "x"\n'
    with pytest.raises(TranscriptError, match=r"^line 2: invalid JSON: "):
        parse_openai(data)


@pytest.mark.parametrize(
    "line",
    [
        b'{"role": "user", "role": "system", "content": "x"}',  # duplicate key
        b'{"role": "user", "content": "\\ud800"}',  # lone surrogate
        b'\xef\xbb\xbf{"role": "user", "content": "x"}',  # byte order mark
        b'{"role": "user", "content": "\xff"}',  # invalid UTF-8
    ],
)
def test_ambiguous_json_fail(line: bytes) -> None:
    with pytest.raises(TranscriptError, match=r"^line 1: invalid JSON: "):
        parse_openai(line)


@pytest.mark.parametrize("role", ["developer", "function", "exit", None, 3, ["user"], {}])
def test_unknown_role_fail(role: object) -> None:
    error = _openai_refusal({"role": role, "content": "x"})
    assert error.where == "line 1: role"
    assert "unknown role" in error.reason


def test_result_for_a_call_never_issued_fail() -> None:
    error = _openai_refusal({"role": "user", "content": "go"}, ANSWER)
    assert str(error) == "line 2: result for tool call 'c1', which no earlier message issued"


def test_second_result_for_one_call_fail() -> None:
    error = _openai_refusal(ASK, ANSWER, ANSWER)
    assert error.line == 3
    assert "second result for tool call 'c1' (issued at line 1: tool_calls[0])" in str(error)


def test_call_id_reused_fail() -> None:
    error = _openai_refusal(ASK, ANSWER, ASK)
    assert error.where == "line 3: tool_calls[0]"
    assert "already used at line 1" in error.reason


def test_call_left_unanswered_mid_transcript_fail() -> None:
    error = _openai_refusal(ASK, {"role": "user", "content": "and then?"})
    assert error.line == 2
    assert "tool call 'c1' (issued at line 1: tool_calls[0]) has no result" in str(error)


def test_result_naming_another_tool_fail() -> None:
    error = _openai_refusal(ASK, ANSWER | {"name": "python"})
    assert "names tool 'python' but call 'c1' was to 'bash'" in str(error)


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ("", "invalid JSON"),
        ("{'cmd': 'ls'}", "invalid JSON"),
        ('{"cmd": NaN}', "invalid JSON"),
        ('{"n": 1e400}', "invalid JSON"),
        ('{"n": 9007199254740993}', "invalid JSON"),
        ('{"a": 1, "a": 2}', "invalid JSON"),
        ('["ls"]', "must be a JSON object, got a list"),
        ("null", "must be a JSON object, got null"),
    ],
)
def test_arguments_not_a_json_object_fail(arguments: str, reason: str) -> None:
    call = CALL | {"function": {"name": "bash", "arguments": arguments}}
    error = _openai_refusal(ASK | {"tool_calls": [call]})
    assert error.where == "line 1: tool_calls[0].function.arguments"
    assert reason in error.reason


@pytest.mark.parametrize(
    ("message", "where"),
    [
        ({"role": "user", "content": "x", "name": "alice"}, "line 1: name"),
        (ASK | {"refusal": None}, "line 1: refusal"),
        (ASK | {"tool_calls": [CALL | {"index": 0}]}, "line 1: tool_calls[0].index"),
        (ASK | {"tool_calls": [CALL | {"type": "custom"}]}, "line 1: tool_calls[0].type"),
        (ASK | {"tool_calls": {"id": "c1"}}, "line 1: tool_calls"),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": {}}]},
            "line 1: content[0].type",
        ),
        (
            {"role": "user", "content": [{"type": "text", "text": "x", "cache": 1}]},
            "line 1: content[0].cache",
        ),
        ({"role": "user"}, "line 1: content"),
        ({"role": "system", "content": None}, "line 1: content"),
        ({"role": "tool", "content": "x"}, "line 1: tool_call_id"),
    ],
)
def test_fields_registre_would_drop_or_misread_fail(message: object, where: str) -> None:
    assert _openai_refusal(message).where == where


def test_text_over_the_body_cap_fail() -> None:
    error = _openai_refusal({"role": "user", "content": "x" * (MAX_ENTRY_TEXT_BYTES + 1)})
    assert error.line == 1
    assert "cannot be recorded as a turn entry: body.text: expected at most" in str(error)


def test_tool_name_with_control_character_fail() -> None:
    call = CALL | {"function": {"name": "bash\nrm -rf /", "arguments": "{}"}}
    error = _openai_refusal(ASK | {"tool_calls": [call]})
    assert "body.name: expected a name without control characters" in str(error)


def test_tool_name_too_long_for_an_actor_fail() -> None:
    call = CALL | {"function": {"name": "t" * 256, "arguments": "{}"}}
    error = _openai_refusal(ASK | {"tool_calls": [call]}, ANSWER)
    assert error.line == 2
    assert "tool.result entry" in str(error)


# --- refusals: Anthropic -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (b"", "$"),
        (b'{"messages": []} x', "$"),
        (b"[]", "$"),
        (b'{"system": "x"}', "$.messages"),
        (b'{"messages": {}}', "$.messages"),
        (b'{"messages": [], "model": "claude"}', "$.model"),
        (b'{"messages": [], "system": 1}', "$.system"),
        (_anthropic({"role": "system", "content": "x"}), "$.messages[0].role"),
        (_anthropic({"role": ["user"], "content": "x"}), "$.messages[0].role"),
        (_anthropic({"role": "user", "content": "x", "id": 1}), "$.messages[0].id"),
        (
            _anthropic({"role": "user", "content": [{"type": "image"}]}),
            "$.messages[0].content[0].type",
        ),
        (_anthropic({"role": "user", "content": [USE]}), "$.messages[0].content[0].type"),
        (_anthropic({"role": "assistant", "content": [RESULT]}), "$.messages[0].content[0].type"),
        (
            _anthropic(
                {"role": "user", "content": [{"type": "text", "text": "x", "cache_control": {}}]}
            ),
            "$.messages[0].content[0].cache_control",
        ),
        (
            _anthropic({"role": "assistant", "content": [USE | {"input": "ls"}]}),
            "$.messages[0].content[0].input",
        ),
        (
            _anthropic(
                {"role": "assistant", "content": [USE]},
                {"role": "user", "content": [RESULT | {"is_error": "no"}]},
            ),
            "$.messages[1].content[0].is_error",
        ),
        (_anthropic({"role": "user", "content": [RESULT]}), "$.messages[0].content[0]"),
        (
            _anthropic(
                {"role": "assistant", "content": [USE]}, {"role": "assistant", "content": "x"}
            ),
            "$.messages[1].content",
        ),
    ],
)
def test_anthropic_refusal_names_the_json_path(data: bytes, where: str) -> None:
    assert _anthropic_refusal(data).where == where


def test_anthropic_result_must_come_before_user_text_fail() -> None:
    data = _anthropic(
        {"role": "assistant", "content": [USE]},
        {"role": "user", "content": [{"type": "text", "text": "wait"}, RESULT]},
    )
    error = _anthropic_refusal(data)
    assert error.where == "$.messages[1].content[0]"
    assert "'c1' (issued at $.messages[0].content[0]) has no result" in error.reason


# --- properties ----------------------------------------------------------------------------

_NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=8)
_TEXTS = st.text(max_size=20)
_numbers = st.one_of(
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not float_in_integer_gap(x)),
)
_arguments = st.dictionaries(
    st.text(max_size=5),
    st.recursive(
        st.one_of(st.none(), st.booleans(), _numbers, st.text(max_size=5)),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
        ),
        max_leaves=6,
    ),
    max_size=4,
)


@st.composite
def _conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """An abstract conversation: system texts first, then user and assistant messages;
    every call answered right after its message, except perhaps those of the last one."""
    steps: list[dict[str, Any]] = []
    if draw(st.booleans()):
        steps.append({"role": "system", "texts": draw(st.lists(_TEXTS, min_size=1, max_size=2))})
    ids = iter(range(10**6))
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.booleans()):
            steps.append({"role": "user", "texts": draw(st.lists(_TEXTS, min_size=1, max_size=2))})
            continue
        calls = [
            {
                "id": f"call_{next(ids)}_{draw(_NAMES)}",
                "name": draw(_NAMES),
                "arguments": draw(_arguments),
            }
            for _ in range(draw(st.integers(0, 3)))
        ]
        steps.append(
            {"role": "assistant", "texts": draw(st.lists(_TEXTS, max_size=2)), "calls": calls}
        )
        if calls:
            answered = draw(st.permutations(calls))
            results = [
                {"id": call["id"], "parts": draw(st.lists(_TEXTS, max_size=3))} for call in answered
            ]
            steps.append({"role": "results", "results": results})
    if steps and steps[-1]["role"] == "results" and draw(st.booleans()):
        steps[-1]["results"] = steps[-1]["results"][
            : draw(st.integers(0, len(steps[-1]["results"])))
        ]
    return steps


def _expected(steps: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str]]:
    """The entries the mapping of specs/entries.md section 6 promises, arguments as values."""
    names = {}
    out: list[tuple[str, dict[str, Any], str]] = []
    for step in steps:
        for text in step.get("texts", []):
            if text:
                out.append(("turn", {"role": step["role"], "text": text}, step["role"]))
        for call in step.get("calls", []):
            names[call["id"]] = call["name"]
            body = {"call_id": call["id"], "name": call["name"], "arguments": call["arguments"]}
            out.append(("tool.call", body, "assistant"))
        for result in step.get("results", []):
            name = names[result["id"]]
            body = {"call_id": result["id"], "content": "".join(result["parts"]), "name": name}
            out.append(("tool.result", body, f"tool:{name}"))
    return out


def _as_values(entries: list[ImportedEntry]) -> list[tuple[str, dict[str, Any], str]]:
    """Entries with ``arguments_json`` read back into ``arguments``."""
    out = []
    for kind, body, actor in entries:
        body = dict(body)
        if "arguments_json" in body:
            body["arguments"] = parse_strict(body.pop("arguments_json"))
        out.append((kind, body, actor))
    return out


_Draw = Callable[[st.SearchStrategy[Any]], Any]


def _content(texts: list[str], draw: _Draw) -> object:
    """Texts as one string (when there is one and the draw says so) or as text parts."""
    if len(texts) == 1 and draw(st.booleans()):
        return texts[0]
    return [{"type": "text", "text": text} for text in texts]


def _render_openai(steps: list[dict[str, Any]], draw: _Draw) -> bytes:
    lines = []
    for step in steps:
        if step["role"] == "results":
            for result in step["results"]:
                content = _content(result["parts"], draw) if result["parts"] else ""
                lines.append({"role": "tool", "tool_call_id": result["id"], "content": content})
            continue
        message: dict[str, Any] = {"role": step["role"]}
        if step["texts"]:
            message["content"] = _content(step["texts"], draw)
        elif step["role"] == "assistant":
            message["content"] = draw(st.sampled_from([None, ""]))
        if step.get("calls"):
            message["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
                }
                for call in step["calls"]
            ]
        lines.append(message)
    ascii_only = draw(st.booleans())
    return "".join(json.dumps(line, ensure_ascii=ascii_only) + "\n" for line in lines).encode()


def _render_anthropic(steps: list[dict[str, Any]], draw: _Draw) -> bytes:
    document: dict[str, Any] = {"messages": []}
    for step in steps:
        if step["role"] == "system":
            document["system"] = _content(step["texts"], draw)
        elif step["role"] == "results":
            blocks = [
                {
                    "type": "tool_result",
                    "tool_use_id": result["id"],
                    "content": _content(result["parts"], draw),
                }
                for result in step["results"]
            ]
            document["messages"].append({"role": "user", "content": blocks})
        else:
            content = _content(step["texts"], draw)
            if step.get("calls"):
                content = (
                    content if isinstance(content, list) else [{"type": "text", "text": content}]
                )
                content += [
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["name"],
                        "input": call["arguments"],
                    }
                    for call in step["calls"]
                ]
            document["messages"].append({"role": step["role"], "content": content})
    return json.dumps(document, ensure_ascii=draw(st.booleans())).encode()


@given(steps=_conversations(), data=st.data())
def test_well_formed_conversations_round_trip_in_both_shapes(
    steps: list[dict[str, Any]], data: st.DataObject
) -> None:
    openai = parse_openai(_render_openai(steps, data.draw))
    anthropic = parse_anthropic(_render_anthropic(steps, data.draw))
    assert openai == anthropic
    assert _as_values(openai) == _expected(steps)


_mutation = st.tuples(
    st.sampled_from(["replace", "insert", "delete", "truncate"]),
    st.floats(min_value=0, max_value=1, exclude_max=True),
    st.binary(min_size=1, max_size=4),
)


def _mutate(data: bytes, mutations: list[tuple[str, float, bytes]]) -> bytes:
    for operation, where, payload in mutations:
        at = int(where * len(data))
        if operation == "replace":
            data = data[:at] + payload + data[at + len(payload) :]
        elif operation == "insert":
            data = data[:at] + payload + data[at:]
        elif operation == "delete":
            data = data[:at] + data[at + len(payload) :]
        else:
            data = data[:at]
    return data


@given(
    steps=_conversations(),
    shape=st.sampled_from(["openai", "anthropic"]),
    mutations=st.lists(_mutation, min_size=1, max_size=4),
    data=st.data(),
)
def test_mutated_files_raise_only_transcript_errors(
    steps: list[dict[str, Any]],
    shape: str,
    mutations: list[tuple[str, float, bytes]],
    data: st.DataObject,
) -> None:
    render = _render_openai if shape == "openai" else _render_anthropic
    mutated = _mutate(render(steps, data.draw), mutations)
    try:
        entries = FORMATS[shape](mutated)
    except TranscriptError:
        event("refused")
        return
    event("accepted")
    for entry in entries:  # an accepted file gives only signable entries
        canonical_bytes(entry.body)


@given(
    shape=st.sampled_from(["openai", "anthropic"]),
    mutations=st.lists(_mutation, min_size=1, max_size=3),
)
def test_mutated_real_files_raise_only_transcript_errors(
    shape: str, mutations: list[tuple[str, float, bytes]]
) -> None:
    original = OPENAI_FILE if shape == "openai" else ANTHROPIC_FILE
    try:
        entries = FORMATS[shape](_mutate(original, mutations))
    except TranscriptError:
        event("refused")
        return
    event("accepted")
    for entry in entries:
        canonical_bytes(entry.body)


# --- the CLI command -----------------------------------------------------------------------


@pytest.fixture
def ledger_files(tmp_path: Path) -> tuple[Path, Path]:
    """A ledger database with an empty thread ``t1``, and its operator key file."""
    signer = Signer.generate("example.org")
    key_file = tmp_path / "operator.key"
    signer.save(key_file)
    database = tmp_path / "ledger.db"
    with Ledger.open(str(database), signer) as ledger:
        ledger.create_thread("t1")
    return database, key_file


def _run(*args: str | Path) -> int:
    try:
        main([str(arg) for arg in args])
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return 0


def _size(database: Path) -> int:
    with Ledger.open(str(database), create=False) as ledger:
        return ledger.thread("t1").head().size


def test_import_command_appends_the_whole_transcript(
    ledger_files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    database, key_file = ledger_files
    file = DATA / f"{STEM}.anthropic.json"
    code = _run(
        "import", "t1", file, "--format", "anthropic", "--db", database, "--key-file", key_file
    )
    assert code == 0
    assert capsys.readouterr().out == f"imported 553 entries from {file} into t1 (seq 0..552)\n"
    with Ledger.open(str(database), create=False) as ledger:
        stored = [(entry.kind, entry.body, entry.actor) for entry in ledger.thread("t1").entries()]
    assert stored == [tuple(entry) for entry in parse_openai(OPENAI_FILE)]


def test_import_command_bad_file_writes_nothing_fail(
    ledger_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database, key_file = ledger_files
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(OPENAI_FILE + b'{"role": "tool", "tool_call_id": "nobody", "content": ""}\n')
    code = _run("import", "t1", bad, "--format", "openai", "--db", database, "--key-file", key_file)
    assert code == 2
    error = capsys.readouterr().err
    assert error == (
        f"registre: error: {bad}: line 379: result for tool call 'nobody', which no earlier "
        "message issued\n"
    )
    assert _size(database) == 0


def test_import_command_unknown_thread_fail(
    ledger_files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    database, key_file = ledger_files
    file = DATA / f"{STEM}.openai.jsonl"
    code = _run(
        "import", "t2", file, "--format", "openai", "--db", database, "--key-file", key_file
    )
    assert code == 2
    assert "no thread 't2'" in capsys.readouterr().err
    assert _size(database) == 0
