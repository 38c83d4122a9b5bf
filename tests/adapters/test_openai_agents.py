"""The OpenAI Agents SDK's own Runner on a RegistreSession, with a scripted model: the run
lands in the ledger, compacts under a small budget, every model call is replayable, and the
exported bundle verifies offline. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.memory import Session

from registre.adapters.openai_agents import (
    RegistreSession,
    UnrecordedInputError,
    UnsupportedItemError,
)
from registre.attest.notes import Signer
from registre.attest.verify import TrustPolicy, verify_bundle
from registre.context import Policy
from registre.ledger import Ledger, export_thread
from tests.adapters.scripted_model import ScriptedModel, call, say


@function_tool
def fetch_page(page: int) -> str:
    """Fetch one page of the order log."""
    return f"page {page}: " + " ".join(f"order-{page}-{n} shipped" for n in range(40))


def _agent(model: ScriptedModel) -> Agent[Any]:
    return Agent(name="clerk", instructions="Answer briefly.", model=model, tools=[fetch_page])


def test_the_session_is_an_agents_session(ledger: Ledger) -> None:
    assert isinstance(RegistreSession(ledger, "s1"), Session)


def test_a_multi_turn_run_lands_compacts_replays_and_verifies(
    ledger: Ledger, signer: Signer, tmp_path: Path
) -> None:
    policy = Policy(budget_tokens=900, keep_recent_turns=2)
    session = RegistreSession(ledger, "orders", budget=900, policy=policy)
    config = RunConfig(
        call_model_input_filter=session.model_input_filter("scripted-1"), tracing_disabled=True
    )
    script = []
    for turn in range(4):
        script += [call(f"c{turn}", "fetch_page", f'{{"page": {turn}}}'), say(f"Page {turn} read.")]
    model = ScriptedModel(script)

    async def run() -> list[str]:
        outputs = []
        for turn in range(4):
            result = await Runner.run(
                _agent(model), f"Read page {turn}.", session=session, run_config=config
            )
            outputs.append(str(result.final_output))
        return outputs

    assert asyncio.run(run()) == [f"Page {turn} read." for turn in range(4)]
    thread = ledger.thread("orders")
    entries = list(thread.entries())
    kinds = [entry.kind for entry in entries]
    assert kinds.count("turn") == 9 and kinds.count("tool.call") == 4
    system = [e for e in entries if e.kind == "turn" and e.body["role"] == "system"]
    assert [e.body["text"] for e in system] == ["Answer briefly."]  # once, not once per call
    assert kinds.count("tool.result") == 4 and kinds.count("model.call") == 8
    assert "context.compaction" in kinds  # the small budget made the session compact
    calls = [entry for entry in entries if entry.kind == "model.call"]
    for sent, recorded in zip(model.inputs, calls, strict=True):
        assert recorded.body["shape"] == "openai.responses"
        assert thread.replay_request(recorded.seq)["input"] == sent  # the exact input, proved
    assert model.instructions == [None] * 8  # inside the digested input, not beside it
    for sent in model.inputs:  # verbatim, then (compacted) pinned word for word
        system_texts = [i["content"] for i in sent if i.get("role") == "system"]
        assert any(text.endswith("Answer briefly.") for text in system_texts), system_texts
    first = thread.entry(kinds.index("tool.call"))
    assert first.body == {"call_id": "c0", "name": "fetch_page", "arguments": {"page": 0}}
    result = thread.entry(kinds.index("tool.result"))
    assert result.actor == "tool:fetch_page" and result.body["name"] == "fetch_page"

    bundle = tmp_path / "orders.zip"
    thread.checkpoint()
    export_thread(ledger, "orders", bundle)
    report = verify_bundle(bundle, TrustPolicy(log_key=signer.verifier()))
    assert report.failure is None


def test_pop_and_clear_move_the_view_and_delete_nothing(ledger: Ledger) -> None:
    session = RegistreSession(ledger, "s1")

    async def steps() -> tuple[Any, list[Any], list[Any]]:
        await session.add_items(
            [
                {"role": "user", "content": "one"},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "ok"},
                {"role": "user", "content": [{"type": "input_text", "text": "two"}]},
            ]
        )
        popped = await session.pop_item()
        after_pop = await session.get_items()
        await session.clear_session()
        return popped, after_pop, await session.get_items()

    popped, after_pop, after_clear = asyncio.run(steps())
    assert popped == {"type": "message", "role": "user", "content": "two"}
    assert [item.get("content", item.get("output")) for item in after_pop] == ["one", None, "ok"]
    assert after_clear == []
    first = ledger.thread("s1")
    assert [e.kind for e in first.entries()] == [
        "turn",
        "tool.call",
        "tool.result",
        "turn",
        "decision",
    ]
    assert first.entry(4).body["text"].startswith("registre.session: continued on thread s1:2 ")
    assert [e.kind for e in ledger.thread("s1:2").entries()] == [
        "turn",
        "tool.call",
        "tool.result",
        "decision",
    ]
    assert ledger.thread("s1:3").head().size == 0
    reopened = RegistreSession(ledger, "s1")  # follows the chain to the segment in use
    assert reopened.thread.id == "s1:3"
    assert asyncio.run(RegistreSession(ledger, "empty").pop_item()) is None


def test_get_items_limit_returns_the_latest_items(ledger: Ledger) -> None:
    session = RegistreSession(ledger, "s1")

    async def steps() -> list[Any]:
        await session.add_items([{"role": "user", "content": t} for t in ("a", "b", "c")])
        return [await session.get_items(limit) for limit in (2, 0, None)]

    two, none, every = asyncio.run(steps())
    assert [i["content"] for i in two] == ["b", "c"] and none == []
    assert [i["content"] for i in every] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("item", "says"),
    [
        ({"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}, "input_image"),
        ({"type": "web_search_call", "id": "w"}, "'web_search_call' item cannot be recorded"),
        ({"type": "function_call", "call_id": "c", "name": "f", "arguments": "[1]"}, "arguments"),
        ({"role": "critic", "content": "x"}, "is not a message role"),
    ],
)
def test_an_item_it_cannot_record_is_refused_and_nothing_is_written(
    ledger: Ledger, item: dict[str, Any], says: str
) -> None:
    session = RegistreSession(ledger, "s1")
    with pytest.raises(UnsupportedItemError, match=says):
        asyncio.run(session.add_items([{"role": "user", "content": "kept out too"}, item]))
    assert ledger.thread("s1").head().size == 0


def test_the_filter_refuses_input_the_session_does_not_hold(ledger: Ledger) -> None:
    session = RegistreSession(ledger, "s1")
    model = ScriptedModel([say("hi")])
    config = RunConfig(
        call_model_input_filter=session.model_input_filter("m"), tracing_disabled=True
    )
    with pytest.raises(UnrecordedInputError):
        asyncio.run(Runner.run(_agent(model), "no session here", run_config=config))
    assert ledger.thread("s1").head().size == 0 and model.inputs == []
