"""The ``model.call`` digest carried forward with the fold: the projection digest without
rebuilding it, for the verifier's check and for the writer's record.

:func:`registre.attest.projection_digest.digest.verify_model_call` rebuilds the whole projection
for every
call (``project``, then RFC 8785 over every message): O(context) of Python per call, so a
verifier replaying a long thread at a large budget spends its time re-serialising messages it
has serialised before. The parts of the projection that only grow between two compactions
are kept with the :class:`~registre.context.ContextState` itself, as one of its
derived caches (:meth:`~registre.context.ContextState.cache`: the fold keeps them
while it only appends to the tail, drops them at a compaction, and a
:meth:`~registre.context.ContextState.copy` takes them along, sharing their bytes
until either side grows):

* the canonical bytes of every message shown (header pins, live summaries, tail), joined;
* the manifest's runs, the finished ones as canonical bytes and the last one open (a new
  tail entry may extend it, exactly as ``project`` merges runs);
* per token counter, the tokens of the stable prefix and of the tail so far (each tail
  entry's count is the fold's own cached count).

A call then costs the entries folded since the last call, the lifecycle block, and one SHA-256
over the canonical bytes streamed from those parts -- byte for byte what
``canonical_bytes(projection.to_json())`` gives (``specs/context.md`` section 8;
tests/attest/projection_digest/test_projection_stream.py holds the two side by side, and
tests/ledger/context/test_cached_fold.py the writer's digest beside the naive refold). A
compaction, a state restored from a snapshot or anything but entries appended since the last
call rebuilds the parts, once. Two users:

* the verifier, :class:`ModelCallChecker` (one per replay, following the state its owner
  advances in place): it builds the lifecycle block itself (its text names ``at``; the view
  is cached per lifecycle state and the counts of its lines in
  :func:`registre.context.line_counts.line_counter`). Only the registre shape is
  streamed; a provider shape, a context over its budget and a digest that does not
  reproduce are handed to ``verify_model_call``, so every error stays that function's own
  (and a mismatch is confirmed by the full rebuild before it is reported);
* the writer, :func:`call_digest`: the digest of a projection just built by ``project`` from
  a state (the ledger's cached fold hands out copies that carry the parts along), taking
  the block and the token counts from the projection. A provider shape is digested by
  :func:`~registre.attest.projection_digest.digest.shape_digest` as it is.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Final

from registre.attest.canonical_json import MAX_SAFE_INTEGER, canonical_bytes
from registre.attest.projection_digest.digest import (
    REGISTRE_SHAPE,
    EntryLookup,
    block_version,
    claims_block,
    shape_digest,
    verify_model_call,
)
from registre.context import (
    ContextState,
    ManifestRun,
    Message,
    Policy,
    Projection,
    TokenCounter,
    lifecycle_block,
    lifecycle_view,
    parse_policy,
    resolve_counter,
)
from registre.context.fold import TailItem
from registre.context.lifecycle_block import LifecycleView, block_allowance
from registre.context.line_counts import line_counter
from registre.context.projection import PROJECTION_FORMAT
from registre.lifecycle import LifecycleState

if TYPE_CHECKING:
    from hashlib import _Hash as Hash

__all__ = ["ModelCallChecker", "call_digest", "flat_json", "message_bytes", "run_bytes"]

_COMMA: Final = b","
_PARTS: Final = "registre.attest/projection-parts"
_string: Final = encode_basestring

_Run = tuple[int, int, str, int | None, int | None, int | None, str | None]
"""A manifest run as its fields, in :class:`ManifestRun`'s order: ``(first, last, status,
message, compaction, line, pin)`` (the parts build and merge runs as tuples, a
:class:`ManifestRun` only for the one left open)."""


class _Parts:
    """The growing parts of the projection of one state, between two compactions: a
    :class:`~registre.context.fold.StateCache` of the states it was built on."""

    __slots__ = (
        "at",
        "cache",
        "header_pins",
        "header_seq",
        "last_item",
        "last_run",
        "message_bytes",
        "messages",
        "prefix_messages",
        "previous",
        "runs_bytes",
        "shared",
        "tail_len",
        "tokens",
    )

    def __init__(self, state: ContextState, previous: dict[int, tuple[Message, bytes]]) -> None:
        self.cache: dict[int, tuple[Message, bytes]] = {}
        self.previous = previous  # the bytes of the messages of the parts before
        self.at = -1
        self.header_seq = state.header_seq
        self.message_bytes = bytearray()
        self.messages = 0
        self.runs_bytes = bytearray()
        self.last_run: ManifestRun | None = None
        self.tail_len = 0
        self.last_item: TailItem | None = None
        self.shared = False  # the bytes and the cache are shared with a copy: copy on write
        self.header_pins = {pin.entry_seq: (pin.pin.id, i) for i, pin in enumerate(state.header)}
        self.tokens: dict[str, list[int]] = {}  # counter name -> [prefix, tail, tail items]
        for pin in state.header:
            self._message(pin.message)
        for summary in state.summaries:
            self._message(summary.message)
        self.prefix_messages = self.messages
        self._summary_runs(state)

    def copy(self) -> _Parts:
        """An independent copy sharing the bytes until either grows (StateCache)."""
        other = _Parts.__new__(_Parts)
        for name in _Parts.__slots__:
            setattr(other, name, getattr(self, name))
        other.tokens = {name: list(counts) for name, counts in self.tokens.items()}
        self.shared = other.shared = True
        return other

    def follows(self, state: ContextState) -> bool:
        """Whether ``state`` is a state these parts were built on with entries appended
        since, and no compaction (the header's seq moves at every compaction)."""
        if state.header_seq != self.header_seq:
            return False
        tail = state.tail
        if state.at < self.at or len(tail) < self.tail_len:
            return False
        return self.last_item is None or tail[self.tail_len - 1] is self.last_item

    # --- building -----------------------------------------------------------------------

    def _message(self, message: Message) -> None:
        """Append the canonical bytes of ``message`` (reused from the parts before when
        they held the same message object)."""
        found = self.previous.get(id(message))
        if found is None or found[0] is not message:
            found = (message, message_bytes(message))
        self.cache[id(message)] = found
        if self.messages:
            self.message_bytes += _COMMA
        self.message_bytes += found[1]
        self.messages += 1

    def _summary_runs(self, state: ContextState) -> None:
        """The runs of the live summaries, the header's pinned entries cut out of them (as
        ``project`` writes them: :func:`~registre.context.projection.summarized_run`
        pieces merged by ``run_continues``)."""
        pinned = self.header_pins
        pinned_seqs = sorted(pinned)
        count = len(pinned_seqs)
        pending = _fields(self.last_run)
        done: list[bytes] = []
        message = len(state.header)
        for summary in state.summaries:
            compaction = summary.seq
            for first, last, line in summary.runs:
                start = first
                low = bisect_left(pinned_seqs, first)
                while low < count and pinned_seqs[low] <= last:
                    seq = pinned_seqs[low]
                    low += 1
                    if seq > start:
                        run = _summarized(start, seq - 1, compaction, line, message)
                        pending = _push(pending, run, done)
                    pin_id, index = pinned[seq]
                    pending = _push(pending, (seq, seq, "pinned", index, None, None, pin_id), done)
                    start = seq + 1
                if start <= last:
                    pending = _push(
                        pending, _summarized(start, last, compaction, line, message), done
                    )
            message += 1
        self._finish(pending, done)

    def advance(self, state: ContextState) -> None:
        """Take in the tail entries of ``state`` folded since the last call."""
        tail = state.tail
        if len(tail) > self.tail_len:
            if self.shared:
                self.message_bytes = bytearray(self.message_bytes)
                self.runs_bytes = bytearray(self.runs_bytes)
                self.cache = dict(self.cache)
                self.shared = False
            header_seq = state.header_seq
            pinned = self.header_pins
            pending = _fields(self.last_run)
            done: list[bytes] = []
            run: _Run
            for index in range(self.tail_len, len(tail)):
                item = tail[index]
                seq = item.seq
                shown = item.shown(header_seq)
                if shown is not None:
                    if item.pin_id is not None:
                        run = (seq, seq, "pinned", self.messages, None, None, item.pin_id)
                    else:
                        status = "stubbed" if item.stubbed else "verbatim"
                        run = (seq, seq, status, self.messages, None, None, None)
                    self._message(shown)
                elif seq in pinned:
                    pin_id, at = pinned[seq]
                    run = (seq, seq, "pinned", at, None, None, pin_id)
                else:
                    run = (seq, seq, "folded", None, None, None, None)
                pending = _push(pending, run, done)
            self._finish(pending, done)
            self.tail_len = len(tail)
            self.last_item = tail[-1]
        self.at = state.at
        self.previous = {}

    def _finish(self, pending: _Run | None, done: list[bytes]) -> None:
        """Append the runs ``done`` to the bytes; ``pending`` (still open) becomes the last."""
        if done:
            if self.runs_bytes:
                self.runs_bytes += _COMMA
            self.runs_bytes += _COMMA.join(done)
        self.last_run = None if pending is None else ManifestRun(*pending)

    def tokens_for(self, state: ContextState, counter: TokenCounter) -> tuple[int, int]:
        """(stable prefix tokens, total tokens) of the messages, for ``counter``."""
        found = self.tokens.get(counter.name)
        if found is None:
            prefix = sum(pin.tokens(counter) for pin in state.header) + sum(
                summary.tokens(counter) for summary in state.summaries
            )
            found = self.tokens[counter.name] = [prefix, 0, 0]
        if found[2] < self.tail_len:
            header_seq = state.header_seq
            tail = state.tail
            found[1] += sum(
                tail[index].tokens(counter, header_seq) for index in range(found[2], self.tail_len)
            )
            found[2] = self.tail_len
        return found[0], found[0] + found[1]

    def hash_runs(self, digest: Hash) -> None:
        """Feed ``digest`` the canonical bytes of the manifest's runs, comma separated."""
        digest.update(self.runs_bytes)
        if self.last_run is not None:
            if self.runs_bytes:
                digest.update(_COMMA)
            digest.update(run_bytes(self.last_run))


def _carried(state: ContextState, previous: _Parts | None = None) -> _Parts:
    """The parts ``state`` carries, advanced to it; built (reusing the message bytes of
    ``previous``) when it carries none that it follows."""
    parts = state.cache(_PARTS)
    if not isinstance(parts, _Parts) or not parts.follows(state):
        parts = _Parts(state, {} if previous is None else previous.cache)
        state.set_cache(_PARTS, parts)
    parts.advance(state)
    return parts


def _digest(
    parts: _Parts,
    at: int,
    budget: int,
    prefix_tokens: int,
    total: int,
    block: tuple[str, bytes | None] | None,
    tail: bytes,
) -> str:
    """SHA-256 over the canonical bytes of the projection, streamed from ``parts``:
    ``block`` the lifecycle block's canonical JSON text and its message's canonical bytes
    (if any), ``tail`` the last members."""
    head = f'{{"at":{at},"budget_tokens":{budget},"format":"{PROJECTION_FORMAT}"'
    block_bytes = b""
    if block is not None:
        head += ',"lifecycle_block":' + block[0]
        if block[1] is not None:
            block_bytes = block[1]
            if parts.messages:
                block_bytes = _COMMA + block_bytes
    digest = hashlib.sha256(head.encode())
    digest.update(b',"manifest":{"entries":[')
    parts.hash_runs(digest)
    digest.update(
        f'],"stable_prefix":{{"messages":{parts.prefix_messages},"tokens":{prefix_tokens}}}'
        f',"tokens":{total}}},"messages":['.encode()
    )
    digest.update(parts.message_bytes)
    digest.update(block_bytes)
    digest.update(b"],")
    digest.update(tail)
    return digest.hexdigest()


def _tail_bytes(policy: Policy, counter: str) -> bytes:
    """The projection's last members, ``"policy":...,"token_counter":...}``."""
    return canonical_bytes({"policy": policy.to_json(), "token_counter": counter})[1:]


def call_digest(projection: Projection, state: ContextState, shape: str = REGISTRE_SHAPE) -> str:
    """:func:`~registre.attest.projection_digest.digest.shape_digest` of ``projection`` in
    ``shape``, where
    ``projection`` is ``project(state, ...)`` (``state`` not folded further since): the
    registre shape streamed from the parts ``state`` carries (module docstring), which it
    keeps for the next call on it or on a copy."""
    if shape != REGISTRE_SHAPE or projection.at != state.at or projection.refill_tokens:
        return shape_digest(projection, shape)
    parts = _carried(state)
    manifest = projection.manifest
    block = projection.block
    shown = parts.messages + (block is not None and block.message is not None)
    if (
        shown != len(projection.messages)
        or parts.prefix_messages != manifest.stable_prefix_messages
    ):
        return shape_digest(projection, shape)  # not a projection of this state
    block_parts = None
    if block is not None:
        shown_at = None if block.message is None else parts.messages
        message = None if block.message is None else message_bytes(block.message)
        block_parts = (flat_json(block.to_json(shown_at)), message)
    return _digest(
        parts,
        projection.at,
        projection.budget,
        manifest.stable_prefix_tokens,
        manifest.tokens,
        block_parts,
        _tail_bytes(projection.policy, projection.counter),
    )


class ModelCallChecker:
    """Checks the ``model.call`` entries of one replay against the state it carries forward.

    ``check`` has :func:`~registre.attest.projection_digest.digest.verify_model_call`'s contract,
    and
    accepts exactly what it accepts (module docstring). Keep one per replay; the state it
    follows holds O(context) bytes.
    """

    def __init__(self, counter_registry: Mapping[str, TokenCounter]) -> None:
        self._registry = counter_registry
        self._parts: _Parts | None = None
        self._counters: dict[str, tuple[TokenCounter, TokenCounter]] = {}
        self._view: tuple[LifecycleState, LifecycleView] | None = None
        self._tails: dict[tuple[Policy, str], bytes] = {}
        self._block_rest: tuple[str, bytes] | None = None

    def check(
        self,
        body: Mapping[str, object],
        state: ContextState,
        lifecycle: LifecycleState | None = None,
        entries: EntryLookup | None = None,
    ) -> None:
        """Check a schema-valid ``model.call`` body against ``state`` (the fold of
        ``0..at_seq``; ``entries``: the thread's entries by seq, for a call that recalls
        some); raises as :func:`verify_model_call` does. A call with recalls is checked by
        the full rebuild."""
        digest = None
        if "shape" not in body and "recalled" not in body and state.at == body["at_seq"]:
            digest = self.digest(body, state, lifecycle)
        if digest is None or digest != body["projection_sha256"]:
            verify_model_call(body, state, self._registry, lifecycle, entries)

    def digest(
        self, body: Mapping[str, object], state: ContextState, lifecycle: LifecycleState | None
    ) -> str | None:
        """The registre-shape digest of the projection a ``model.call`` body without
        ``shape`` describes at ``state`` (at ``at_seq``), or None when the full check must
        decide (over the budget, a lifecycle block without the lifecycle state). Raises
        UnknownTokenCounterError and LifecycleFormatError (a bad policy) as the full check
        does."""
        budget = body["budget_tokens"]
        if type(budget) is not int or budget < 1:
            return None
        counter = resolve_counter(str(body["token_counter"]), self._registry)
        policy = parse_policy(body["policy"], "body.policy")
        if policy.refills and state.folded:
            return None  # a refill is laid out by project itself (the full check)
        parts = self._parts = _carried(state, self._parts)
        prefix_tokens, total = parts.tokens_for(state, counter)
        if total > budget:
            return None
        block_parts = None
        if claims_block(body):
            if lifecycle is None:
                return None
            block = lifecycle_block(
                self._lifecycle_view(lifecycle),
                state.at,
                block_allowance(budget, total),
                self._cached(counter),
                block_version(body),
            )
            shown = message = None
            if block.message is not None:
                shown = parts.messages
                total += block.tokens
                message = self._block_bytes(block.message)
            block_parts = (flat_json(block.to_json(shown)), message)
        return _digest(
            parts, state.at, budget, prefix_tokens, total, block_parts, self._tail(policy, counter)
        )

    def _block_bytes(self, message: Message) -> bytes:
        """``message_bytes(message)`` for the lifecycle block's message, the bytes of its
        text after the first line break kept from the call before when that text is the
        same (the first line names ``at``; the rest changes with the lifecycle state and
        the block's allowance): escaping and UTF-8 both map character by character, so the
        bytes of a text are the bytes of its pieces, joined."""
        content = message.content
        cut = content.find("\n")
        if cut < 0:
            return message_bytes(message)
        rest = content[cut:]
        known = self._block_rest
        try:
            if known is None or known[0] != rest:
                known = self._block_rest = (rest, _string(rest)[1:].encode())
            return _message_with(message, _string(content[:cut])[:-1].encode() + known[1])
        except UnicodeEncodeError:
            return message_bytes(message)  # a lone surrogate: refused there

    def _tail(self, policy: Policy, counter: TokenCounter) -> bytes:
        found = self._tails.get((policy, counter.name))
        if found is None:
            found = self._tails[(policy, counter.name)] = _tail_bytes(policy, counter.name)
        return found

    def _cached(self, counter: TokenCounter) -> TokenCounter:
        found = self._counters.get(counter.name)
        if found is None or found[0] is not counter:
            found = self._counters[counter.name] = (counter, line_counter(counter))
        return found[1]

    def _lifecycle_view(self, lifecycle: LifecycleState) -> LifecycleView:
        if self._view is None or self._view[0] is not lifecycle:
            self._view = (lifecycle, lifecycle_view(lifecycle))
        return self._view[1]


_RUN_STATUSES: Final = frozenset(("verbatim", "pinned", "summarized", "stubbed", "folded"))


def run_bytes(run: ManifestRun) -> bytes:
    """``canonical_bytes(run.to_json())``, written directly: the members in RFC 8785 order
    (``compaction``, ``from``, ``line``, ``message``, ``pin``, ``status``, ``to``; all keys
    ASCII), integers in decimal; a status outside :data:`STATUSES` or a pin id that is not
    plain ASCII letters, digits and ``-`` goes through :func:`canonical_bytes`."""
    return _run_bytes(
        (run.first, run.last, run.status, run.message, run.compaction, run.line, run.pin)
    )


def _run_bytes(run: _Run) -> bytes:
    """:func:`run_bytes` of the run with these fields."""
    first, last, status, message, compaction, line, pin = run
    if status not in _RUN_STATUSES or not (pin is None or _plain(pin)):
        return canonical_bytes(ManifestRun(*run).to_json())
    out = "{"
    if compaction is not None:
        out += f'"compaction":{compaction},'
    out += f'"from":{first},'
    if line is not None:
        out += f'"line":{line},'
    if message is not None:
        out += f'"message":{message},'
    if pin is not None:
        out += f'"pin":"{pin}",'
    return f'{out}"status":"{status}","to":{last}}}'.encode("ascii")


def _fields(run: ManifestRun | None) -> _Run | None:
    if run is None:
        return None
    return (run.first, run.last, run.status, run.message, run.compaction, run.line, run.pin)


def _summarized(first: int, last: int, compaction: int, line: int | None, message: int) -> _Run:
    """:func:`~registre.context.projection.summarized_run` as fields."""
    if line is None:
        return (first, last, "folded", None, None, None, None)
    return (first, last, "summarized", message, compaction, line, None)


def _push(pending: _Run | None, run: _Run, done: list[bytes]) -> _Run:
    """The run left open once ``run`` follows ``pending``: the two merged when the manifest
    merges them (:func:`~registre.context.projection.run_continues`, into the
    run ``_push`` of ``project`` writes), else ``run``, ``pending`` closed into ``done``."""
    if pending is not None:
        status = run[2]
        if (
            pending[1] + 1 == run[0]
            and pending[2] == status
            and (
                status == "folded"
                or (status == "summarized" and pending[4] == run[4] and pending[5] == run[5])
                or (
                    (status == "verbatim" or status == "stubbed")
                    and pending[3] is not None
                    and pending[3] + (pending[1] - pending[0] + 1) == run[3]
                )
            )
        ):
            return (pending[0], run[1], status, pending[3], run[4], run[5], None)
        done.append(_run_bytes(pending))
    return run


def flat_json(value: Mapping[str, object]) -> str:
    """``canonical_bytes(value).decode()``, written directly when ``value`` is flat: ASCII
    keys (RFC 8785 order is then their code point order), each value an integer within
    +/-(2**53 - 1) or a plain string (ASCII letters, digits and ``-``, nothing to escape);
    anything else goes through :func:`canonical_bytes` (the lifecycle block's JSON is flat)."""
    members = []
    for key in sorted(value) if all(type(key) is str and key.isascii() for key in value) else ():
        item = value[key]
        if type(item) is int and -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
            members.append(f"{_string(key)}:{item}")
        elif type(item) is str and _plain(item):
            members.append(f'{_string(key)}:"{item}"')
        else:
            break
    if len(members) != len(value):
        return canonical_bytes(value).decode()
    return "{" + ",".join(members) + "}"


def message_bytes(message: Message) -> bytes:
    """``canonical_bytes(message.to_json())``, written directly: members ``call_id``,
    ``content``, ``name``, ``role`` (RFC 8785 order), strings escaped as RFC 8785 escapes
    them (``\\"``, ``\\\\``, ``\\b \\t \\n \\f \\r``, other controls as lowercase
    ``\\u00xx``, everything else as is: the rule of ``json``'s encoder without
    ``ensure_ascii``). A text with a lone surrogate goes through :func:`canonical_bytes`,
    which refuses it."""
    try:
        return _message_with(message, _string(message.content).encode())
    except UnicodeEncodeError:
        return canonical_bytes(message.to_json())


def _message_with(message: Message, content: bytes) -> bytes:
    """:func:`message_bytes` of ``message`` with ``content`` the bytes of its ``content``
    member's JSON string, already escaped. UnicodeEncodeError for a lone surrogate in
    another member."""
    out = "{"
    if message.call_id is not None:
        out += f'"call_id":{_string(message.call_id)},'
    after = ","
    if message.name is not None:
        after += f'"name":{_string(message.name)},'
    after += f'"role":{_string(message.role)}}}'
    return out.encode() + b'"content":' + content + after.encode()


def _plain(text: str) -> bool:
    return text.isascii() and text.replace("-", "").isalnum()
