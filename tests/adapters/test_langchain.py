"""LangChain v1's create_agent with RegistreMiddleware, a scripted chat model and two tools:
the model receives registre's projection, every call's request is rebuilt from the ledger
byte for byte, tool calls and results land as entries, a small budget compacts without
losing history, and the thread's bundle verifies offline. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from registre.adapters.langchain import (
    RegistreMiddleware,
    UnrecordedInputError,
    chat_messages,
    request_of,
)
from registre.attest.canonical_json import canonical_bytes
from registre.attest.notes import Signer
from registre.attest.verify import TrustPolicy, verify_bundle
from registre.context import Policy
from registre.ledger import Ledger, Thread, export_thread
from tests.adapters.scripted_chat import ScriptedChat


@tool
def order_status(order: int) -> str:
    """The shipping status of an order."""
    return f"order {order}: shipped 2026-12-01, carrier DHL, " + "tracking " * 30


@tool
def refund(order: int, amount_cents: int) -> str:
    """Refund part of an order."""
    return f"refunded {amount_cents} cents on order {order}"


def _call(call_id: str, name: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def _script(turns: int) -> list[AIMessage]:
    script: list[AIMessage] = []
    for n in range(turns):
        script += [
            _call(f"s{n}", "order_status", order=n),
            _call(f"r{n}", "refund", order=n, amount_cents=250 * (n + 1)),
            AIMessage(content=f"Order {n}: refunded {2.5 * (n + 1)} EUR."),
        ]
    return script


def _agent(model: ScriptedChat, middleware: RegistreMiddleware) -> Any:
    return create_agent(
        model,
        [order_status, refund],
        system_prompt="You are a refunds clerk. Answer briefly.",
        middleware=[middleware],
    )


def _model_calls(thread: Thread) -> list[Any]:
    return [e for e in thread.entries() if e.kind == "model.call"]


def test_an_agent_runs_through_the_projection_and_every_request_replays(
    ledger: Ledger, signer: Signer, tmp_path: Path
) -> None:
    thread = ledger.create_thread("refunds")
    model = ScriptedChat(responses=_script(2), received=[])
    agent = _agent(model, RegistreMiddleware(thread, "scripted-1", budget=4000))
    config: Any = {"configurable": {"thread_id": "refunds"}}
    first = agent.invoke({"messages": [HumanMessage(content="Refund order 0.")]}, config)
    assert first["messages"][-1].content == "Order 0: refunded 2.5 EUR."
    agent.invoke({"messages": [HumanMessage(content="Now order 1.")]}, config)

    kinds = [e.kind for e in thread.entries()]
    assert kinds[:4] == ["turn", "turn", "model.call", "tool.call"]
    assert thread.entry(0).body == {
        "role": "system",
        "text": "You are a refunds clerk. Answer briefly.",
    }
    assert kinds.count("turn") == 1 + 2 + 2  # the prompt once, two asks, two answers
    assert kinds.count("tool.call") == kinds.count("tool.result") == 4
    calls = _model_calls(thread)
    assert len(calls) == len(model.received) == 6
    for received, call in zip(model.received, calls, strict=True):
        replayed = thread.replay_request(call.seq)  # rebuilt from the ledger, digest proved
        assert canonical_bytes(request_of(received)) == canonical_bytes(replayed)
        digest = hashlib.sha256(canonical_bytes(request_of(received))).hexdigest()
        assert digest == call.body["projection_sha256"] and call.body["shape"] == "openai.chat"
    assert isinstance(model.received[0][0], SystemMessage)  # the prompt, from the projection
    assert sum(isinstance(m, SystemMessage) for m in model.received[-1]) == 1
    second_call = model.received[1]
    assert isinstance(second_call[-1], ToolMessage) and "shipped" in str(second_call[-1].content)
    refund_call = thread.entry(kinds.index("tool.call", 4))
    assert refund_call.body == {
        "call_id": "r0",
        "name": "refund",
        "arguments": {"order": 0, "amount_cents": 250},
    }
    result = thread.entry(kinds.index("tool.result", kinds.index("tool.result") + 1))
    assert result.actor == "tool:refund"
    assert result.body == {
        "call_id": "r0",
        "content": "refunded 250 cents on order 0",
        "name": "refund",
    }

    thread.checkpoint()
    export_thread(ledger, thread.id, tmp_path / "refunds.zip")
    report = verify_bundle(tmp_path / "refunds.zip", TrustPolicy(log_key=signer.verifier()))
    assert report.verified and report.kinds["model.call"] == 6


def test_a_small_budget_compacts_and_loses_nothing(ledger: Ledger) -> None:
    thread = ledger.create_thread("refunds")
    policy = Policy(budget_tokens=700, keep_recent_turns=2)
    model = ScriptedChat(responses=_script(4), received=[])
    agent = _agent(model, RegistreMiddleware(thread, "m", budget=700, policy=policy))
    for n in range(4):
        config: Any = {"configurable": {"thread_id": "refunds"}}
        agent.invoke({"messages": [HumanMessage(content=f"Refund order {n}.")]}, config)
    entries = list(thread.entries())
    compactions = [e for e in entries if e.kind == "context.compaction"]
    assert compactions, "the small budget made the context compact"
    folded = compactions[0].body["folded"]
    entry, _proof = thread.expand(folded["from"])  # the folded history, still there, proved
    assert entry.seq == folded["from"]
    sent = model.received[-1]
    assert not any(m.content == "Refund order 0." for m in sent)  # folded out of the context
    for received, call in zip(model.received, _model_calls(thread), strict=True):
        assert request_of(received) == thread.replay_request(call.seq)


def test_the_async_agent_records_the_same_way(ledger: Ledger) -> None:
    thread = ledger.create_thread("refunds")
    model = ScriptedChat(responses=_script(1), received=[])
    agent = _agent(model, RegistreMiddleware(thread, "m", budget=4000))
    config: Any = {"configurable": {"thread_id": "refunds"}}
    done = asyncio.run(
        agent.ainvoke({"messages": [HumanMessage(content="Refund order 0.")]}, config)
    )
    assert done["messages"][-1].content == "Order 0: refunded 2.5 EUR."
    calls = _model_calls(thread)
    assert [request_of(r) for r in model.received] == [thread.replay_request(c.seq) for c in calls]


def test_a_state_the_thread_does_not_hold_is_refused(ledger: Ledger) -> None:
    thread = ledger.create_thread("refunds")
    middleware = RegistreMiddleware(thread, "m", budget=4000)
    thread.append("turn", {"role": "user", "text": "something else"}, "user")
    model = ScriptedChat(responses=_script(1), received=[])
    state: Any = {
        "messages": [
            HumanMessage(content="Refund order 0.", id="h1"),
            _call("s0", "order_status", order=0),
            ToolMessage(content="order 0: shipped", tool_call_id="s0", id="t1"),
        ]
    }
    agent = _agent(model, middleware)
    with pytest.raises(UnrecordedInputError, match="ToolMessage"):
        agent.invoke(state, {"configurable": {"thread_id": "x"}})
    assert model.received == [] and [e.kind for e in thread.entries()] == ["turn"]


def test_chat_messages_and_request_of_are_inverse() -> None:
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
    assert request_of(chat_messages(request)) == request
