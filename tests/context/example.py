"""The worked example of specs/context.md section 10: a short investigation whose context
passes the high-water mark, and the compaction the default policy machinery records."""

from __future__ import annotations

from registre.context import Policy
from tests.context.threads import ThreadBuilder

POLICY = Policy(
    budget_tokens=320,
    high_water_permille=700,
    low_water_permille=600,
    keep_recent_turns=2,
    bulky_tool_output_tokens=40,
    summary_share_permille=400,
    version=1,  # the six fields the example records (specs/context.md section 10)
)

PYTEST_OUTPUT = (
    "tests/unittest_modutils.py::ModutilsTest::test_a PASSED\n"
    "tests/unittest_modutils.py::ModutilsTest::test_b PASSED\n"
    "FAILED tests/unittest_modutils.py::test_namespace - F0010: error while building astroid "
    "for pkg/mod.py"
)


def before_compaction() -> ThreadBuilder:
    """Entries 0-8 of the example, with no compaction recorded yet."""
    builder = ThreadBuilder(policy=POLICY, compact=False)
    builder.turn("user", "Why does astroid 2.9.1 fail on packages without __init__.py?")
    builder.pin("task_parameter", "Do not modify tests.")
    builder.tool("bash", "ls astroid", "__init__.py\nbrain/\nmodutils.py\nnodes.py")
    builder.turn(
        "assistant",
        "modutils.py resolves module paths for every import astroid makes, including "
        "namespace packages; since 2.9.1 it calls importlib to find specs, so the bug is "
        "likely there.",
    )
    builder.tool("bash", "pytest -q tests/unittest_modutils.py", PYTEST_OUTPUT)
    builder.turn("assistant", "The namespace test fails with F0010.")
    builder.turn("user", "Find where the spec lookup happens.")
    return builder


def worked_example() -> ThreadBuilder:
    """Entries 0-9: the above, then the compaction recorded as entry 9."""
    builder = before_compaction()
    builder.compact_now()
    return builder
