"""Probes: the terms an agent takes back from its history, by kind; error lines; policy."""

from __future__ import annotations

from pathlib import Path

from registre.bench.real.probes import error_lines, policy_sentences, terms
from registre.bench.real.transcript_run import (
    TranscriptConfig,
    _History,
    _probes,
    run_transcripts,
    steps_of,
)
from registre.importers import ImportedEntry
from tests.bench.real.fixtures import agent_transcript, write_json


def test_terms_by_kind() -> None:
    found = terms(
        "edit astroid/modutils.py and setup.cfg, call check_modpath_has_init on "
        "os.path.join, pay with credit_card_9879898 for 1,250 dollars, not 42; getUserDetails"
    )
    assert found["astroid/modutils.py"] == "path"
    assert found["setup.cfg"] == "path"
    assert found["credit_card_9879898"] == "id"
    assert found["check_modpath_has_init"] == "symbol"
    assert found["os.path.join"] == "symbol"
    assert found["getUserDetails"] == "symbol"
    assert found["1,250"] == "number"
    assert "42" not in found  # fewer than 3 digits
    assert "and/or" not in terms("this and/or that")


def test_error_lines_report_errors_not_code() -> None:
    output = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "x.py", line 3, in <module>',
            "TypeError: expected str, bytes or os.PathLike object, not NoneType",
            "    except OSError:",
            "        raise TypeError(f'bad {x}')",
            "E       KeyError: 'contextfile'",
            "src/app.py:12:5: error: Incompatible types in assignment",
            "FAILED tests/test_a.py::test_b - AssertionError",
        ]
    )
    assert error_lines(output) == [
        "Traceback (most recent call last):",
        "TypeError: expected str, bytes or os.PathLike object, not NoneType",
        "E KeyError: 'contextfile'",
        "src/app.py:12:5: error: Incompatible types in assignment",
        "FAILED tests/test_a.py::test_b - AssertionError",
    ]


def test_policy_sentences() -> None:
    prompt = (
        "# Airline Agent Policy\n"
        "- You must obtain the user id before any booking. Each reservation has one payment.\n"
        "1. Never change a basic economy flight.\nHello!"
    )
    assert policy_sentences([prompt]) == [
        "You must obtain the user id before any booking.",
        "Each reservation has one payment.",
        "Never change a basic economy flight.",
    ]


def test_probes_are_terms_reused_from_history() -> None:
    history = _History()
    entries = [
        ImportedEntry("turn", {"role": "user", "text": "fix astroid/modutils.py please"}, "user"),
        ImportedEntry(
            "tool.result",
            {"call_id": "c1", "content": "TypeError: missing argument 'contextfile'\nok"},
            "tool",
        ),
    ]
    for index, entry in enumerate(entries):
        history.add(index, entry)
    outputs = ["sed -n 1,20p astroid/modutils.py", "grep -n TypeError new_module.py", "done"]
    found = {(text, kind) for text, kind, _far in _probes(history, outputs, 2)}
    assert ("astroid/modutils.py", "path") in found
    assert ("TypeError: missing argument 'contextfile'", "error") in found
    assert all(text != "new_module.py" for text, _kind in found)  # not in the history


def test_a_term_reused_only_after_five_steps_is_no_probe(tmp_path: Path) -> None:
    path = write_json(tmp_path / "agent.json", agent_transcript(12))
    results = run_transcripts([path], TranscriptConfig(budgets=(100_000,)), tmp_path / "out")
    (row,) = [r for r in results["rows"] if r["method"] == "truncation" and r["kind"] == "id"]
    # cust_77410 is read at step 0 and reused at steps 12 (the refund) and 13 (the answer):
    # it is a probe of the calls before steps 8..13 only
    assert row["probes_n"] == 6


def test_steps_split_at_anything_but_agent_entries() -> None:
    def entry(kind: str, role: str = "") -> ImportedEntry:
        return ImportedEntry(kind, {"role": role} if role else {}, "x")

    entries = [
        entry("turn", "system"),
        entry("turn", "user"),
        entry("turn", "assistant"),
        entry("imported"),
        entry("tool.call"),
        entry("tool.result"),
        entry("tool.call"),
        entry("tool.result"),
        entry("turn", "assistant"),
    ]
    assert steps_of(entries) == [(2, 5), (6, 7), (8, 9)]
