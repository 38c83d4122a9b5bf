"""CLI: `registre compact` writes a compaction only when it makes the context smaller (issue
12, item 5); otherwise it prints one line starting "nothing to fold:" and exits 0. Both
engines."""

from __future__ import annotations

import json

from tests.cli.conftest import Run
from tests.cli.test_context_cli import grow, head


def context_size(run: Run) -> int:
    out = run("compact", "t1", "--budget", "100000").out
    assert out.startswith("nothing to fold: the context of t1 takes "), out
    assert out.rstrip().endswith("not above the high-water mark of 80000")
    return int(out.split(" takes ")[1].split(" tokens")[0])


def test_compact_above_the_mark_with_nothing_that_shrinks_writes_nothing(
    initialised: str, db_url: str, run: Run
) -> None:
    grow(run, 2)
    tokens = context_size(run)
    policy = {  # every turn is recent: nothing may be folded, nothing stubbed
        "budget_tokens": tokens,
        "high_water_permille": 800,
        "low_water_permille": 500,
        "keep_recent_turns": 1000,
        "bulky_tool_output_tokens": 2000,
        "summary_share_permille": 250,
    }
    before = head(db_url)
    result = run("compact", "t1", "--budget", str(tokens), "--policy", json.dumps(policy))
    assert result.code == 0, result.err
    mark = tokens * 800 // 1000
    assert result.out == (
        f"nothing to fold: the context of t1 takes {tokens} tokens, above the high-water mark "
        f"of {mark}, but no compaction would make it smaller\n"
    )
    assert head(db_url) == before
    assert run("verify", "--db").code == 0


def test_compact_twice_never_records_a_compaction_that_does_not_shrink(
    initialised: str, db_url: str, run: Run
) -> None:
    grow(run, 8)
    policy = json.dumps(
        {
            "budget_tokens": 1,
            "high_water_permille": 500,
            "low_water_permille": 300,
            "keep_recent_turns": 1,
            "bulky_tool_output_tokens": 60,
            "summary_share_permille": 400,
        }
    )
    outputs = []
    for _run in range(6):
        result = run("compact", "t1", "--budget", "400", "--policy", policy)
        assert result.code == 0, result.err
        outputs.append(result.out)
        if result.out.startswith("nothing to fold: "):
            break
    assert outputs[-1].startswith("nothing to fold: ")
    for out in outputs[:-1]:
        before, after = out.split("tokens ")[1].split(" -> ")
        assert int(after) < int(before)
    size = head(db_url)
    assert run("compact", "t1", "--budget", "400", "--policy", policy).out == outputs[-1]
    assert head(db_url) == size
    assert run("verify", "--db").code == 0
