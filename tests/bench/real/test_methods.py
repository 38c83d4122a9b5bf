"""The baselines: what each keeps of the same transcript, at the same budget and counter."""

from __future__ import annotations

from registre.bench.baselines import MASK_PLACEHOLDER
from registre.bench.real.methods import BASELINES, Bm25Index, Transcript
from registre.context import Policy, default_counter

FILLER = "We talked about the weather at the market and it was fine, as usual, nothing more."


def _transcript(budget: int, *, system: bool = True) -> Transcript:
    transcript = Transcript(default_counter(), budget, Policy(budget_tokens=budget))
    seq = 0

    def add(kind: str, body: dict[str, object]) -> None:
        nonlocal seq
        transcript.add(seq, kind, body)
        seq += 1

    if system:
        add("turn", {"role": "system", "text": "Always answer in French."})
    add("turn", {"role": "user", "text": "My cousin Zephyrine adopted a greyhound named Quillon."})
    add("tool.call", {"name": "lookup", "call_id": "c1", "arguments": {"q": "Quillon"}})
    add("tool.result", {"call_id": "c1", "content": "greyhound registry: Quillon, 3 years"})
    for index in range(40):
        role = "assistant" if index % 2 else "user"
        add("turn", {"role": role, "text": f"{FILLER} ({index})"})
    return transcript


def test_bm25_finds_the_turn_sharing_rare_words() -> None:
    transcript = _transcript(200)
    try:
        contents = transcript.view("bm25", "What is the name of Zephyrine's greyhound?").contents
        assert any("Zephyrine adopted" in content for content in contents)
        assert not any("Zephyrine" in c for c in transcript.view("truncation").contents)
    finally:
        transcript.close()


def test_bm25_index_ranks_by_rare_words() -> None:
    index = Bm25Index()
    try:
        for rowid, text in enumerate(["the cat sat", "the dog ran", "a greyhound named Quillon"]):
            index.add(rowid, text)
        assert index.search("Which greyhound? the")[0] == 2
        assert index.search("the and of") == []  # stopwords only: no informative term
        assert index.search('"dog" AND NOT* (cat') == [0, 1]  # FTS5 syntax is quoted away
    finally:
        index.close()


def test_every_baseline_keeps_the_system_prompt_and_fits() -> None:
    transcript = _transcript(300)
    try:
        for method in BASELINES:
            view = transcript.view(method, "weather")
            assert view.messages[0].content == "Always answer in French.", method
            assert view.tokens <= 300, method
    finally:
        transcript.close()


def test_truncation_keeps_the_newest() -> None:
    transcript = _transcript(300)
    try:
        contents = transcript.view("truncation").contents
        assert contents[-1].endswith("(39)")
        assert not any("(0)" in content for content in contents)
    finally:
        transcript.close()


def test_masking_hides_old_tool_outputs_only() -> None:
    transcript = _transcript(100_000)
    try:
        contents = transcript.view("masking").contents
        assert MASK_PLACEHOLDER in contents
        assert not any("registry" in content for content in contents)
        assert any("Zephyrine" in content for content in contents)
        assert any("registry" in c for c in transcript.view("truncation").contents)
    finally:
        transcript.close()


def test_ask_leaves_the_transcript_as_it_was() -> None:
    transcript = _transcript(250)
    try:
        for _ in range(3):  # the rolling summary advances at each call
            transcript.view("rolling")
        before = {method: transcript.view(method, "weather") for method in BASELINES}
        body = {"role": "user", "text": "What is the name of Zephyrine's greyhound?"}
        asked = transcript.ask(44, "turn", body, dict.fromkeys(BASELINES, body["text"]))
        assert all(view.contents[-1] == body["text"] for view in asked.values())
        after = {method: transcript.view(method, "weather") for method in BASELINES}
        assert after == before
    finally:
        transcript.close()
