"""The LangGraph checkpointer on the ledger: LangGraph's own conformance suite, a real
StateGraph with a scripted chat model that interrupts, resumes and time-travels, deletions
and copies that are signed records rather than lost rows, and an exported bundle that
verifies offline. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import uuid
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from registre.adapters.langgraph import RegistreSaver, UnknownPruneStrategyError
from registre.attest.notes import Signer
from registre.attest.verify import TrustPolicy, verify_bundle
from registre.ledger import Ledger, Thread, export_thread

CONFIG: Any = {"configurable": {"thread_id": "refund-7"}}


def test_the_langgraph_conformance_suite_passes(ledger: Ledger) -> None:
    counter = itertools.count()

    @checkpointer_test(name="RegistreSaver")
    async def fresh() -> AsyncGenerator[BaseCheckpointSaver[Any], None]:
        yield RegistreSaver(ledger, prefix=f"conf{next(counter)}")  # threads of its own

    report = asyncio.run(validate(fresh))
    failures = {cap: result.failures for cap, result in report.results.items() if result.failures}
    assert failures == {}
    assert {cap for cap, result in report.results.items() if result.passed} == {
        "put",
        "put_writes",
        "get_tuple",
        "list",
        "delete_thread",
        "delete_for_runs",
        "copy_thread",
        "prune",
    }


def _graph(saver: BaseCheckpointSaver[Any], replies: list[str]) -> Any:
    model = FakeMessagesListChatModel(responses=[AIMessage(content=r) for r in replies])

    def agent(state: MessagesState) -> dict[str, list[AnyMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    def approve(state: MessagesState) -> dict[str, list[AnyMessage]]:
        answer = interrupt({"question": f"Send this? {state['messages'][-1].content}"})
        return {"messages": [HumanMessage(content=f"approved: {answer}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("approve", approve)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=saver)


REPLIES = ["Refund 40 EUR for order 7.", "Refund 25 EUR for order 7."]


def _run(graph: Any) -> list[Any]:
    """Ask, stop at the interrupt, resume, then time-travel to the checkpoint before the
    agent's turn and run it again (the model's second reply). Returns the snapshots seen."""
    first = graph.invoke({"messages": [HumanMessage(content="Refund order 7?")]}, CONFIG)
    paused = graph.get_state(CONFIG)
    assert "__interrupt__" in first and paused.next == ("approve",)
    done = graph.invoke(Command(resume="yes"), CONFIG)
    history = list(graph.get_state_history(CONFIG))
    before_agent = next(s for s in history if s.next == ("agent",))
    forked = graph.invoke(None, before_agent.config)
    return [paused, done, before_agent, forked, graph.get_state(CONFIG), history]


def _texts(messages: list[AnyMessage]) -> list[str]:
    return [str(m.content) for m in messages]


def test_a_state_graph_interrupts_resumes_time_travels_and_verifies(
    ledger: Ledger, signer: Signer, tmp_path: Path
) -> None:
    saver = RegistreSaver(ledger)
    _paused, done, before_agent, forked, latest, history = _run(_graph(saver, REPLIES))
    assert _texts(done["messages"]) == ["Refund order 7?", REPLIES[0], "approved: yes"]
    assert _texts(forked["messages"]) == ["Refund order 7?", REPLIES[1]]
    assert latest.next == ("approve",)  # the fork waits at the interrupt again
    graph = _graph(saver, [])
    ancestry = [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(CONFIG)]
    assert before_agent.config["configurable"]["checkpoint_id"] in ancestry  # forked from it
    finished = saver.get_tuple(history[0].config)  # the first branch's end is still there
    assert finished is not None
    assert _texts(finished.checkpoint["channel_values"]["messages"]) == _texts(done["messages"])

    # The same script on LangGraph's own in-memory saver: the same states, step for step.
    memory = _run(_graph(InMemorySaver(), REPLIES))
    assert _texts(memory[1]["messages"]) == _texts(done["messages"])
    assert _texts(memory[3]["messages"]) == _texts(forked["messages"])
    assert [s.next for s in memory[5]] == [s.next for s in history]

    # A second saver on the ledger reads the same state from the entries alone.
    again = RegistreSaver(ledger).get_tuple(CONFIG)
    assert again is not None
    assert again.config == latest.config
    assert _texts(again.checkpoint["channel_values"]["messages"]) == _texts(forked["messages"])

    thread = ledger.thread(saver.thread_id("refund-7"))
    records = [json.loads(e.body["entry_json"]) for e in thread.entries()]
    assert {r["op"] for r in records} == {"checkpoint", "writes"}
    assert all(e.kind == "transcript.entry" for e in thread.entries())
    thread.checkpoint()
    export_thread(ledger, thread.id, tmp_path / "refund-7.zip")
    report = verify_bundle(tmp_path / "refund-7.zip", TrustPolicy(log_key=signer.verifier()))
    assert report.verified and report.tree_size == thread.head().size


def test_the_async_api_runs_the_graph_too(ledger: Ledger) -> None:
    graph = _graph(RegistreSaver(ledger), REPLIES)

    async def run() -> Any:
        await graph.ainvoke({"messages": [HumanMessage(content="Refund order 7?")]}, CONFIG)
        return await graph.ainvoke(Command(resume="no"), CONFIG)

    done = asyncio.run(run())
    assert _texts(done["messages"]) == ["Refund order 7?", REPLIES[0], "approved: no"]


def _records(thread: Thread) -> list[dict[str, Any]]:
    return [json.loads(e.body["entry_json"]) for e in thread.entries()]


def test_delete_thread_is_a_signed_record_and_removes_nothing(ledger: Ledger) -> None:
    saver = RegistreSaver(ledger)
    _graph(saver, REPLIES).invoke({"messages": [HumanMessage(content="Refund?")]}, CONFIG)
    thread = ledger.thread(saver.thread_id("refund-7"))
    size = thread.head().size
    saver.delete_thread("refund-7")
    assert saver.get_tuple(CONFIG) is None and list(saver.list(CONFIG)) == []
    assert thread.head().size == size + 1  # every earlier entry is still there
    assert _records(thread)[-1] == {"op": "delete_thread", "thread": "refund-7"}
    saver.delete_thread("refund-7")  # nothing left to delete: nothing written
    assert thread.head().size == size + 1
    assert RegistreSaver(ledger).get_tuple(CONFIG) is None  # a fresh saver agrees


def test_prune_and_copy_name_what_they_remove_and_where_they_come_from(ledger: Ledger) -> None:
    saver = RegistreSaver(ledger)
    _run(_graph(saver, REPLIES))
    source = ledger.thread(saver.thread_id("refund-7"))
    live = [t.config["configurable"]["checkpoint_id"] for t in saver.list(CONFIG)]
    saver.copy_thread("refund-7", "refund-7-copy")
    copy = ledger.thread(saver.thread_id("refund-7-copy"))
    header = _records(copy)[0]
    signed = source.latest_checkpoint()
    assert signed is not None
    assert header["op"] == "copy" and header["from"]["log"] == source.origin
    assert header["from"]["size"] == signed.size == source.head().size
    copied = {"configurable": {"thread_id": "refund-7-copy"}}
    assert [t.config["configurable"]["checkpoint_id"] for t in saver.list(copied)] == live

    saver.prune(["refund-7"], strategy="keep_latest")
    assert [t.config["configurable"]["checkpoint_id"] for t in saver.list(CONFIG)] == [live[0]]
    pruned = _records(source)[-1]
    assert pruned["op"] == "remove" and pruned["strategy"] == "keep_latest"
    assert sorted(cid for _ns, cid in pruned["checkpoints"]) == sorted(live[1:])
    latest = saver.get_tuple(CONFIG)
    assert latest is not None and latest.checkpoint["channel_values"]["messages"]  # still read
    assert len(list(saver.list(copied))) == len(live)  # the copy keeps its own

    with pytest.raises(UnknownPruneStrategyError, match="'sometimes' is not one of"):
        saver.prune(["refund-7"], strategy="sometimes")


def test_delete_for_runs_removes_only_those_runs(ledger: Ledger) -> None:
    saver = RegistreSaver(ledger)
    graph = _graph(saver, REPLIES)
    run = str(uuid.uuid4())  # the LangGraph platform passes run_id in configurable
    mine: Any = {"configurable": {"thread_id": "refund-7", "run_id": run}}
    graph.invoke({"messages": [HumanMessage(content="Refund?")]}, mine)
    assert {t.metadata.get("run_id") for t in saver.list(CONFIG)} == {run}
    other: Any = {"configurable": {"thread_id": "other", "run_id": str(uuid.uuid4())}}
    graph.invoke({"messages": [HumanMessage(content="Hi")]}, other)
    saver.delete_for_runs([run])
    assert list(saver.list(CONFIG)) == [] and len(list(saver.list(other))) == 3


SPEC = Path(__file__).resolve().parents[2] / "specs" / "langgraph.md"


def _shape(value: Any) -> Any:
    """The field names of a record, nested (lists by their first item), values dropped."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items() if key not in ("json", "b64")}
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [_shape(value[0])]
    return None


def test_the_spec_examples_are_records_the_saver_writes(ledger: Ledger) -> None:
    examples = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", SPEC.read_text(), re.S)]
    saver = RegistreSaver(ledger)
    _run(_graph(saver, REPLIES))
    saver.copy_thread("refund-7", "refund-7-copy")
    saver.prune(["refund-7"])
    saver.delete_thread("refund-7")
    written = _records(ledger.thread(saver.thread_id("refund-7")))
    written += _records(ledger.thread(saver.thread_id("refund-7-copy")))
    shapes: dict[str, list[Any]] = {}
    for record in written:
        shapes.setdefault(record["op"], []).append(_shape(record))
    assert sorted(e["op"] for e in examples) == sorted(shapes)
    for example in examples:
        assert _shape(example) in shapes[example["op"]], example["op"]
