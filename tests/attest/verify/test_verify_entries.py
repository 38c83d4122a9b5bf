"""attest.verify_entries: the fast leaf opener is exactly open_entry, and spreading step 3
over processes changes nothing but the time."""

from __future__ import annotations

import base64
import functools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import registre.attest.entries._leaf_open as leaf_open
import registre.attest.verify.entries as verify_entries
from registre.attest.entries import (
    ENTRY_SIGNATURE_PREFIX,
    Entry,
    EntrySignatureError,
    open_entry,
    open_leaf,
)
from registre.attest.verify import check_entries, report_of, thin_marks, verify_bundle
from registre.errors import RegistreError
from tests.bundles import ATTACKER, LOG, build_thread, policy
from tests.tamper.helpers import entry_lines, with_entry_lines

KEYS = [LOG.verifier()]
TEXTS = [
    "plain",
    'quote " backslash \\ slash /',
    "controls \x00\x01\x1f\x7f and \n\r\t\b\f",
    "separators \u2028\u2029",
    "accents é ü and CJK 漢字",
    "astral 😀 𝄞",
]


@functools.cache
def sample_leaves() -> list[bytes]:
    thread = build_thread(10)
    for text in TEXTS:
        thread.turn(text)
    # JCS orders keys by UTF-16 units: U+1F600 (D83D DE00) sorts before U+FFFF
    thread.append("tool.call", {"call_id": "c1", "name": "t", "arguments": {"\uffff": 1, "😀": 2}})
    return thread.leaves


def outcome(opener: Any, leaf: bytes) -> tuple[str, Any]:
    try:
        entry: Entry = opener(leaf, KEYS)
    except RegistreError as error:
        return type(error).__name__, str(error)
    return "ok", entry


def mutate(leaf: bytes, edits: list[tuple[str, int, bytes]]) -> bytes:
    data = bytearray(leaf)
    for kind, position, payload in edits:
        position %= len(data) + 1
        if kind == "flip" and position < len(data):
            data[position] ^= payload[0] or 1
        elif kind == "insert":
            data[position:position] = payload
        else:
            del data[position : position + len(payload)]
    return bytes(data)


edits = st.lists(
    st.tuples(
        st.sampled_from(["flip", "insert", "delete"]),
        st.integers(0, 4000),
        st.one_of(
            st.binary(min_size=1, max_size=4),
            st.sampled_from([b" ", b"1", b".0", b"e1", b'"', b"\\", b"\\u0041", b",", b"}"]),
        ),
    ),
    max_size=3,
)


@given(index=st.integers(0, 16), changes=edits)
def test_open_leaf_is_exactly_open_entry(index: int, changes: list[tuple[str, int, bytes]]) -> None:
    leaves = sample_leaves()
    leaf = mutate(leaves[index % len(leaves)], changes)
    assert outcome(open_leaf, leaf) == outcome(open_entry, leaf)


def test_typical_leaves_never_need_open_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path itself accepts every genuine leaf (astral text excepted)."""

    def refuse(*_: Any) -> Entry:
        raise AssertionError("fell back to open_entry")

    monkeypatch.setattr(leaf_open, "open_entry", refuse)
    for leaf in sample_leaves():
        if "😀".encode() not in leaf and "𝄞".encode() not in leaf:
            assert open_leaf(leaf, KEYS).leaf == leaf


def test_unpinned_key_is_refused_by_both_paths() -> None:
    leaf = build_thread(1, signer=ATTACKER, story=False).leaves[0]
    assert outcome(open_leaf, leaf)[0] == outcome(open_entry, leaf)[0] == "UnknownEntryKeyError"


@functools.cache
def long_bundle() -> tuple[bytes, list[bytes]]:
    bundle = build_thread(700).full_bundle()
    return bundle, entry_lines(bundle)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spread even these small bundles over processes (the default waits for 1024 each)."""
    monkeypatch.setattr(verify_entries, "MIN_LEAVES_PER_PROCESS", 64)


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("line", [12, 300, 650])
def test_jobs_give_the_same_first_failure(line: int) -> None:
    bundle, lines = long_bundle()
    lines = list(lines)
    assert b"turn " in lines[line]
    lines[line] = lines[line].replace(b"turn ", b"Turn ")
    lines[line + 20] = lines[line + 20].replace(b"turn ", b"Turn ")  # a later failure too
    tampered = with_entry_lines(bundle, lines)
    failures = []
    for jobs in (1, 2):
        with pytest.raises(EntrySignatureError) as info:
            verify_bundle(tampered, policy(), jobs=jobs)
        report = report_of(info.value)
        assert report is not None and report.failure is not None
        failures.append((report.failure.seq, str(info.value)))
    assert failures[0] == failures[1] == (line, failures[0][1])


