"""LangGraph on a registre ledger (``registre[langgraph]``).

:class:`RegistreSaver` is a ``langgraph.checkpoint.base.BaseCheckpointSaver``, sync and
async: pass it as ``builder.compile(checkpointer=...)`` and every checkpoint and pending
write of a graph is a signed ledger entry, on one registre thread per LangGraph thread::

    saver = RegistreSaver(ledger)
    graph = builder.compile(checkpointer=saver)
    graph.invoke(inputs, {"configurable": {"thread_id": "support-42"}})

Contract (the mapping is normative: ``specs/langgraph.md``):

* ``put`` and ``put_writes`` append one ``transcript.entry`` each (``framework:
  "langgraph"``), its ``entry_json`` the RFC 8785 text of a checkpoint record (the
  checkpoint without its channel values, its metadata, its parent id, and the values of the
  channels whose version changed) or a writes record (the task's writes the thread does not
  hold yet: retried writes are not recorded twice);
* ``get_tuple`` and ``list`` (thread, namespace, checkpoint id, ``before``, metadata
  ``filter``, ``limit``; newest first) read the fold of those records
  (:class:`~registre.adapters.langgraph_records.CheckpointFold`), brought up to date by
  reading only the entries added since;
* ``delete_thread``, ``delete_for_runs`` and ``prune`` delete nothing: each appends a signed
  record naming what it removes, and the saver stops returning it. ``copy_thread`` signs a
  checkpoint of the source thread, starts the target with a record naming it (origin, size,
  root), then copies the live checkpoints with every channel value they read and their
  writes, in one transaction. A call that would remove or copy nothing writes nothing.

Thread ids are ``PREFIX.T``: ``T`` the LangGraph thread id when it is a usable registre
thread id, else ``h`` + 32 hex digits of its SHA-256. The ledger calls are short
transactions; the async methods run them on the caller's thread.
"""

from __future__ import annotations

import base64
import builtins
import hashlib
import json
import re
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import Any, Final

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from registre.adapters.langgraph_records import (
    FRAMEWORK,
    CheckpointFold,
    Saved,
    decode,
    encode,
    version_key,
)
from registre.attest.canonical_json import canonical_bytes
from registre.attest.entries import MAX_THREAD_ID_LENGTH
from registre.errors import MalformedError
from registre.kinds import TRANSCRIPT_ENTRY
from registre.ledger import Ledger, Thread
from registre.ledger.errors import UnknownThreadError

__all__ = ["PRUNE_STRATEGIES", "RegistreSaver", "UnknownPruneStrategyError"]

PRUNE_STRATEGIES: Final = ("keep_latest", "delete")
_ACTOR: Final = "langgraph"
_THREAD_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*\Z")

Record = dict[str, Any]


class UnknownPruneStrategyError(MalformedError):
    """``prune`` with a strategy other than ``keep_latest`` or ``delete``; nothing written."""


def _configurable(config: RunnableConfig) -> dict[str, Any]:
    return dict(config.get("configurable") or {})


