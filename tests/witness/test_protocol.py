"""registre.witness.protocol: the add-checkpoint body and the answers, byte for byte."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.notes import Checkpoint, CosignatureSigner, Signer, sign_checkpoint
from registre.witness.errors import (
    RequestFormatError,
    RequestTooLargeError,
    TreeTooLargeError,
)
from registre.witness.protocol import (
    MAX_REQUEST_BYTES,
    AddCheckpointRequest,
    encode_size_body,
    parse_cosignature_lines,
    parse_size_body,
)

LOG = Signer.from_seed("example.com/log", bytes(range(32)))
NOTE = sign_checkpoint(Checkpoint("example.com/log/t1", 9, bytes(range(32))), LOG)
TEXT = NOTE[: NOTE.index("\n\n") + 1]

# The example request of C2SP tlog-witness (its signatures are from a key we do not hold;
# parsing checks form only).
SPEC_EXAMPLE = """old 20852014
PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=
jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=
5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=
/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=

example.com/behind-the-sofa
20852163
CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=

— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=
— example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=
"""  # noqa: E501


def test_spec_example_request_parsed() -> None:
    request = AddCheckpointRequest.parse(SPEC_EXAMPLE.encode())
    assert request.old_size == 20852014
    assert len(request.proof) == 4
    assert request.proof[0] == base64.b64decode("PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=")
    assert (request.checkpoint.origin, request.checkpoint.size) == (
        "example.com/behind-the-sofa",
        20852163,
    )
    assert request.encode() == SPEC_EXAMPLE.encode()


@given(
    old=st.integers(0, 9),
    proof=st.lists(st.binary(min_size=32, max_size=32), max_size=63),
)
def test_encode_parse_round_trip(old: int, proof: list[bytes]) -> None:
    request = AddCheckpointRequest.build(old, proof, NOTE)
    assert AddCheckpointRequest.parse(request.encode()) == request
    assert request.note == NOTE and request.proof == tuple(proof)


def body(old_line: str, proof_lines: list[str], note: str = NOTE) -> bytes:
    return ("\n".join([old_line, *proof_lines, ""]) + "\n" + note).encode()


HASH = base64.b64encode(bytes(32)).decode()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "line 1 must be 'old N'"),
        (b"old 5", "line 1 must be 'old N'"),
        (body("old 05", []), "line 1"),
        (body("old +5", []), "line 1"),
        (body("old  5", []), "line 1"),
        (body("Old 5", []), "line 1"),
        (body("old 5\r", []), "line 1"),
        (body("old ５", []), "line 1"),  # a fullwidth digit is not ASCII decimal
        (body("old 123456789012345678901", []), "line 1"),  # more than 20 digits
        (body("old 0", [HASH[:-1]]), "line 2"),
        (body("old 0", [base64.b64encode(bytes(31)).decode()]), "32 bytes"),
        (body("old 0", [HASH.replace("=", "")]), "line 2"),
        (body("old 0", [HASH] * 64), "more than 63"),
        (b"old 0\n" + HASH.encode() + b"\n", "no empty line"),
        (b"\xffold 0\n\n", "not UTF-8"),
        (body("old 0", [], NOTE.replace("\n\n", "\n")), "checkpoint note"),
        (body("old 0", [], "hello\n\n— x AAAAAAAAAA==\n"), "checkpoint note"),
        (body("old 0", [], TEXT), "checkpoint note"),  # unsigned
        (body("old 0", [], NOTE + "\x01"), "checkpoint note"),
    ],
)
def test_malformed_request_fail(data: bytes, message: str) -> None:
    with pytest.raises(RequestFormatError, match=message) as info:
        AddCheckpointRequest.parse(data)
    assert info.value.http_status == 400


def test_63_proof_lines_read() -> None:
    assert len(AddCheckpointRequest.parse(body("old 0", [HASH] * 63)).proof) == 63


def test_oversized_request_fail() -> None:
    with pytest.raises(RequestTooLargeError) as info:
        AddCheckpointRequest.parse(b"old 0\n\n" + b"x" * MAX_REQUEST_BYTES)
    assert info.value.http_status == 413


def test_tree_beyond_2_62_fail() -> None:
    with pytest.raises(TreeTooLargeError):
        AddCheckpointRequest.parse(body(f"old {2**62 + 1}", []))
    huge = sign_checkpoint(Checkpoint("example.com/log/t1", 2**64 - 1, bytes(32)), LOG)
    with pytest.raises(TreeTooLargeError):
        AddCheckpointRequest.parse(body("old 0", [], huge))


def test_size_body() -> None:
    assert encode_size_body(20852014) == b"20852014\n"
    assert parse_size_body(b"0\n") == 0
    for bad in (b"", b"5", b"05\n", b"5\n\n", b"-5\n", b"five\n", b"1" * 30 + b"\n"):
        with pytest.raises(RequestFormatError):
            parse_size_body(bad)


def test_cosignature_lines_read_as_note_signatures() -> None:
    witness = CosignatureSigner.from_seed("witness.example/w1", bytes([4]) * 32)
    other = CosignatureSigner.from_seed("witness.example/w2", bytes([6]) * 32)
    answer = (witness.cosign(TEXT, 1) + other.cosign(TEXT, 2)).encode()
    signatures = parse_cosignature_lines(TEXT, answer)
    assert [s.name for s in signatures] == ["witness.example/w1", "witness.example/w2"]
    assert witness.verifier().verify(TEXT.encode(), signatures[0].signature) == 1


@pytest.mark.parametrize(
    "answer",
    [b"", b"ok\n", b"\xe2\x80\x94 w AAAAAAA=", b"\n\xe2\x80\x94 w AAAAAAAA\n", b"x" * 70000],
)
def test_malformed_answer_fail(answer: bytes) -> None:
    with pytest.raises(RequestFormatError):
        parse_cosignature_lines(TEXT, answer)