@pytest.mark.usefixtures("small_chunks")
def test_jobs_give_the_same_facts() -> None:
    bundle, lines = long_bundle()
    reports = [verify_bundle(bundle, policy(), jobs=jobs).to_json() for jobs in (1, 2, 3)]
    assert reports[0] == reports[1] == reports[2]
    checked = check_entries(
        lines,
        seqs=range(700),
        full=True,
        origin=build_thread(1).origin,
        keys=KEYS,
        root_sizes=[0, 1, 700],
        jobs=2,
    )
    assert sorted(checked.roots) == [0, 1, 700]
    assert [record.seq for record in checked.records] == [1, 2, 3, 4, 5, 7, 8]


def test_jobs_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        check_entries([], seqs=[], full=True, origin="o", keys=KEYS, jobs=0)


def signed_leaf(envelope: bytes) -> bytes:
    """A leaf whose signature is valid over ``envelope`` exactly as written (any spelling)."""
    signature = base64.b64encode(LOG.sign(ENTRY_SIGNATURE_PREFIX + envelope))
    return b'{"entry":' + envelope + b',"sig":"' + signature + b'"}'


GENUINE_ENVELOPE = (
    b'{"actor":"agent","body":BODY,"key":"' + LOG.key_id.hex().encode() + b'","kind":"KIND",'
    b'"log":"registre.test/log/thread-1","prev":{"root":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG'
    b'3hSuFU=","size":SEQ},"seq":SEQ,"thread":"thread-1","time":"2026-11-30T08:30:18.123456Z",'
    b'"v":1}'
)


def envelope(
    kind: bytes = b"turn", body: bytes = b'{"role":"user","text":"x"}', seq: bytes = b"0"
) -> bytes:
    return GENUINE_ENVELOPE.replace(b"BODY", body).replace(b"KIND", kind).replace(b"SEQ", seq)


def arguments(value: bytes) -> bytes:
    """The envelope of a tool call with these arguments, as written."""
    return envelope(b"tool.call", b'{"arguments":' + value + b',"call_id":"c","name":"t"}')


def nested(levels: int, open_: bytes = b'{"a":', close: bytes = b"}") -> bytes:
    """Arguments nesting ``levels`` containers inside their object, around 1: the body then
    nests ``levels + 2`` deep (itself, the arguments, the levels)."""
    return b'{"x":' + open_ * levels + b"1" + close * levels + b"}"


