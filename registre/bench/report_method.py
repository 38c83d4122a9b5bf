"""The method section of ``report.md``: how each figure of a ``registre bench`` run is
measured (``specs/bench.md`` section 2 is the normative text)."""

from __future__ import annotations

from typing import Final

__all__ = ["JOBS_TEXT", "METHOD_TEXT", "method_text"]

METHOD_TEXT: Final = """\
How each figure is measured. Every run records one investigation (`registre.bench.investigation`) on
its own thread through the real API; for one seed and size every budget sees the same
investigation, and only compactions and model calls differ.

- **append throughput**: entries written over the wall time of the API calls that wrote them
  (all steps, compactions included); *plain appends*: turns, tool calls and results and
  decisions only. One transaction per step, SQLite with `synchronous=FULL`.
- **model call latency**: `thread.model_call` (fold the context from the stored snapshot,
  project, sign and append the `model.call`), after `thread.compact` (timed separately as
  **compaction latency**, planning and summarizing included).
- **projection latency p50 / p99**: `thread.project` at the head, at a geometric grid of
  history lengths (so short and long histories are both sampled).
- **naive projection**: the same projection computed by re-reading every entry of the thread
  and folding from entry 0 (`registre.bench.baselines.naive_projection`). It costs O(history) per
  call, so it is sampled at a sparser geometric grid rather than run at every call; each
  sample is compared with registre's projection (they must be equal).
- **tokens used against budget**: the tokens of the context sent at each model call over the
  budget; **compression ratio**: the tokens of the whole history rendered verbatim over the
  tokens of the context at the last call.
- **pin survival**: at each quality sample, each live pin counts as kept when its text
  appears word for word in the context; the **truncation baseline** renders the whole thread
  verbatim and silently keeps the last `budget` tokens, as an agent loop without registre
  does.
- **active evidence in view**: at each quality sample, the share of active evidence entries
  whose id the context sent names (`registre.bench.evidence_view`): the id appears as a word
  (`ev-12`, not inside `ev-123`; or inside an id range such as `ev-9–14`) in any message --
  the lifecycle block, a pin, a summary line, a verbatim entry -- so the model can cite it
  and look its statement up by id; *with its statement*: the id named and its statement
  shown too, whole or as the lifecycle block shows it (whitespace collapsed, cut past 200
  characters), so the model can cite it knowing what it says. Truncation's kept window is
  read the same way. Summed over the samples, over the active entries at each.
- **admitting entry in view** (the figure called *active evidence referenced* before
  `registre-bench/4`): active evidence whose admitting entry the manifest does not mark
  `folded` (verbatim, pinned, summarized or stubbed); for truncation, inside the window. It
  does not count the lifecycle block, where the context names active evidence too.
- **pointer resolvability**: both ends of every summary pointer span (or a seeded sample)
  expanded with `thread.expand` (entry plus verified inclusion proof).
- **conclusions left stale / repaired**: hypotheses flagged stale by an evidence change, and
  revised afterwards; *stale at end* counts active conclusions still stale after the final.
- **bundle size, export time, verify time**: `registre.ledger.exchange.export.export_thread` to a
  zip, then `registre.attest.verify.verifier.verify_bundle` with only the operator's verifier key
  (steps
  1-7, the working context replayed).
- **pymerkle**: the thread's own leaves (from the exported bundle) in both trees, in
  memory; proofs at the same seeded indices; both roots checked against the signed head.
- **fact recall**: the investigation plants facts (a segment's figure in a tool output, an
  exception in a finding, a supervisor's instruction, a definition) and, before each model
  call, names the facts the next step needs. A needed fact is recalled when its words appear
  in a message of the context, or when a summary line whose pointers cover the fact's entry
  quotes its keys (the segment and its figure, the definition's code and criterion). A call
  registre refuses misses every fact it needed.
- **pointer specificity**: entries per pointer span (`last - first + 1`) over the live
  summary lines, at the quality samples; **count-only lines**: live summary lines without a
  quote, a figure or a name (`registre.bench.quality.count_only`).
- **stable prefix**: the prefix a method declares (registre: the manifest's pins and
  summaries; the rolling summary: its summary message; truncation and masking declare none),
  its share of the context's tokens, and the share of consecutive calls whose declared prefix
  is byte-identical; *reusable* is the share of tokens in the longest run of leading messages
  identical to the previous call's, what a provider's prompt cache could reuse, measured the
  same way for every method.
- **baselines**: *truncation* keeps the last `budget` tokens of the verbatim transcript;
  *observation masking* replaces every tool output older than the 10 most recent turns by
  `[output omitted]`, keeps everything else verbatim and then truncates from the start;
  the *rolling summary*, past the policy's high-water mark, replaces everything older than
  the policy's recent turns by one line made of the first sentence of each folded assistant
  turn (oldest dropped first beyond the policy's summary share) and truncates the rest from
  the start. All three are computed at every model call, incrementally.
- **steps: time and peak memory**: each step of a run is timed and its peak resident memory
  read (`registre.bench.memory`): in-process steps by resetting the kernel's high-water mark
  (`/proc/self/clear_refs`, then `VmHWM`), export and verify in a child process each (its
  `ru_maxrss`: nothing the harness holds is counted, the interpreter is).
- **projection by third**: `thread.project` at the head is also sampled at
  `projection_samples` evenly spaced history lengths, so each third of the history has
  about a third of them; the model call is timed at every call.
- **verify / signatures**: after `verify_bundle`, the same child process reads the same
  bundle's `entries.jsonl` and times only the Ed25519 `verify` of every entry (message and
  signature sliced from each canonical leaf outside the clock).
- **appends beside raw**: once per invocation, on the same disk: raw one-row SQLite
  transactions (WAL, `synchronous=FULL`), raw Ed25519 signing, single appends, single
  appends from 4 writer threads each with its own ledger connection and thread, and
  batches of 100 (`registre.bench.raw`).
"""

JOBS_TEXT: Final = """\
- **--jobs {jobs}**: the (size, budget) runs ran in {jobs} worker processes at once, each on a
  SQLite file of its own (or threads of the `--db` database), after the appends beside raw
  were measured alone. Concurrent runs share the machine's cores, so the latencies, step
  times and rates of each run include that contention: compare them with a `--jobs 1` run
  only as such. `--jobs` is for the wall time of the whole invocation.
"""


def method_text(jobs: int) -> str:
    """The method section of a run of ``jobs`` worker processes (1: :data:`METHOD_TEXT`)."""
    return METHOD_TEXT if jobs <= 1 else METHOD_TEXT + JOBS_TEXT.format(jobs=jobs)
