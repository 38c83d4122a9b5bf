"""Witnessing (C2SP ``tlog-witness``): both sides, interoperable with the transparency-log world.

The witness side remembers, per log origin, the last checkpoint it cosigned, and cosigns a new
one only after checking the log's signature and a consistency proof from it, so a log that
forks or rolls back its history is refused and caught (THREATS rows 4, 6, 7):

* :mod:`registre.witness.protocol` -- the ``add-checkpoint`` request and response formats,
  and the monitoring path ``/<hex sha256(origin)>/checkpoint``;
* :mod:`registre.witness.state` -- the witness's SQLite state (followed logs, latest
  checkpoint per origin, every cosigned checkpoint, evidence of inconsistent ones);
* :mod:`registre.witness.witness` -- the checks, in the order of the specification, the
  atomic check-and-store step, and the monitoring view;
* :mod:`registre.witness.server` -- the HTTP server (aiohttp), with read deadlines and one
  log line per request.

The log side sends a thread's checkpoint to witnesses and stores the cosignatures they return:

* :mod:`registre.witness.client` -- ``collect_cosignatures`` over HTTP, retrying once after
  409;
* :mod:`registre.ledger.witnessing` -- witnessing a ledger thread's checkpoint.

``specs/witness.md`` is the normative description.
"""