@pytest.mark.parametrize(
    ("case", "leaf_envelope", "error"),
    [
        ("genuine", envelope(), None),
        ("huge seq", envelope(seq=b"1152921504606846976"), "IntegerRangeError"),
        (
            "float argument",
            envelope(b"tool.call", b'{"arguments":{"x":1.5},"call_id":"c","name":"t"}'),
            "FloatInBodyError",
        ),
        (
            "python float spelling",
            envelope(b"tool.call", b'{"arguments":{"x":1e-07},"call_id":"c","name":"t"}'),
            "NonCanonicalError",
        ),
        (
            "huge body integer",
            envelope(
                b"tool.call", b'{"arguments":{"x":18014398509481984},"call_id":"c","name":"t"}'
            ),
            "IntegerRangeError",
        ),
        (
            "nan",
            envelope(b"tool.call", b'{"arguments":{"x":NaN},"call_id":"c","name":"t"}'),
            "NonFiniteNumberError",
        ),
        (
            "duplicate key",
            envelope(body=b'{"role":"user","role":"user","text":"x"}'),
            "DuplicateKeyError",
        ),
        ("largest safe integer", arguments(b'{"x":9007199254740991}'), None),
        ("smallest safe integer", arguments(b'{"x":-9007199254740991}'), None),
        ("just beyond 2^53-1", arguments(b'{"x":9007199254740992}'), "IntegerRangeError"),
        ("sixteen digits in a string", arguments(b'{"x":"12345678901234567890"}'), None),
        ("float in the envelope", envelope(seq=b"0.0"), "NonCanonicalError"),
        ("32 levels", arguments(nested(30)), None),
        ("33 levels", arguments(nested(31)), "BodySchemaError"),
        ("33 levels of lists", arguments(nested(31, b"[", b"]")), "BodySchemaError"),
        ("brackets in strings", arguments(b'{"x":"' + b"[{" * 40 + b'"}'), None),
        ("whitespace", envelope(body=b'{"role":"user", "text":"x"}'), "NonCanonicalError"),
        ("non-BMP key", arguments('{"😀":1,"\uffff":2}'.encode()), None),
        (
            "non-BMP key in code point order",
            arguments('{"\uffff":2,"😀":1}'.encode()),
            "NonCanonicalError",
        ),
    ],
)
def test_signed_oddities_take_the_slow_path_to_the_same_verdict(
    case: str, leaf_envelope: bytes, error: str | None
) -> None:
    """Leaves validly signed over odd bytes: the signature alone must not make them pass."""
    leaf = signed_leaf(leaf_envelope)
    fast, slow = outcome(open_leaf, leaf), outcome(open_entry, leaf)
    assert fast == slow
    assert fast[0] == (error or "ok")


def test_small_bundles_stay_in_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pool(*_: Any, **__: Any) -> Any:
        raise AssertionError("a process pool was started")

    monkeypatch.setattr(verify_entries, "ProcessPoolExecutor", no_pool)
    bundle, _ = long_bundle()
    assert verify_bundle(bundle, policy(), jobs=2).verified  # 700 < 2 x 1024
    monkeypatch.setattr(verify_entries, "MIN_LEAVES_PER_PROCESS", 64)
    with pytest.raises(AssertionError, match="pool was started"):
        verify_bundle(bundle, policy(), jobs=2)


# --- the body rules proved from the text (leaf_open.body_rules_hold) -------------------------

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.sampled_from([2**53 - 1, 2**53, -(2**53 - 1), -(2**53), 10**15, 10**16])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet='ab1234567890[]{}"é😀\uffff', max_size=24),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet="ab😀\uffff", max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
) | st.integers(28, 36).map(lambda depth: functools.reduce(lambda v, _: [v], range(depth), 1))


@given(_JSON)
def test_signed_arguments_get_the_same_verdict_by_both_paths(value: Any) -> None:
    """Any arguments, signed as their RFC 8785 form: the fast path's verdict is open_entry's."""
    import rfc8785

    try:
        written = rfc8785.dumps({"x": value})
    except (rfc8785.IntegerDomainError, rfc8785.FloatDomainError):
        return
    leaf = signed_leaf(arguments(written))
    assert outcome(open_leaf, leaf) == outcome(open_entry, leaf)


def _same_failure(leaf_envelope: bytes, error: str) -> None:
    leaf = signed_leaf(leaf_envelope)
    fast, slow = outcome(open_leaf, leaf), outcome(open_entry, leaf)
    assert fast == slow
    assert fast[0] == error


def test_signed_float_argument_fail() -> None:
    _same_failure(arguments(b'{"x":0.5}'), "FloatInBodyError")


def test_signed_unsafe_integer_argument_fail() -> None:
    _same_failure(arguments(b'{"x":-9007199254740992}'), "IntegerRangeError")


def test_signed_body_nested_too_deep_fail() -> None:
    _same_failure(arguments(nested(40)), "BodySchemaError")


def test_signed_body_with_duplicate_key_fail() -> None:
    _same_failure(arguments(b'{"x":1,"x":1}'), "DuplicateKeyError")


def test_signed_body_with_whitespace_fail() -> None:
    _same_failure(arguments(b'{"x": 1}'), "NonCanonicalError")


def test_signed_non_bmp_keys_out_of_utf16_order_fail() -> None:
    _same_failure(arguments('{"\uffff":2,"😀":1}'.encode()), "NonCanonicalError")