class RegistreSaver(BaseCheckpointSaver[int]):
    """A LangGraph checkpointer on ``ledger`` (module docstring). ``prefix`` starts every
    thread id it uses, so savers with different prefixes share a ledger without seeing each
    other; ``serde`` as for any saver (the values that are not plain JSON go through it)."""

    def __init__(
        self, ledger: Ledger, *, prefix: str = "langgraph", serde: SerializerProtocol | None = None
    ) -> None:
        super().__init__(serde=serde)
        self._ledger = ledger
        self._prefix = prefix
        self._folds: dict[str, CheckpointFold] = {}
        self._threads: dict[str, Thread] = {}
        self._lock = threading.RLock()

    # --- thread ids and folds --------------------------------------------------------------

    def thread_id(self, thread_id: str) -> str:
        """The registre thread holding LangGraph thread ``thread_id`` (module docstring)."""
        part = str(thread_id)
        whole = f"{self._prefix}.{part}"
        if _THREAD_PART.match(part) and len(whole) <= MAX_THREAD_ID_LENGTH:
            return whole
        digest = hashlib.sha256(part.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return f"{self._prefix}.h{digest}"

    def _thread(self, thread_id: str, *, create: bool = False) -> Thread | None:
        wanted = self.thread_id(thread_id)
        with self._lock:
            if wanted in self._threads:
                return self._threads[wanted]
            try:
                found = self._ledger.thread(wanted)
            except UnknownThreadError:
                if not create:
                    return None
                found = self._ledger.create_thread(wanted)
            self._threads[wanted] = found
            return found

    def _fold(self, thread: Thread) -> CheckpointFold:
        """The fold of ``thread`` at its head, reading only the entries added since."""
        with self._lock:
            fold = self._folds.setdefault(thread.id, CheckpointFold())
            head = thread.head().size
            if head > fold.size:
                for entry in thread.entries(fold.size, head):
                    if entry.kind == TRANSCRIPT_ENTRY and entry.body["framework"] == FRAMEWORK:
                        fold.apply(entry.seq, json.loads(entry.body["entry_json"]))
                fold.size = head
            return fold

    def _folds_of(self, thread_id: str | None) -> Iterator[CheckpointFold]:
        if thread_id is not None:
            thread = self._thread(thread_id)
            if thread is not None:
                yield self._fold(thread)
            return
        for thread in self._ledger.threads():
            if thread.id.startswith(f"{self._prefix}."):
                yield self._fold(thread)

    def _append(self, thread: Thread, records: Iterable[Record]) -> None:
        session = thread.id[len(self._prefix) + 1 :]
        thread.append_many(
            (
                TRANSCRIPT_ENTRY,
                {
                    "framework": FRAMEWORK,
                    "session": session,
                    "entry_json": canonical_bytes(record).decode("utf-8"),
                },
                _ACTOR,
            )
            for record in records
        )

    # --- reading ---------------------------------------------------------------------------

    def _tuple(self, fold: CheckpointFold, saved: Saved) -> CheckpointTuple:
        thread_id = str(fold.thread_id)
        checkpoint: Checkpoint = decode(saved.checkpoint, self.serde)
        values: dict[str, Any] = {}
        for channel, version in checkpoint["channel_versions"].items():
            key = (saved.ns, channel, version_key(encode(version, self.serde)))
            blob = fold.blobs.get(key)
            if blob is not None:
                values[channel] = decode(blob, self.serde)
        parent = None
        if saved.parent:
            parent = self._config(thread_id, saved.ns, saved.parent)
        return CheckpointTuple(
            config=self._config(thread_id, saved.ns, saved.id),
            checkpoint={**checkpoint, "channel_values": values},
            metadata=decode(saved.metadata, self.serde),
            parent_config=parent,
            pending_writes=[
                (w.task, w.channel, decode(w.value, self.serde))
                for w in fold.ordered_writes(saved.ns, saved.id)
            ],
        )

    @staticmethod
    def _config(thread_id: str, ns: str, cid: str) -> RunnableConfig:
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}}

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``), else the latest of its
        thread and namespace; None when there is none (or it was removed)."""
        conf = _configurable(config)
        thread = self._thread(str(conf["thread_id"]))
        if thread is None:
            return None
        with self._lock:
            fold = self._fold(thread)
            ns = str(conf.get("checkpoint_ns", ""))
            cid = get_checkpoint_id(config)
            saved = fold.saved.get(ns, {}).get(cid) if cid else fold.latest(ns)
            return None if saved is None else self._tuple(fold, saved)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The checkpoints matching ``config`` (thread, namespace, checkpoint id: each only
        when given), older than ``before``'s checkpoint id, whose metadata holds every item of
        ``filter``; newest first within a namespace, at most ``limit``."""
        conf = _configurable(config) if config else {}
        thread_id = str(conf["thread_id"]) if "thread_id" in conf else None
        ns_wanted = conf.get("checkpoint_ns")
        cid_wanted = get_checkpoint_id(config) if config else None
        before_id = get_checkpoint_id(before) if before else None
        found: builtins.list[CheckpointTuple] = []
        with self._lock:
            for fold in self._folds_of(thread_id):
                for ns, by_id in fold.saved.items():
                    if ns_wanted is not None and ns != ns_wanted:
                        continue
                    for cid in sorted(by_id, reverse=True):
                        if limit is not None and len(found) >= limit:
                            return iter(found)
                        if (cid_wanted and cid != cid_wanted) or (before_id and cid >= before_id):
                            continue
                        saved = by_id[cid]
                        if filter:
                            metadata = decode(saved.metadata, self.serde)
                            if any(metadata.get(k) != v for k, v in filter.items()):
                                continue
                        found.append(self._tuple(fold, saved))
        return iter(found)

    # --- writing ---------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Record ``checkpoint`` (module docstring); the config naming it."""
        conf = _configurable(config)
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))
        stripped: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = stripped.pop("channel_values")
        blobs = []
        for channel, version in new_versions.items():
            blob: Record = {"channel": channel, "version": encode(version, self.serde)}
            if channel in values:
                blob["value"] = encode(values[channel], self.serde)
            blobs.append(blob)
        record: Record = {
            "op": "checkpoint",
            "thread": thread_id,
            "ns": ns,
            "id": checkpoint["id"],
            "parent": conf.get("checkpoint_id"),
            "checkpoint": encode(stripped, self.serde),
            "metadata": encode(get_checkpoint_metadata(config, metadata), self.serde),
            "blobs": blobs,
        }
        thread = self._thread(thread_id, create=True)
        assert thread is not None
        with self._lock:
            self._append(thread, [record])
        return self._config(thread_id, ns, checkpoint["id"])

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Record the writes of ``task_id`` for the checkpoint ``config`` names, leaving out
        those already held (same task and index; the special channels are replaced)."""
        conf = _configurable(config)
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))
        cid = str(conf["checkpoint_id"])
        thread = self._thread(thread_id, create=True)
        assert thread is not None
        with self._lock:
            held = self._fold(thread).writes.get((ns, cid), {})
            items = []
            for index, (channel, value) in enumerate(writes):
                idx = WRITES_IDX_MAP.get(channel, index)
                if idx >= 0 and (task_id, idx) in held:
                    continue
                items.append({"idx": idx, "channel": channel, "value": encode(value, self.serde)})
            if items:
                record = {
                    "op": "writes",
                    "thread": thread_id,
                    "ns": ns,
                    "checkpoint": cid,
                    "task": task_id,
                    "path": task_path,
                    "writes": items,
                }
                self._append(thread, [record])

    # --- removing and copying: signed records, never deletions ------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Record that thread ``thread_id`` is deleted: the saver returns none of what it held
        before (its entries stay on the ledger). Nothing is written for a thread it holds
        nothing of."""
        thread = self._thread(str(thread_id))
        if thread is None:
            return
        with self._lock:
            fold = self._fold(thread)
            if fold.saved or fold.writes or fold.blobs:
                self._append(thread, [{"op": "delete_thread", "thread": str(thread_id)}])

    def _remove(self, fold: CheckpointFold, removed: builtins.list[Saved], **why: Any) -> None:
        if not removed:
            return
        thread = self._thread(str(fold.thread_id))
        assert thread is not None
        record: Record = {"op": "remove", "thread": str(fold.thread_id), **why}
        record["checkpoints"] = [[saved.ns, saved.id] for saved in removed]
        self._append(thread, [record])

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Record, on each thread holding any, the removal of the checkpoints whose metadata
        ``run_id`` is one of ``run_ids`` (and of their writes)."""
        wanted = set(run_ids)
        if not wanted:
            return
        with self._lock:
            for fold in list(self._folds_of(None)):
                removed = [
                    saved
                    for saved in fold.live()
                    if decode(saved.metadata, self.serde).get("run_id") in wanted
                ]
                self._remove(fold, removed, reason="delete_for_runs", run_ids=sorted(wanted))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Record the removal, on each of ``thread_ids``, of every checkpoint but the latest of
        each namespace (``keep_latest``) or of all of them (``delete``).
        UnknownPruneStrategyError for another strategy, before anything is written."""
        if strategy not in PRUNE_STRATEGIES:
            raise UnknownPruneStrategyError(
                f"prune strategy {strategy!r} is not one of {', '.join(PRUNE_STRATEGIES)}"
            )
        with self._lock:
            for thread_id in dict.fromkeys(str(t) for t in thread_ids):
                for fold in self._folds_of(thread_id):
                    kept = set()
                    if strategy == "keep_latest":
                        kept = {(ns, max(by_id)) for ns, by_id in fold.saved.items() if by_id}
                    removed = [s for s in fold.live() if (s.ns, s.id) not in kept]
                    self._remove(fold, removed, reason="prune", strategy=strategy)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy the live checkpoints of ``source_thread_id``, with the channel values they read
        and their writes, to ``target_thread_id`` (module docstring). Nothing is written when
        the source holds no checkpoint."""
        source = self._thread(str(source_thread_id))
        if source is None:
            return
        target_id = str(target_thread_id)
        with self._lock:
            fold = self._fold(source)
            live = list(fold.live())
            if not live:
                return
            signed = source.checkpoint()
            named = {
                "thread": str(source_thread_id),
                "log": source.origin,
                "size": signed.size,
                "root": base64.b64encode(signed.root).decode("ascii"),
            }
            records: builtins.list[Record] = [{"op": "copy", "thread": target_id, "from": named}]
            records += self._copies(fold, live, target_id)
            target = self._thread(target_id, create=True)
            assert target is not None
            self._append(target, records)

    def _copies(
        self, fold: CheckpointFold, live: builtins.list[Saved], target: str
    ) -> Iterator[Record]:
        sent: set[tuple[str, str, str]] = set()
        for saved in live:
            blobs = []
            versions = decode(saved.checkpoint, self.serde)["channel_versions"]
            for channel, version in versions.items():
                encoded = encode(version, self.serde)
                key = (saved.ns, channel, version_key(encoded))
                if key in fold.blobs and key not in sent:
                    sent.add(key)
                    blob: Record = {"channel": channel, "version": encoded}
                    if fold.blobs[key] is not None:
                        blob["value"] = fold.blobs[key]
                    blobs.append(blob)
            yield {
                "op": "checkpoint",
                "thread": target,
                "ns": saved.ns,
                "id": saved.id,
                "parent": saved.parent,
                "checkpoint": saved.checkpoint,
                "metadata": saved.metadata,
                "blobs": blobs,
            }
        for saved in live:
            tasks: dict[tuple[str, str], builtins.list[Record]] = {}
            for write in fold.ordered_writes(saved.ns, saved.id):
                item = {"idx": write.idx, "channel": write.channel, "value": write.value}
                tasks.setdefault((write.task, write.path), []).append(item)
            for (task, path), items in tasks.items():
                yield {
                    "op": "writes",
                    "thread": target,
                    "ns": saved.ns,
                    "checkpoint": saved.id,
                    "task": task,
                    "path": path,
                    "writes": items,
                }

    # --- async: the same calls ---------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """:meth:`get_tuple`."""
        return self.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """:meth:`list`."""
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """:meth:`put`."""
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """:meth:`put_writes`."""
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """:meth:`delete_thread`."""
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """:meth:`delete_for_runs`."""
        self.delete_for_runs(run_ids)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """:meth:`prune`."""
        self.prune(thread_ids, strategy=strategy)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """:meth:`copy_thread`."""
        self.copy_thread(source_thread_id, target_thread_id)
