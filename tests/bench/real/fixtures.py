"""Tiny data in the shapes the real-data suites read, written for these tests (no third-party
data): a LoCoMo conversation and an OpenAI chat-completions agent transcript."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RARE_TURN = "Ines: My cousin Zephyrine adopted a greyhound named Quillon in Reykjavik."
"""Turn D1:3: the evidence of the first question, sharing rare words with it."""
RECENT_TURN = "Ines: Tomas repainted the boathouse teal the week before the regatta."
"""Turn D3:11: the evidence of the second question, near the end."""

_TOPICS = (
    "the weather at the market",
    "a long walk along the river",
    "dinner plans with neighbours",
    "the new bakery on the corner",
    "a film we both liked",
    "train delays this morning",
)


def _filler(session: int, index: int, speaker: str) -> str:
    topic = _TOPICS[(session * 7 + index) % len(_TOPICS)]
    return (
        f"{speaker}: We talked again about {topic}, and it was pleasant enough; "
        f"nothing much happened there, as usual, round {session}.{index}."
    )


def _session(number: int, planted: dict[int, str], length: int) -> list[dict[str, Any]]:
    turns = []
    for index in range(1, length + 1):
        speaker = "Ines" if index % 2 else "Tomas"
        text = planted.get(index) or _filler(number, index, speaker)
        if text.startswith(f"{speaker}: "):
            text = text[len(speaker) + 2 :]
        turns.append({"speaker": speaker, "dia_id": f"D{number}:{index}", "text": text})
    return turns


def locomo_sample(sample_id: str = "tiny-1", length: int = 12) -> dict[str, Any]:
    """One sample as in ``locomo10.json``: three sessions, four questions (two asked: a
    category 5 one has no answer, one names no turn of the conversation)."""
    conversation: dict[str, Any] = {"speaker_a": "Ines", "speaker_b": "Tomas"}
    plants = {1: {3: RARE_TURN}, 2: {}, 3: {11: RECENT_TURN}}
    for number in (1, 2, 3):
        conversation[f"session_{number}_date_time"] = f"10:0{number} am on {number} June, 2024"
        conversation[f"session_{number}"] = _session(number, plants[number], length)
    conversation["session_4_date_time"] = "a session announced but never held"
    qa = [
        {
            "question": "What is the name of the greyhound Zephyrine adopted?",
            "answer": "Quillon",
            "evidence": ["D1:3"],
            "category": 4,
        },
        {
            "question": "When did Tomas repaint the boathouse?",
            "answer": "the week before the regatta",
            "evidence": ["D3:11"],
            "category": 2,
        },
        {
            "question": "What colour is Ines's greyhound?",
            "adversarial_answer": "teal",
            "evidence": ["D1:3"],
            "category": 5,
        },
        {"question": "Where?", "answer": "nowhere", "evidence": ["D9:9"], "category": 1},
    ]
    return {"sample_id": sample_id, "conversation": conversation, "qa": qa}


def v2_layout(sample: dict[str, Any]) -> dict[str, Any]:
    """The same sample in the per-conversation layout (``locomo10_v2/*.json``)."""
    return {**sample["conversation"], "qa": sample["qa"]}


def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` as JSON at ``path``; the path."""
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


POLICY = (
    "# Shop Agent Policy\n"
    "You must verify the customer's identity before changing any order.\n"
    "Never refund more than the amount the customer paid for the order.\n"
    "Hi."
)
"""A system prompt with two policy sentences (``Hi.`` and the title are too short)."""


def agent_transcript(steps: int = 12) -> list[dict[str, Any]]:
    """OpenAI chat-completions messages of an agent that reads a customer record holding an
    id, looks at unrelated orders, and uses the id again at the end."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": POLICY},
        {"role": "user", "content": "Please refund order 48213 for customer Ada Lovelace."},
    ]

    def call(index: int, name: str, arguments: dict[str, Any], result: str) -> None:
        call_id = f"call_{index:03d}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result})

    call(0, "get_customer", {"name": "Ada Lovelace"}, '{"customer_id": "cust_77410", "tier": 2}')
    for index in range(1, steps):
        call(
            index,
            "list_orders",
            {"page": index},
            f"page {index}: orders of other customers, nothing relevant " * 3,
        )
    call(steps, "refund", {"customer_id": "cust_77410", "order": "48213"}, '{"ok": true}')
    messages.append({"role": "assistant", "content": "Refunded order 48213 for cust_77410."})
    return messages