# --- one opener for many leaves: its remembered verdicts change nothing ------------------


@given(
    picks=st.lists(st.tuples(st.integers(0, 16), edits), min_size=2, max_size=8),
)
def test_one_opener_over_many_leaves_is_exactly_open_entry(
    picks: list[tuple[int, list[tuple[str, int, bytes]]]],
) -> None:
    """A :class:`LeafOpener` remembers the checks of (log, thread, actor, key) and of the
    lifecycle head across leaves: over any run of genuine and changed leaves, each gets
    open_entry's outcome all the same."""
    leaves = sample_leaves()
    opener = leaf_open.LeafOpener(KEYS)
    for index, changes in picks:
        for leaf in (leaves[index % len(leaves)], mutate(leaves[index % len(leaves)], changes)):
            assert outcome(lambda leaf, _: opener.open(leaf), leaf) == outcome(open_entry, leaf)


def test_opener_remembers_only_what_passed_fail() -> None:
    """A bad actor after a good one of the same thread and key is still refused."""
    good = signed_leaf(envelope())
    bad = signed_leaf(envelope().replace(b'"actor":"agent"', b'"actor":"ag\\u0000ent"'))
    opener = leaf_open.LeafOpener(KEYS)

    def opened(leaf: bytes, _: object) -> Entry:
        return opener.open(leaf)

    assert outcome(opened, good)[0] == "ok"
    assert outcome(opened, bad) == outcome(open_entry, bad)
    assert outcome(opened, bad)[0] == "InvalidActorError"


def test_opener_takes_the_digest_given() -> None:
    """``digest`` is the caller's leaf hash (a chunk passes step 1's, equal by
    construction); without one the opener hashes the leaf itself."""
    leaf = signed_leaf(envelope())
    hashed = leaf_open.LeafOpener(KEYS).open(leaf)
    assert hashed == open_entry(leaf, KEYS)
    assert leaf_open.LeafOpener(KEYS).open(leaf, digest=hashed.leaf_hash) == hashed


@pytest.mark.parametrize("chunk", [1, 7, 64, 4096])
def test_marks_are_thinned_as_thin_marks_would(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """Step 3 makes a chain mark only where thin_marks would keep it: chunk by chunk, the
    marks are thin_marks of every line's mark."""
    from registre.attest.entries import LIFECYCLE_KINDS, ChainMark

    _, lines = long_bundle()
    monkeypatch.setattr(verify_entries, "MAX_CHUNK", chunk)
    checked = check_entries(
        lines, seqs=range(len(lines)), full=True, origin=build_thread(1).origin, keys=KEYS
    )
    every = [open_entry(line, KEYS) for line in lines]
    expected = []
    for start in range(0, len(every), chunk):
        expected += thin_marks(
            [
                ChainMark(e.seq, e.kind in LIFECYCLE_KINDS, e.leaf_hash, e.lifecycle)
                for e in every[start : start + chunk]
            ]
        )
    assert checked.marks == expected
    assert any(mark.lifecycle for mark in expected)
    assert len(expected) < len(lines) or chunk == 1  # one line a chunk: each is the last


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=8,
)


@given(
    st.one_of(
        json_values.map(lambda value: json.dumps({"entry": value}, ensure_ascii=False).encode()),
        json_values.map(lambda value: json.dumps(value, separators=(",", ":")).encode()),
        st.binary(max_size=20),
        st.binary(max_size=6).map(lambda tail: b'{"a":1}' + tail),
        st.sampled_from(
            [b"{\x00\x00\x00", b'{"a":"\xed\xa0\x80"}', b' {"a":1}', b"\xef\xbb\xbf{}"]
        ),
    )
)
def test_load_leaf_reads_what_json_loads_reads(data: bytes) -> None:
    """The verifier's reader of verified leaves is json.loads: same value, same error."""
    try:
        expected = json.loads(data)
    except (ValueError, RecursionError) as error:
        with pytest.raises(type(error)):
            leaf_open.load_leaf(data)
        return
    assert repr(leaf_open.load_leaf(data)) == repr(expected)  # NaN is not equal to itself
