"""A Pydantic AI Agent with RegistreCapability, on Pydantic AI's FunctionModel and TestModel:
the model receives registre's projection (the instructions inside it), every request is
rebuilt from the ledger byte for byte, tool calls and results land as entries, and the
thread's bundle verifies offline. SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from registre.adapters.pydantic_ai import RegistreCapability, model_messages, request_of
from registre.attest.canonical_json import canonical_bytes
from registre.attest.notes import Signer
from registre.attest.verify import TrustPolicy, verify_bundle
from registre.ledger import Ledger, export_thread


class Scripted:
    """A FunctionModel function: answers from a script, keeps what each call received."""

    def __init__(self, script: list[ModelResponse]) -> None:
        self.script = list(script)
        self.received: list[list[ModelMessage]] = []
        self.instructions: list[str | None] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.received.append(list(messages))
        self.instructions.append(info.instructions)
        return self.script.pop(0)


def _agent(model: Any, capability: RegistreCapability) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(
        model,
        system_prompt="You are a refunds clerk.",
        instructions="Answer in one sentence.",
        capabilities=[capability],
    )

    @agent.tool_plain
    def order_status(order: int) -> str:
        """The shipping status of an order."""
        return f"order {order}: shipped 2026-12-01"

    @agent.tool_plain
    def refund(order: int, amount_cents: int) -> str:
        """Refund part of an order."""
        return f"refunded {amount_cents} cents on order {order}"

    return agent


def test_a_run_sends_the_projection_and_every_request_replays(
    ledger: Ledger, signer: Signer, tmp_path: Path
) -> None:
    thread = ledger.create_thread("refunds")
    script = Scripted(
        [
            ModelResponse(parts=[ToolCallPart("order_status", '{"order": 7}', tool_call_id="s1")]),
            ModelResponse(
                parts=[
                    TextPart("Shipped; refunding."),
                    ToolCallPart("refund", {"order": 7, "amount_cents": 250}, tool_call_id="r1"),
                ]
            ),
            ModelResponse(parts=[TextPart("Refunded 2.50 EUR on order 7.")]),
            ModelResponse(parts=[TextPart("You're welcome.")]),
        ]
    )
    agent = _agent(FunctionModel(script), RegistreCapability(thread, "scripted-1", budget=4000))
    first = agent.run_sync("Refund 2.50 EUR on order 7.")
    assert first.output == "Refunded 2.50 EUR on order 7."
    second = agent.run_sync("Thanks!", message_history=first.all_messages())
    assert second.output == "You're welcome."

    entries = list(thread.entries())
    kinds = [e.kind for e in entries]
    assert kinds[:5] == ["turn", "turn", "turn", "model.call", "tool.call"]
    assert [e.body["text"] for e in entries[:3]] == [
        "You are a refunds clerk.",
        "Answer in one sentence.",
        "Refund 2.50 EUR on order 7.",
    ]
    assert kinds.count("turn") == 3 + 2 + 2  # prompt and instructions once, two asks, 2 answers
    assert kinds.count("tool.call") == kinds.count("tool.result") == 2
    assert entries[kinds.index("tool.call", 5)].body == {
        "call_id": "r1",
        "name": "refund",
        "arguments": {"order": 7, "amount_cents": 250},
    }
    calls = [e for e in entries if e.kind == "model.call"]
    assert len(calls) == len(script.received) == 4
    for received, call in zip(script.received, calls, strict=True):
        replayed = thread.replay_request(call.seq)
        assert canonical_bytes(request_of(received)) == canonical_bytes(replayed)
        digest = hashlib.sha256(canonical_bytes(request_of(received))).hexdigest()
        assert digest == call.body["projection_sha256"]
    assert script.instructions == [None] * 4  # they are in the projection, not beside it
    assert request_of(script.received[0])["messages"][:2] == [
        {"role": "system", "content": "You are a refunds clerk."},
        {"role": "system", "content": "Answer in one sentence."},
    ]

    thread.checkpoint()
    export_thread(ledger, thread.id, tmp_path / "refunds.zip")
    report = verify_bundle(tmp_path / "refunds.zip", TrustPolicy(log_key=signer.verifier()))
    assert report.verified and report.kinds["model.call"] == 4


def test_test_model_calls_every_tool_through_the_capability(ledger: Ledger) -> None:
    thread = ledger.create_thread("refunds")
    agent = _agent(TestModel(), RegistreCapability(thread, "test", budget=4000))
    result = agent.run_sync("Refund order 7.")
    kinds = [e.kind for e in thread.entries()]
    assert kinds.count("tool.call") == kinds.count("tool.result") == 2
    assert kinds.count("model.call") == 2 and result.output
    for call in (e for e in thread.entries() if e.kind == "model.call"):
        assert thread.replay_request(call.seq)["messages"][0]["role"] == "system"


def test_model_messages_and_request_of_are_inverse() -> None:
    request = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Refund?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "refund", "arguments": '{"amount":2.5,"order":7}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
            {"role": "assistant", "content": "Refunded."},
        ]
    }
    assert request_of(model_messages(request)) == request


def test_a_tool_retry_is_recorded_as_an_error_result(ledger: Ledger) -> None:
    thread = ledger.create_thread("refunds")
    script = Scripted(
        [
            ModelResponse(parts=[ToolCallPart("refund", '{"order": 7}', tool_call_id="r1")]),
            ModelResponse(
                parts=[
                    ToolCallPart("refund", '{"order": 7, "amount_cents": 250}', tool_call_id="r2")
                ]
            ),
            ModelResponse(parts=[TextPart("Refunded.")]),
        ]
    )
    agent = _agent(FunctionModel(script), RegistreCapability(thread, "m", budget=4000))
    assert agent.run_sync("Refund order 7.").output == "Refunded."
    results = [e.body for e in thread.entries() if e.kind == "tool.result"]
    assert results[0]["call_id"] == "r1" and results[0]["is_error"] is True
    assert "amount_cents" in results[0]["content"]  # the validation error the model was shown
    assert results[1] == {
        "call_id": "r2",
        "content": "refunded 250 cents on order 7",
        "name": "refund",
    }
    calls = [e for e in thread.entries() if e.kind == "model.call"]
    for received, call in zip(script.received, calls, strict=True):
        assert request_of(received) == thread.replay_request(call.seq)
