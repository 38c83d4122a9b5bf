"""Pins: ``context.pin`` and ``context.unpin``, and the live pin set the working context uses.

A pin is accepted unless its text is blank (``empty_pin``); it gets the next ``pin-N``, and
pin order is id order. An unpin is decided in this order: the pin must exist
(``unknown_pin``), be live (``inactive_pin``), and the reason must not be blank
(``empty_reason``). The ``seq`` of a pin (the ledger entry its text comes from) is recorded
as given: lifecycle has no ledger, so checking that it points backwards is the ledger's job.

For the working context this module gives the live pins in pin order
(:meth:`registre.lifecycle.state.LifecycleState.live_pins`), :func:`pin_set_items` (a canonical
list, the input a caller hashes as canonical JSON) and :func:`pin_set_sha256`, a SHA-256 over a
simple length-prefixed encoding, for callers that want a digest without a JSON
canonicaliser:

    b"registre/pins/v1\\n" || for each live pin in pin order, for each field of
    (id, kind, seq as decimal ASCII, text):  len(utf8(field)) as 8-byte big-endian || utf8(field)
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from registre.lifecycle.evidence import is_blank
from registre.lifecycle.model import (
    UNPINNED,
    Accepted,
    PinnedItem,
    PinRequest,
    Rejected,
    UnpinRequest,
)
from registre.lifecycle.reasons import reject
from registre.lifecycle.state import LifecycleState, Tables, note

__all__ = [
    "PIN_DIGEST_PREFIX",
    "commit_pin",
    "commit_unpin",
    "decide_pin",
    "decide_unpin",
    "pin_set_items",
    "pin_set_sha256",
    "with_left_out_pin",
]

PIN_DIGEST_PREFIX = b"registre/pins/v1\n"


def decide_pin(tables: Tables, request: PinRequest) -> Accepted | Rejected:
    """Acceptance with the new ``pin-N``, or ``empty_pin``. O(1) in the state size."""
    if is_blank(request.text):
        return reject("empty_pin")
    return Accepted(f"pin-{tables.next_pin}")


def commit_pin(tables: Tables, request: PinRequest, outcome: Accepted | Rejected) -> None:
    """Record an accepted pin (as ``decide_pin`` gave it)."""
    if isinstance(outcome, Rejected):
        return
    tables.pins[outcome.id] = PinnedItem(
        id=outcome.id, kind=request.pin_kind, text=request.text, seq=request.seq
    )
    tables.live_pins[outcome.id] = None
    tables.next_pin += 1
    note(tables, outcome.id)


def decide_unpin(tables: Tables, request: UnpinRequest) -> Accepted | Rejected:
    """Acceptance naming the pin, or the rejection. O(1) in the state size."""
    pin = tables.pins.get(request.id)
    if pin is None:
        return reject("unknown_pin", id=request.id)
    if pin.status != "live":
        return reject("inactive_pin", id=request.id)
    if is_blank(request.reason):
        return reject("empty_reason")
    return Accepted(request.id)


def commit_unpin(tables: Tables, request: UnpinRequest, outcome: Accepted | Rejected) -> None:
    """Unpin as an accepted outcome (as ``decide_unpin`` gave it) says."""
    if isinstance(outcome, Rejected):
        return
    pin = tables.pins[outcome.id]
    tables.pins[pin.id] = replace(pin, status=UNPINNED, unpin_reason=request.reason)
    del tables.live_pins[pin.id]
    note(tables, pin.id)


def with_left_out_pin(state: LifecycleState, pin_id: str) -> LifecycleState:
    """``state``, or a copy of it holding ``pin_id`` again as an unpinned placeholder when
    ``state`` is a pin table restored without it.

    A stored context snapshot keeps only the pins still live or made in its tail
    (``specs/storage.md``); the others were unpinned and no projection shows them. Pin ids
    are ``pin-1 .. pin-(next_pin - 1)`` with no gap and the rules never drop a pin, so a
    ``pin-N`` with ``N < next_pin`` missing from the table can only be such a left-out pin.
    Deciding an unpin of it must give ``inactive_pin`` (as the full history does), not
    ``unknown_pin``; the placeholder (status ``unpinned``, no text, seq -1) gives exactly
    that. Any other id, or a pin the table holds, returns ``state`` itself. O(pins) when a
    placeholder is added (a copy: ``state`` stays as it was), O(1) otherwise."""
    tables = state.tables()
    number = pin_id.removeprefix("pin-")
    if pin_id in tables.pins or not number.isascii() or not number.isdigit():
        return state
    if number != str(int(number)) or not 1 <= int(number) < tables.next_pin:
        return state
    copy = state.copy()
    copy.tables().pins[pin_id] = PinnedItem(
        id=pin_id, kind="definition", text="", seq=-1, status=UNPINNED
    )
    return copy


def pin_set_items(state: LifecycleState) -> list[list[str | int]]:
    """The live pin set as ``[[id, kind, seq, text], ...]`` in pin order: plain JSON data
    whose canonical form is the pin-set digest input. O(live pins)."""
    return [[pin.id, pin.kind, pin.seq, pin.text] for pin in state.live_pins()]


def pin_set_sha256(state: LifecycleState) -> str:
    """Hex SHA-256 of the live pin set in the length-prefixed encoding of the module
    docstring (prefix ``registre/pins/v1``). O(total pin text)."""
    digest = hashlib.sha256(PIN_DIGEST_PREFIX)
    for pin in state.live_pins():
        for part in (pin.id, pin.kind, str(pin.seq), pin.text):
            encoded = part.encode("utf-8")
            digest.update(len(encoded).to_bytes(8, "big"))
            digest.update(encoded)
    return digest.hexdigest()
