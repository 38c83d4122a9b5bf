"""LoCoMo in every shape it is published in, read the same; questions chosen deterministically."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from registre.bench.real.locomo import LocomoError, load_locomo, pick_questions
from tests.bench.real.fixtures import RARE_TURN, locomo_sample, v2_layout, write_json


def _shapes(tmp_path: Path) -> dict[str, Path]:
    sample = locomo_sample()
    folder = tmp_path / "v2"
    folder.mkdir()
    write_json(folder / "7.json", v2_layout(sample))
    archive = tmp_path / "locomo.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("data/locomo10.json", __import__("json").dumps([sample]))
    return {
        "list": write_json(tmp_path / "locomo10.json", [sample]),
        "sample": write_json(tmp_path / "one.json", sample),
        "v2 file": write_json(tmp_path / "26.json", v2_layout(sample)),
        "v2 folder": folder,
        "zip": archive,
    }


def test_every_shape_reads_the_same(tmp_path: Path) -> None:
    read = {name: load_locomo(path) for name, path in _shapes(tmp_path).items()}
    sessions = {name: convs[0].sessions for name, convs in read.items()}
    assert all(len(convs) == 1 for convs in read.values())
    assert len({repr(value) for value in sessions.values()}) == 1
    conversation = read["list"][0]
    assert conversation.sample_id == "tiny-1"
    assert [s.number for s in conversation.sessions] == [1, 2, 3]  # session 4 has no turns
    assert conversation.sessions[0].turns[2].text == RARE_TURN
    assert conversation.sessions[0].turns[2].dia_id == "D1:3"
    assert read["v2 folder"][0].sample_id == "7"


def test_questions_without_answer_or_known_evidence_are_not_asked(tmp_path: Path) -> None:
    (conversation,) = load_locomo(write_json(tmp_path / "a.json", locomo_sample()))
    asked = pick_questions(conversation, 30)
    assert [q.category for q in asked] == [4, 2]
    assert pick_questions(conversation, 1) == pick_questions(conversation, 1)
    assert len(pick_questions(conversation, 1)) == 1
    assert pick_questions(conversation, 30, frozenset({2})) == [asked[1]]


def test_photo_caption_is_part_of_the_turn(tmp_path: Path) -> None:
    sample = locomo_sample()
    sample["conversation"]["session_1"][0]["blip_caption"] = "a photo of a red kite"
    (conversation,) = load_locomo(write_json(tmp_path / "a.json", sample))
    assert conversation.sessions[0].turns[0].text.endswith("[shares a photo of a red kite]")


@pytest.mark.parametrize(
    "data",
    [
        {"x": 1},
        [1],
        {"speaker_a": "A", "session_1": []},
        {"speaker_a": "A", "session_1": [{"speaker": "A"}]},
    ],
)
def test_not_locomo_fail(tmp_path: Path, data: object) -> None:
    with pytest.raises(LocomoError):
        load_locomo(write_json(tmp_path / "bad.json", data))


def test_not_json_fail(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(LocomoError, match="not JSON"):
        load_locomo(path)
