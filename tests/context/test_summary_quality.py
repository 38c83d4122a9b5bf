"""What the default summarizer keeps: hand-written folds (the Offices example of issue 12 and
two refolds of it), and a property test over random folds and refolds.

Every summary here passes the controller (``check_summary``), fits its allowance, points only
inside its folded range, quotes whole words only, and every aggregate line's entry count is
the number of entries it points at.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from registre.context import (
    SUMMARY_LINE_KIND,
    CompactionPlan,
    ExtractiveSummarizer,
    FoldItem,
    Summary,
    SummaryLine,
    check_summary,
    default_counter,
    entry_text,
    plan_compaction,
    quoted_spans,
    summary_tokens,
)
from registre.context.excerpt import (
    Aggregate,
    cut_at_word,
    merge_aggregates,
    quote,
    read_aggregate,
    write_aggregate,
)
from registre.context.model import span_count
from registre.context.summarize import pointer_specificity
from tests.context.example import POLICY, before_compaction

COUNTER = default_counter()
SEGMENTS = (
    "Retail",
    "Hotels",
    "Logistics",
    "Offices",
    "Data centres",
    "Mixed use",
    "Student housing",
    "Residential development",
    "Healthcare",
)
OFFICES = (
    "Offices: book EUR 412.7m, loan tape EUR 408.3m, difference EUR 4.4m, outside the EUR 0.5m "
    "tolerance"
)


# --- building folds by hand -------------------------------------------------------------------


class Fold:
    """Items of a fold, written entry by entry with their texts, as a plan hands them over."""

    def __init__(self, start: int = 0) -> None:
        self.seq = start
        self.items: list[FoldItem] = []
        self.texts: dict[int, str] = {}

    def add(
        self, kind: str, actor: str, body: dict[str, object], partner: int | None = None
    ) -> int:
        seq = self.seq
        text = entry_text(kind, body)
        self.items.append(
            FoldItem(seq, kind, actor, text, ((seq, seq),), body=body, partner=partner)
        )
        self.texts[seq] = text
        self.seq += 1
        return seq

    def turn(self, role: str, text: str) -> int:
        return self.add("turn", role, {"role": role, "text": text})

    def tool(
        self, name: str, arguments: dict[str, object], content: str, *, error: bool = False
    ) -> tuple[int, int]:
        call_id = f"call-{self.seq}"
        call = self.add(
            "tool.call",
            "assistant",
            {"name": name, "arguments": arguments, "call_id": call_id},
            self.seq + 1,
        )
        body: dict[str, object] = {"call_id": call_id, "content": content, "name": name}
        if error:
            body["is_error"] = True
        result = self.add("tool.result", f"tool:{name}", body, call)
        return call, result

    def reconcile(self, segment: str, index: int) -> tuple[int, int]:
        if segment == "Offices":
            return self.tool("reconcile", {"segment": segment, "quarter": "Q3"}, OFFICES)
        amount = f"{100 + 37 * index:.1f}"
        content = (
            f"{segment}: book EUR {amount}m, loan tape EUR {amount}m, difference EUR 0.0m, "
            "within tolerance"
        )
        return self.tool("reconcile", {"segment": segment, "quarter": "Q3"}, content)


def plan_for(items: Sequence[FoldItem], folded: tuple[int, int], allowance: int) -> CompactionPlan:
    """A plan that folds ``items`` over ``folded`` with ``allowance`` tokens for the summary
    (built from a real plan, so it carries whatever else a plan holds)."""
    base = plan_compaction(before_compaction().state, POLICY, COUNTER)
    assert base is not None
    return dataclasses.replace(
        base,
        at=folded[1] + 1,
        folded=folded,
        items=tuple(items),
        max_summary_tokens=allowance,
        tokens_before=10**6,
        stubbed=(),
        refolded=(),
    )


def summarize(
    items: Sequence[FoldItem], folded: tuple[int, int], allowance: int, texts: Mapping[int, str]
) -> Summary:
    """The default summary, after every check this module makes of any summary."""
    plan = plan_for(items, folded, allowance)
    summary = ExtractiveSummarizer().summarize(plan.items, plan)
    check_summary(plan, summary, texts, POLICY, COUNTER)
    assert summary_tokens(plan, summary.lines, COUNTER) <= allowance
    assert ExtractiveSummarizer().summarize(plan.items, plan) == summary  # deterministic
    for line in summary.lines:
        assert all(folded[0] <= first <= last <= folded[1] for first, last in line.pointers)
        assert_words_whole(line, texts)
        assert "……" not in line.text
        assert "latest:" not in line.text
        assert all(len(quote) >= 2 for quote in quoted_spans(line.text))
        aggregate = read_aggregate(line.text)
        if re.match(r"\d+ entr(?:y|ies): ", line.text):  # an aggregate reads back
            assert aggregate is not None, line.text
        if aggregate is not None:
            assert aggregate[0] == span_count(line.pointers), line.text  # counts count entries
    return summary


def refold_items(previous: Summary, compaction_seq: int) -> list[FoldItem]:
    return [
        FoldItem(compaction_seq, SUMMARY_LINE_KIND, "", line.text, line.pointers, line.section)
        for line in previous.lines
    ]


def assert_words_whole(line: SummaryLine, texts: Mapping[int, str]) -> None:
    """Every quote is found in an entry the line points at, starting and ending between
    words: never inside a word, never inside a figure such as ``EUR 30.5m``."""
    for quoted in quoted_spans(line.text):
        if not quoted:
            continue
        found = False
        for first, last in line.pointers:
            for seq in range(first, last + 1):
                text = texts.get(seq, "")
                start = text.find(quoted)
                while start >= 0 and not found:
                    end = start + len(quoted)
                    before = text[start - 1] if start else " "
                    if text[max(0, start - 2) : start] in ("\\n", "\\t", "\\r"):
                        before = " "  # a line break as JSON writes it (a lifecycle body)
                    after = text[end : end + 2] if end < len(text) else " "
                    inside_word = (before.isalnum() and quoted[0].isalnum()) or (
                        after[:1].isalnum() and quoted[-1].isalnum()
                    )
                    inside_figure = quoted[-1].isdigit() and re.match(r"[.,]\d", after) is not None
                    found = not inside_word and not inside_figure
                    start = text.find(quoted, start + 1)
        assert found, f"quote {quoted!r} of {line.text!r} is cut inside a word"


def count_only(text: str) -> bool:
    """A line that says nothing but counts and labels (``15 findings``, ``0 items folded``)."""
    if quoted_spans(text):
        return False
    labels = (
        r"\b(?:entry|entries|items?|folded|more|findings|decisions|dead|ends|tool|outputs|open"
        r"|threads|earlier|not|quoted|here|latest)\b"
    )
    return not re.sub(labels, "", re.sub(r"[\d\W_]+", " ", text)).strip()


def offices_fold() -> tuple[Fold, tuple[int, int]]:
    fold = Fold()
    fold.turn(
        "user", "Reconcile the Q3 ECL of every segment against the loan tape; tolerance EUR 0.5m."
    )
    offices = (0, 0)
    for index, segment in enumerate(SEGMENTS):
        pair = fold.reconcile(segment, index)
        if segment == "Offices":
            offices = pair
    fold.turn(
        "assistant", "Eight segments reconcile; Offices differs by EUR 4.4m, outside the tolerance."
    )
    return fold, offices


def offices_line(summary: Summary, offices: tuple[int, int]) -> SummaryLine:
    lines = [
        line
        for line in summary.lines
        if "Offices" in line.text and "EUR 4.4m" in line.text and line.pointers == (offices,)
    ]
    assert lines, [line.text for line in summary.lines]
    return lines[0]


# --- the Offices example ------------------------------------------------------------------------


def test_the_exception_keeps_its_figure_and_its_own_entries() -> None:
    fold, offices = offices_fold()
    summary = summarize(fold.items, (0, fold.seq - 1), 600, fold.texts)
    line = offices_line(summary, offices)
    assert line.section == "tool_outputs"
    assert "segment Offices" in line.text and f"“{OFFICES}”" in line.text
    assert all(last - first + 1 <= 2 for first, last in line.pointers)
    aggregate = next(
        line for line in summary.lines if line.text.startswith("18 entries: 9 reconcile calls")
    )
    assert "quarter Q3" in aggregate.text and "segment" in aggregate.text
    assert (
        "9 returned output" in aggregate.text
        and "exceptions: segment Offices at 7" in aggregate.text
    )
    task = next(line for line in summary.lines if line.text.startswith("task: "))
    assert task.section == "decisions" and task.pointers == ((0, 0),)
    assert (
        "“Reconcile the Q3 ECL of every segment against the loan tape; tolerance EUR 0.5m.”"
        in task.text
    )
    assert not any(count_only(line.text) for line in summary.lines)
    singles = [line for line in summary.lines if read_aggregate(line.text) is None]
    assert pointer_specificity(singles) == (1.0, 2.0)
    # the aggregate points at the 18 reconciliation entries and nothing else (they are
    # contiguous here, so one span; pointers are coalesced)
    assert aggregate.pointers == ((1, 18),)


def test_the_exception_survives_two_refolds_with_its_pointers() -> None:
    fold, offices = offices_fold()
    first = summarize(fold.items, (0, fold.seq - 1), 600, fold.texts)
    kept = offices_line(first, offices)
    compaction = fold.seq
    texts = dict(fold.texts)
    allowance = 600
    previous = first
    for round_ in range(2):
        more = Fold(start=compaction + 1)
        for index in range(6):
            segment = SEGMENTS[(index + round_) % len(SEGMENTS)]
            more.tool(
                "sql",
                {
                    "database": "risk_mart",
                    "query": f"select * from book_q3 where segment = '{segment}'",
                },
                f"loan_id | segment | ead\nL{index}00{round_} | {segment} | 12{index}\n(1 rows)",
            )
        for index in (0, 1, 2, 4):  # four more reconciliations (not Offices): merged into
            more.reconcile(SEGMENTS[index], index + 10 * round_)  # the earlier aggregate
        more.turn("assistant", f"Round {round_ + 1}: nothing new beyond the Offices difference.")
        texts.update(more.texts)
        allowance -= 150  # tighter every time
        items = refold_items(previous, compaction) + more.items
        previous = summarize(items, (0, more.seq - 1), allowance, texts)
        assert kept in previous.lines  # verbatim, the same pointers
        compaction = more.seq
    reconciled = {
        seq for seq, text in texts.items() if "within tolerance" in text or text == OFFICES
    } | {seq - 1 for seq, text in texts.items() if "within tolerance" in text or text == OFFICES}
    reconcile = [line for line in previous.lines if " reconcile call" in line.text]
    assert [line.text.split(" (")[0] for line in reconcile] == ["34 entries: 17 reconcile calls"]
    assert "exceptions: segment Offices at 7" in reconcile[0].text
    for line in reconcile:  # merged counts: 9 + 4 + 4 calls, each a call and its result
        parsed = read_aggregate(line.text)
        assert parsed is not None and parsed[1].count is not None
        assert parsed[0] == span_count(line.pointers) == 2 * parsed[1].count
        pointed = {seq for first, last in line.pointers for seq in range(first, last + 1)}
        assert pointed <= reconciled  # the union of the merged lines' pointers, not bridged


def test_an_ample_allowance_leaves_no_line_of_counts_only() -> None:
    fold, _offices = offices_fold()
    for index in range(12):
        fold.tool(
            "python",
            {"code": f"print(stage_migration(df, segment='{SEGMENTS[index % 9]}'))"},
            f"{SEGMENTS[index % 9]}: stage2_share=0.{index + 10} n={index * 7}",
        )
        fold.turn("assistant", "Looking at the next segment now, as planned.")
    summary = summarize(fold.items, (0, fold.seq - 1), 2000, fold.texts)
    assert not any(count_only(line.text) for line in summary.lines)
    python = next(line for line in summary.lines if "python call" in line.text)
    assert (
        python.text.startswith("24 entries: 12 python calls (segment ")
        and "12 returned output" in python.text
    )
    # said twelve times: one line, pointing at every time (issue 28: duplicates merge)
    again = [line for line in summary.lines if "Looking at the next segment" in line.text]
    assert len(again) == 1
    assert again[0].text == "assistant: “Looking at the next segment now, as planned.”"
    assert sum(last - first + 1 for first, last in again[0].pointers) == 12


def test_a_tight_allowance_keeps_the_most_important_lines() -> None:
    fold, offices = offices_fold()
    fold.turn("user", "Instruction 1: from now on, report Offices separately in every table.")
    for index in range(10):
        fold.turn(
            "assistant",
            f"Status {index}: still going through the tape for {SEGMENTS[index % 9]}, no figures.",
        )
    summary = summarize(fold.items, (0, fold.seq - 1), 200, fold.texts)
    texts = [line.text for line in summary.lines]
    # no role-based label (issue 28): the user's words, chosen for what they say
    assert any(text.startswith("user: “Instruction 1: from now on") for text in texts), texts
    assert any(text.startswith("task: ") for text in texts), texts
    offices_line(summary, offices)
    assert sum(1 for text in texts if "Status" in text) < 10  # the least important go


def test_a_failed_call_is_a_dead_end_quoting_the_error() -> None:
    fold = Fold()
    fold.tool(
        "bash",
        {"cmd": "pytest -q"},
        "collected 12 items\n\nFAILED tests/test_io.py::test_read - OSError: disk full",
        error=True,
    )
    fold.tool("bash", {"cmd": "ls"}, "src\ntests")
    summary = summarize(fold.items, (0, fold.seq - 1), 300, fold.texts)
    dead = next(line for line in summary.lines if line.section == "dead_ends")
    assert (
        dead.text
        == "bash cmd pytest -q failed: “FAILED tests/test_io.py::test_read - OSError: disk full”"
    )
    assert dead.pointers == ((0, 1),)
    assert any(
        line.text.startswith("4 entries: 2 bash calls") and "1 failed" in line.text
        for line in summary.lines
    )


def test_a_figure_stated_among_table_rows_gets_a_line() -> None:
    fold = Fold()
    rows = "\n".join(
        f"L{index}93 | {SEGMENTS[index]} | {index + 1} | 12{index}45" for index in range(5)
    )
    planted = (
        "Offices: Stage 2 exposure EUR 512.3m at 30 September 2025 (EUR 400.1m at 30 June 2025)."
    )
    fold.tool(
        "sql",
        {"database": "risk_mart", "query": "select * from book_q3"},
        f"loan_id | segment | stage | ead\n{rows}\n{planted}\n(5 rows)",
    )
    summary = summarize(fold.items, (0, 1), 300, fold.texts)
    assert any(f"“{planted}”" in line.text and line.pointers == ((0, 1),) for line in summary.lines)


def test_version_one_lines_refold_without_nesting_or_bridging() -> None:
    old = [
        SummaryLine(
            "findings",
            "15 findings; latest: assistant: “Finding: Residential development interes”……",
            ((0, 20), (24, 24)),
        ),
        SummaryLine(
            "tool_outputs", 'sql “{"database":"risk_ma”… gave “loan_id | segment | ”…', ((30, 31),)
        ),
        SummaryLine("findings", "assistant: “a”", ((33, 33),)),
    ]
    texts = {seq: "" for seq in range(40)}
    texts[24] = "Finding: Residential development interest cover ratio went up."
    texts[30] = '{"database":"risk_mart"}'
    texts[31] = "loan_id | segment | stage"
    texts[33] = "a"
    items = [
        FoldItem(34, SUMMARY_LINE_KIND, "", line.text, line.pointers, line.section) for line in old
    ]
    summary = summarize(items, (0, 33), 400, texts)
    assert ("findings", "22 entries: earlier findings", ((0, 20), (24, 24))) in [
        (line.section, line.text, line.pointers) for line in summary.lines
    ]
    assert all(line.text != "assistant: “a”" for line in summary.lines)  # a one-letter quote


def test_pointer_specificity() -> None:
    lines = [
        SummaryLine("findings", "x", ((1, 1), (3, 4))),
        SummaryLine("findings", "y", ((10, 29),)),
    ]
    assert pointer_specificity(lines) == (2.0, 20.0)
    assert pointer_specificity([]) == (0.0, 0.0)


# --- random folds -------------------------------------------------------------------------------

_WORDS = st.sampled_from(
    [
        "the", "segment", "reconciles", "except", "but", "failed", "error", "EUR", "12.5m",
        "30.5m", "7%", "Offices", "Retail", "within", "tolerance", "not", "“quoted”", '"raw"',
        "a”b", "naïve", "日本", "—", "Q3", "ev-12", "x", "2025", "?", ".", ";", "TypeError:",
    ]
)  # fmt: skip
_TEXT = st.lists(_WORDS, min_size=0, max_size=30).map(" ".join) | st.lists(
    st.lists(_WORDS, min_size=1, max_size=8).map(" ".join), min_size=1, max_size=4
).map("\n".join)
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("turn"), st.sampled_from(["user", "assistant", "system"]), _TEXT),
        st.tuples(
            st.just("tool"),
            st.sampled_from(["sql", "python", "reconcile"]),
            _TEXT,
            st.booleans(),
            _TEXT,
        ),
        st.tuples(st.just("decision"), _TEXT),
        st.tuples(st.just("evidence"), _TEXT, st.booleans()),
    ),
    min_size=1,
    max_size=25,
)


def _write(fold: Fold, ops: list[tuple[object, ...]]) -> None:
    for op in ops:
        if op[0] == "turn":
            fold.turn(str(op[1]), str(op[2]))
        elif op[0] == "tool":
            arguments = {
                "segment": str(op[2])[:30],
                "query": f"select 1 where segment = '{str(op[2])[:10]}'",
            }
            fold.tool(str(op[1]), arguments, str(op[4]), error=bool(op[3]))
        elif op[0] == "decision":
            fold.add("decision", "agent", {"text": str(op[1]), "refs": []})
        else:
            accepted = bool(op[2])
            outcome = (
                {"accepted": True, "id": f"ev-{fold.seq}"}
                if accepted
                else {"accepted": False, "reason": "unregistered_reference"}
            )
            fold.add(
                "evidence.upsert",
                "agent",
                {
                    "request": {"statements": [{"text": str(op[1]), "cites": ["r-1"]}]},
                    "outcome": {"results": [outcome]},
                },
            )


@settings(max_examples=60, deadline=None)
@given(first=_OPS, second=_OPS, allowance=st.integers(64, 900), tighter=st.integers(0, 400))
def test_random_folds_and_refolds_pass_the_controller(
    first: list[tuple[object, ...]], second: list[tuple[object, ...]], allowance: int, tighter: int
) -> None:
    fold = Fold()
    _write(fold, first)
    summary = summarize(fold.items, (0, fold.seq - 1), allowance, fold.texts)
    assert summary.lines
    compaction = fold.seq
    more = Fold(start=compaction + 1)
    _write(more, second)
    texts = {**fold.texts, **more.texts}
    items = refold_items(summary, compaction) + more.items
    refold = summarize(items, (0, more.seq - 1), max(64, allowance - tighter), texts)
    assert refold.lines


# --- the text tools -----------------------------------------------------------------------------


def test_cuts_fall_between_words_and_never_inside_a_figure() -> None:
    text = "Retail days past due went from EUR 30.5m to EUR 41.6m between Q2 and Q3"
    for limit in range(1, len(text) + 5):
        cut = cut_at_word(text, limit)
        assert len(cut) <= limit and text.startswith(cut)
        assert cut == "" or len(cut) == len(text) or text[len(cut)] == " "
    assert cut_at_word("supercalifragilistic", 10) == ""  # no boundary: no quote at all
    assert quote("ab”c\nde ") == [("“", "ab"), ("", " "), ("“", "de")]  # no piece of one char


def test_aggregate_lines_read_back_and_merge_with_summed_counts() -> None:
    one = Aggregate(
        4,
        "sql call",
        (
            ("database", ("risk_mart",), 0),
            ("segment", ("Hotels", "Retail", "Offices", "Retail2"), 0),
        ),
        (("returned rows", 3), ("empty", 1)),
        ("segment Offices at 7",),
    )
    text = write_aggregate(8, one)
    assert text == (
        "8 entries: 4 sql calls (database risk_mart; segment Hotels, Retail, Offices and 1 more)"
        ": 3 returned rows, 1 empty; exceptions: segment Offices at 7"
    )
    entries, read = read_aggregate(text) or (0, one)
    assert entries == 8 and read.count == 4 and read.noun == "sql call"
    assert read.args[1] == ("segment", ("Hotels", "Retail", "Offices"), 1)
    two = Aggregate(2, "sql call", (("database", ("risk_mart",), 0),), (("returned rows", 2),))
    merged = merge_aggregates([read, two])
    assert write_aggregate(12, merged) == (
        "12 entries: 6 sql calls (database risk_mart; segment Hotels, Retail, Offices and more)"
        ": 5 returned rows, 1 empty; exceptions: segment Offices at 7"
    )
    assert read_aggregate("assistant: “12 entries: a quote”") is None
    for text in (
        "1 entry: 1 source read (refs r-127; source ifrs9-methodology-v7.pdf)",
        "3 entries: 3 short turns; e.g. “Understood.”",
        "5 entries: more findings not quoted here (ids ev-3, ev-9); e.g. “Finding: Hotels”…",
        "22 entries: earlier findings",
    ):
        entries, read = read_aggregate(text) or (0, one)
        assert write_aggregate(entries, read) == text
