"""attest.entry: building, signing and opening entry envelopes."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.canonical_json import NonCanonicalError, canonical_bytes
from registre.attest.entries import (
    ENTRY_SIGNATURE_PREFIX,
    ActorNameError,
    BodySchemaError,
    EntryFormatError,
    EntryOriginError,
    EntrySignatureError,
    InvalidActorError,
    InvalidThreadIdError,
    UnknownEntryKeyError,
    UnknownKindError,
    actor_name,
    check_actor,
    check_actor_name,
    format_time,
    open_entry,
    sign_entry,
)
from registre.attest.entries.entry import _canonical_envelope
from registre.attest.notes import SignatureInvalidError, Signer
from registre.attest.tree import empty_root, leaf_hash
from registre.errors import RegistreError

ACTOR = re.compile(r"[\w.@+/-]+(?::[\w.@+/-]+)*")

SIGNER = Signer.from_seed("registre.test/log", bytes(range(32)))
OTHER = Signer.from_seed("registre.test/log", bytes(range(1, 33)))
TIME = "2026-11-30T08:30:18.123456Z"
TURN = {"role": "user", "text": "Reconcile the Q3 figures."}

safe_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | safe_text,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(safe_text, children, max_size=4)
    ),
    max_leaves=12,
)


def make(seq: int = 0, body: Any = None, **fields: Any) -> Any:
    args: dict[str, Any] = {
        "thread": "t1",
        "seq": seq,
        "kind": "turn",
        "actor": "agent",
        "body": TURN if body is None else body,
        "prev_root": empty_root(),
        "time": TIME,
    }
    args.update(fields)
    return sign_entry(SIGNER, **args)


def resign(
    envelope: dict[str, Any], signer: Signer = SIGNER, prefix: bytes = ENTRY_SIGNATURE_PREFIX
) -> bytes:
    """Leaf bytes for an arbitrary envelope, signed without sign_entry's checks."""
    signature = signer.sign(prefix + canonical_bytes(envelope))
    return canonical_bytes({"entry": envelope, "sig": base64.b64encode(signature).decode()})


def leaf_value(entry: Any) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(entry.leaf)
    return value


# --- building and the round trip ---------------------------------------------------------


def test_sign_then_open_round_trip() -> None:
    entry = make(seq=0)
    opened = open_entry(entry.leaf, [SIGNER.verifier()])
    assert opened == entry
    assert opened.log == "registre.test/log/t1"
    assert opened.key == SIGNER.key_id.hex() and len(opened.key) == 8
    assert opened.leaf_hash == leaf_hash(entry.leaf)


def test_envelope_fields_are_the_documented_ones() -> None:
    value = leaf_value(make(seq=3, prev_root=b"\x07" * 32))
    assert set(value) == {"entry", "sig"}
    assert value["entry"] == {
        "v": 1,
        "log": "registre.test/log/t1",
        "thread": "t1",
        "seq": 3,
        "time": TIME,
        "kind": "turn",
        "actor": "agent",
        "body": TURN,
        "prev": {"size": 3, "root": base64.b64encode(b"\x07" * 32).decode()},
        "key": SIGNER.key_id.hex(),
    }


def test_signature_covers_prefix_and_canonical_envelope() -> None:
    entry = make()
    signed = ENTRY_SIGNATURE_PREFIX + canonical_bytes(entry.envelope())
    assert entry.signature == SIGNER.sign(signed)  # Ed25519 is deterministic
    SIGNER.verifier().verify(signed, entry.signature)
    for other in (
        canonical_bytes(entry.envelope()),  # without the prefix
        ENTRY_SIGNATURE_PREFIX + json.dumps(entry.envelope()).encode(),  # not canonical
    ):
        with pytest.raises(SignatureInvalidError):
            SIGNER.verifier().verify(other, entry.signature)


def test_signing_is_deterministic() -> None:
    assert make().leaf == make().leaf


def test_format_time_is_rfc3339_utc_with_microseconds() -> None:
    text = format_time()
    assert len(text) == len(TIME) and text.endswith("Z") and text[10] == "T"


