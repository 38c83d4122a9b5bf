"""``python -m registre.bench.real``: the real-data suites without the command line's
framework (the same runs as ``registre bench --suite locomo`` / ``--transcripts``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from registre.bench.real.locomo import load_locomo
from registre.bench.real.locomo_run import LocomoConfig, run_locomo
from registre.bench.real.outputs import parse_budgets, write_real_outputs
from registre.bench.real.report import render_real_report
from registre.bench.real.transcript_run import TranscriptConfig, run_transcripts


def main(argv: list[str] | None = None) -> int:
    """Run one suite; print the report (or the JSON with ``--json``); exit status 0."""
    parser = argparse.ArgumentParser(prog="python -m registre.bench.real")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--suite", choices=["locomo"], help="a public benchmark suite")
    which.add_argument("--transcripts", action="store_true", help="PATHS are transcripts")
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    parser.add_argument("--budgets", default="4k,8k,16k")
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--format", default="auto", help="transcript format (default: auto)")
    parser.add_argument("--out", type=Path, default=Path(".registre/bench-real"))
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--baselines-full-budget",
        action="store_true",
        help="give the baselines the whole budget, not the room beside registre's output reserve",
    )
    args = parser.parse_args(argv)
    budgets = parse_budgets(args.budgets)

    def progress(text: str) -> None:
        print(f"  {text}", file=sys.stderr, flush=True)

    if args.suite == "locomo":
        conversations = [conv for path in args.paths for conv in load_locomo(path)]
        config = LocomoConfig(
            budgets,
            args.questions,
            args.conversations,
            baselines_full=args.baselines_full_budget,
        )
        results = run_locomo(conversations, config, args.out, progress)
    else:
        tconfig = TranscriptConfig(budgets, args.format, baselines_full=args.baselines_full_budget)
        results = run_transcripts(args.paths, tconfig, args.out, progress)
    paths = write_real_outputs(results, args.out)
    if args.json:
        print(json.dumps(results, indent=1, ensure_ascii=False))
    else:
        print(render_real_report(results))
        print(f"written: {paths['report']} {paths['results']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
