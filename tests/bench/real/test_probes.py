"""Probes: the terms an agent takes back from its history, by kind; error lines; policy."""

from __future__ import annotations

from registre.bench.real.probes import error_lines, policy_sentences, terms
from registre.bench.real.transcript_run import _History, _probes
from registre.importers import ImportedEntry


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