@given(
    body=st.fixed_dictionaries(
        {
            "call_id": st.just("c1"),
            "name": st.just("tool"),
            "arguments": st.dictionaries(safe_text, json_values),
        }
    ),
    actor=st.text(alphabet=st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=20),
)
def test_leaf_is_canonical_bytes_of_entry_and_sig(body: dict[str, Any], actor: str) -> None:
    """Any actor check_actor allows -- outside the writers' grammar too, as entries signed
    before it may hold -- has canonical bytes and opens; a writer signs only names."""
    if ACTOR.fullmatch(actor) is None:
        with pytest.raises(ActorNameError):
            make(kind="tool.call", body=body, actor=actor)
    with mock.patch("registre.attest.entries.entry.check_actor_name", check_actor):
        entry = make(kind="tool.call", body=body, actor=actor)
    assert _canonical_envelope(entry.envelope()) == canonical_bytes(entry.envelope())
    sig = base64.b64encode(entry.signature).decode()
    assert entry.leaf == canonical_bytes({"entry": entry.envelope(), "sig": sig})
    assert open_entry(entry.leaf, [SIGNER.verifier()]) == entry


def test_astral_keys_sort_by_utf16_like_jcs() -> None:
    # U+1F600 sorts before U+FB01 in UTF-16 code units, after it in code points.
    body = {"call_id": "c", "name": "n", "arguments": {"\ufb01": 1, "\U0001f600": 2}}
    entry = make(kind="tool.call", body=body)
    assert entry.leaf == canonical_bytes(
        {"entry": entry.envelope(), "sig": base64.b64encode(entry.signature).decode()}
    )
    assert entry.leaf.index("\U0001f600".encode()) < entry.leaf.index("\ufb01".encode())


# --- refusals before signing -------------------------------------------------------------


@pytest.mark.parametrize("thread", ["", "a/b", "-x", "a b", "x" * 129, "é"])
def test_bad_thread_id_refused(thread: str) -> None:
    with pytest.raises(InvalidThreadIdError):
        make(thread=thread)


@pytest.mark.parametrize("actor", ["", "a\nb", "x" * 257, "\ud800"])
def test_bad_actor_refused(actor: str) -> None:
    with pytest.raises(InvalidActorError):
        make(actor=actor)


def test_unknown_kind_refused() -> None:
    with pytest.raises(UnknownKindError):
        make(kind="turn.v2")


def test_body_failing_schema_refused() -> None:
    with pytest.raises(BodySchemaError, match=r"body\.role"):
        make(body={"role": "tool", "text": "hi"})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("seq", -1),
        ("seq", True),
        ("prev_root", b"\x00" * 31),
        ("time", "2026-11-30 08:30:18Z"),
        ("time", "2026-02-30T08:30:18Z"),
        ("time", "2026-11-30T08:30:18+01:00"),
    ],
)
def test_bad_field_refused(field: str, value: object) -> None:
    with pytest.raises(EntryFormatError):
        make(**{field: value})


# --- open_entry: each step its own error -------------------------------------------------


def test_non_canonical_bytes_fail() -> None:
    entry = make()
    spaced = json.dumps(json.loads(entry.leaf), sort_keys=True).encode()
    with pytest.raises(NonCanonicalError):
        open_entry(spaced, [SIGNER.verifier()])


@pytest.mark.parametrize(
    "mutate",
    [
        lambda v: v.pop("sig"),
        lambda v: v.update(extra=1),
        lambda v: v["entry"].pop("time"),
        lambda v: v["entry"].update(extra=1),
        lambda v: v["entry"].update(v=2),
        lambda v: v["entry"].update(seq="0"),
        lambda v: v["entry"]["prev"].update(size=1),
        lambda v: v["entry"]["prev"].update(root="AAAA"),
        lambda v: v["entry"].update(key="ABCDEF12"),
        lambda v: v["entry"].update(body=[]),
        lambda v: v.update(sig=v["sig"][:-4]),
    ],
)
def test_malformed_envelope_fail(mutate: Any) -> None:
    value = leaf_value(make())
    mutate(value)
    with pytest.raises(EntryFormatError):
        open_entry(canonical_bytes(value), [SIGNER.verifier()])


def test_signature_malleability_non_canonical_base64_fail() -> None:
    value = leaf_value(make())
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    sig = value["sig"]  # 64 bytes: 86 characters + "==", the last one carries 4 spare bits
    spelled = sig[:85] + alphabet[alphabet.index(sig[85]) ^ 1] + "=="
    assert base64.b64decode(spelled) == base64.b64decode(sig)  # same bytes, other spelling
    value["sig"] = spelled
    with pytest.raises(EntryFormatError):
        open_entry(canonical_bytes(value), [SIGNER.verifier()])


