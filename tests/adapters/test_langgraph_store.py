"""LangGraph's BaseStore on the ledger: get, search, put, delete and list namespaces, TTL,
every put and delete a signed entry that the ledger keeps. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from langgraph.store.base import BaseStore

from registre.adapters.langgraph_store import RegistreStore
from registre.ledger import Ledger


def test_puts_gets_searches_and_deletes_are_signed_records(ledger: Ledger) -> None:
    store = RegistreStore(ledger)
    assert isinstance(store, BaseStore)
    store.put(("users", "u1", "memories"), "m1", {"text": "Prefers email", "score": 0.5})
    store.put(("users", "u1", "memories"), "m2", {"text": "Lives in Lyon", "score": 2})
    store.put(("users", "u2", "memories"), "m1", {"text": "Prefers phone"})
    item = store.get(("users", "u1", "memories"), "m1")
    assert item is not None and item.value == {"text": "Prefers email", "score": 0.5}
    hits = store.search(("users",), query="prefers")
    assert sorted((h.namespace[1], h.key) for h in hits) == [("u1", "m1"), ("u2", "m1")]
    assert [h.key for h in store.search(("users", "u1"), filter={"score": {"$gt": 1}})] == ["m2"]
    assert store.list_namespaces(prefix=("users",), max_depth=2) == [
        ("users", "u1"),
        ("users", "u2"),
    ]
    assert store.list_namespaces(suffix=("memories",)) == [
        ("users", "u1", "memories"),
        ("users", "u2", "memories"),
    ]

    store.put(("users", "u1", "memories"), "m1", {"text": "Prefers SMS"})
    updated = store.get(("users", "u1", "memories"), "m1")
    assert updated is not None and updated.created_at == item.created_at
    assert updated.updated_at >= item.updated_at
    store.delete(("users", "u1", "memories"), "m1")
    assert store.get(("users", "u1", "memories"), "m1") is None
    records = [json.loads(e.body["entry_json"]) for e in store.thread.entries()]
    assert [r["op"] for r in records] == ["store.put"] * 4 + ["store.delete"]
    assert records[0]["value"] == {"text": "Prefers email", "score": 0.5}  # still on the ledger
    again = RegistreStore(ledger)  # a fresh store reads the same state from the entries
    assert again.get(("users", "u1", "memories"), "m1") is None
    assert [h.key for h in again.search(("users", "u1"))] == ["m2"]


def test_an_expired_item_is_left_out(ledger: Ledger) -> None:
    store = RegistreStore(ledger)
    store.put(("cache",), "old", {"v": 1}, ttl=-1)  # expired a minute before it was put
    store.put(("cache",), "new", {"v": 2}, ttl=60)
    assert store.get(("cache",), "old") is None
    assert [h.key for h in store.search(("cache",))] == ["new"]
    expires = json.loads(store.thread.entry(1).body["entry_json"])["expires"]
    assert expires.endswith("Z") and expires > store.thread.entry(1).time


def test_the_async_batch_runs_the_same_ops(ledger: Ledger) -> None:
    store = RegistreStore(ledger)

    async def run() -> Any:
        await store.aput(("a",), "k", {"v": 1})
        return await store.aget(("a",), "k")

    item = asyncio.run(run())
    assert item is not None and item.value == {"v": 1}
