"""The real-data suites' results as markdown tables, registre beside each baseline.

One table per score: a row per budget (and, for LoCoMo, per question category; for
transcripts, per probe kind), a column per method, so the README's tables are copied from
``report.md`` as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = ["render_real_report"]

_TITLES: Final = {
    "evidence": "Evidence turns in the context (mean share per question)",
    "answer": "Gold answer's content words in the context (mean share per question)",
    "fill": "Tokens sent / budget (mean)",
    "probes": "Probes recalled (share of probes in the context, pooled)",
    "policy": "Policy sentences in the context (share, pooled over calls)",
}
_METHOD_NAMES: Final = {
    "registre": "registre",
    "truncation": "truncation",
    "masking": "observation masking",
    "rolling": "rolling summary",
    "bm25": "BM25 alone",
}


def _pct(value: object) -> str:
    return "–" if not isinstance(value, int | float) else f"{100 * value:.1f}%"


def _table(
    rows: Sequence[Mapping[str, Any]],
    methods: Sequence[str],
    score: str,
    key: str,
    keys: Sequence[str],
    label: str | None = None,
) -> list[str]:
    by = {(row["budget"], row[key], row["method"]): row for row in rows}
    budgets = sorted({row["budget"] for row in rows})
    first = [label or key] if len(keys) > 1 else []
    head = ["budget", *first, *(_METHOD_NAMES[m] for m in methods)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for budget in budgets:
        for group in keys:
            cells = [f"{budget:,}", *([group] if len(keys) > 1 else [])]
            found = [by.get((budget, group, method)) for method in methods]
            if all(row is None for row in found):
                continue
            for row in found:
                value = None if row is None else row.get(score)
                count = 0 if row is None else row.get(f"{score}_n", 0)
                cells.append(_pct(value) if count else "–")
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def _refusals(rows: Sequence[Mapping[str, Any]], methods: Sequence[str], key: str) -> list[str]:
    by = {(row["budget"], row["method"]): row for row in rows if row[key] == "all"}
    budgets = sorted({row["budget"] for row in rows})
    head = ["budget", *(_METHOD_NAMES[m] for m in methods)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for budget in budgets:
        cells = [f"{budget:,}"]
        for method in methods:
            row = by.get((budget, method))
            cells.append("–" if row is None else f"{row['refused']} of {row['calls']}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_real_report(results: Mapping[str, Any]) -> str:
    """The markdown report of one suite's results (``locomo`` or ``transcripts``)."""
    methods = list(results["methods"])
    rows = list(results["rows"])
    suite = results["suite"]
    out: list[str] = []
    rooms = results.get("baseline_room", {})
    note = ""
    if any(int(budget) != room for budget, room in rooms.items()):
        note = (
            "The baselines send at most "
            + ", ".join(f"{room:,}" for room in rooms.values())
            + " tokens: the room registre's policy leaves beside its output reserve.\n"
        )
    if suite == "locomo":
        out.append("# LoCoMo: the context of the call that answers each question\n")
        convs = results["conversations"]
        out.append(
            f"{len(convs)} conversation(s), {sum(c['turns'] for c in convs):,} turns, "
            f"{sum(c['questions'] for c in convs)} questions per budget; counter "
            f"`{results['counter']}`; {results['seconds']:.0f} s.\n"
        )
        if note:
            out.append(note)
        groups = ["all", *sorted({r["group"] for r in rows} - {"all"})]
        for score in ("evidence", "answer", "fill"):
            out.append(f"## {_TITLES[score]}\n")
            out.extend(_table(rows, methods, score, "group", ["all"]))
            out.append("")
        for score in ("evidence", "answer"):
            out.append(f"## {_TITLES[score]}, by category\n")
            out.extend(_table(rows, methods, score, "group", groups, "category"))
            out.append("")
        whole = {row["group"]: row for row in results["whole"]}
        if "all" in whole:
            out.append(
                "Whole conversation, no budget: evidence 100% by construction; answer words "
                f"{_pct(whole['all']['answer'])}.\n"
            )
        out.append("## Refused calls (questions)\n")
        out.extend(_refusals(rows, methods, "group"))
        replay = results.get("replay", [])
        if replay:
            out.append("\n## registre during the replay (the call before each assistant turn)\n")
            out.append("| budget | calls | refused | tokens sent / budget (mean) |")
            out.append("|---|---|---|---|")
            for row in replay:
                out.append(
                    f"| {row['budget']:,} | {row['calls']:,} | {row['refused']:,} | "
                    f"{_pct(row['fill'])} |"
                )
    else:
        out.append("# Transcripts replayed as agent loops: the context of every model call\n")
        for item in results["transcripts"]:
            out.append(
                f"- `{item['name']}` ({item['format']}): {item['entries']:,} entries, "
                f"{item['calls']} model calls, {item['probes']:,} probes, "
                f"{item['policy_sentences']} policy sentences"
            )
        out.append(f"\nCounter `{results['counter']}`; {results['seconds']:.0f} s.\n")
        if note:
            out.append(note)
        kinds = ["all", *sorted({r["kind"] for r in rows} - {"all"})]
        out.append(f"## {_TITLES['probes']}\n")
        out.extend(_table(rows, methods, "probes", "kind", ["all"]))
        out.append(f"\n## {_TITLES['probes']}, by kind\n")
        out.extend(_table(rows, methods, "probes", "kind", kinds))
        for score in ("policy", "fill"):
            out.append(f"\n## {_TITLES[score]}\n")
            out.extend(_table(rows, methods, score, "kind", ["all"]))
        out.append("\n## Refused calls\n")
        out.extend(_refusals(rows, methods, "kind"))
        per = results.get("per_transcript", [])
        if per:
            out.append("\n## Probes recalled, per transcript\n")
            names = sorted({r["kind"] for r in per})
            out.extend(_table(per, methods, "probes", "kind", names, "transcript"))
    out.append("")
    return "\n".join(out)