def test_unknown_key_fail() -> None:
    with pytest.raises(UnknownEntryKeyError):
        open_entry(make().leaf, [OTHER.verifier()])


def test_wrong_origin_for_key_fail() -> None:
    envelope = make().envelope()
    envelope["log"] = "someone.else/log/t1"
    with pytest.raises(EntryOriginError):
        open_entry(resign(envelope), [SIGNER.verifier()])


def test_edited_body_fail() -> None:
    value = leaf_value(make())
    value["entry"]["body"]["text"] = "Reconcile the Q4 figures."
    with pytest.raises(EntrySignatureError):
        open_entry(canonical_bytes(value), [SIGNER.verifier()])


def test_edited_prev_root_fail() -> None:
    value = leaf_value(make())
    value["entry"]["prev"]["root"] = base64.b64encode(b"\x01" * 32).decode()
    with pytest.raises(EntrySignatureError):
        open_entry(canonical_bytes(value), [SIGNER.verifier()])


def test_cross_type_replay_fail() -> None:
    # A signature over the bare envelope (no entry prefix) is not an entry signature.
    envelope = make().envelope()
    with pytest.raises(EntrySignatureError):
        open_entry(resign(envelope, prefix=b""), [SIGNER.verifier()])


def test_signed_but_unknown_kind_fail() -> None:
    envelope = make().envelope()
    envelope["kind"] = "shell.exec"
    with pytest.raises(UnknownKindError):
        open_entry(resign(envelope), [SIGNER.verifier()])


def test_signed_but_schema_breaking_body_fail() -> None:
    envelope = make().envelope()
    envelope["body"] = {"role": "user"}
    with pytest.raises(BodySchemaError, match=r"body\.text"):
        open_entry(resign(envelope), [SIGNER.verifier()])


def test_keys_may_be_a_mapping() -> None:
    entry = make()
    assert open_entry(entry.leaf, {"operator": SIGNER.verifier()}) == entry


@given(position=st.integers(min_value=0), bit=st.integers(min_value=0, max_value=7))
def test_any_bit_flip_fail(position: int, bit: int) -> None:
    leaf = bytearray(make().leaf)
    leaf[position % len(leaf)] ^= 1 << bit
    with pytest.raises(RegistreError):  # whichever step notices first
        open_entry(bytes(leaf), [SIGNER.verifier()])


@pytest.mark.parametrize(
    ("actor", "hint"),
    [
        ("bob smith", "write 'bob_smith'"),
        ("tool:", "write 'tool:_'"),
        ("a::b", "write 'a:_:b'"),
        ("tool:my tool!", "write 'tool:my_tool_'"),
    ],
)
def test_actor_name_error_refuses_what_the_grammar_does_not_name(actor: str, hint: str) -> None:
    """Writers sign actor names only (specs/entries.md section 1): one error, with a name
    the grammar accepts in its hint."""
    with pytest.raises(ActorNameError) as info:
        make(actor=actor)
    assert isinstance(info.value, InvalidActorError)
    assert str(info.value).startswith(f"actor {actor!r} is not an actor name (")
    assert info.value.hint is not None and info.value.hint.endswith(hint)
    make(actor=actor_name(actor))


@pytest.mark.parametrize(
    "actor", ["agent", "tool:sql", "import:openai-responses", "bob.smith@acme.example", "josé"]
)
def test_actor_names_writers_sign(actor: str) -> None:
    check_actor_name(actor)
    assert make(actor=actor).actor == actor


ACTOR_VECTORS = json.loads(
    (Path(__file__).resolve().parents[3] / "specs" / "vectors" / "actor-names.json").read_text(
        encoding="utf-8"
    )
)


@pytest.mark.parametrize("actor", ACTOR_VECTORS["valid"])
def test_actor_name_vectors_valid(actor: str) -> None:
    check_actor_name(actor)
    assert actor_name(actor) == actor


@pytest.mark.parametrize("case", ACTOR_VECTORS["invalid"], ids=lambda case: case["why"])
def test_actor_name_vectors_invalid(case: dict[str, str]) -> None:
    with pytest.raises(ActorNameError) as info:
        check_actor_name(case["actor"])
    assert info.value.hint is not None and info.value.hint.endswith(f"write {case['name']!r}")
    assert actor_name(case["actor"]) == case["name"]
    check_actor_name(case["name"])
    check_actor(case["actor"])  # a verifier still reads it
