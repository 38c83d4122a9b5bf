"""Peak resident memory of a full export and of its offline verification (issue 17, item 3).

For each size n from ``bench_sizes()``, on the SQLite ledger of
:mod:`tests.benchmarks.test_bench_export` (a read, an upsert, a compute, turns of ~500-byte
leaves, a final, a checkpoint at the head), each run in a fresh interpreter so that its peak
is its own:

* group ``memory n=N``:

  - ``export`` -- ``export_thread`` of the whole thread to a file (the streaming writer:
    one batch of rows and a 1 MiB buffer held);
  - ``verify`` -- ``verify_bundle`` of that file, one process (entries.jsonl streamed: 32
    bytes of leaf hash kept per entry).

``extra_info`` records ``peak_rss_mb`` (the child's ``ru_maxrss``), ``imports_rss_mb`` (its
resident memory once registre is imported, before the work) and their difference,
``work_rss_mb``: what the export or the verification itself cost. Issue 17's goal is a peak
of at most 200 MB at 10^6 entries (``REGISTRE_BENCH_SIZES=1e6``; building that ledger takes
a while). Nothing is asserted about the figures.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks.conftest import bench_sizes
from tests.benchmarks.test_bench_export import SIGNER, ledger_file

SIZES = bench_sizes()
size_params = pytest.mark.parametrize("n", SIZES, ids=[f"n={n}" for n in SIZES])

CHILD = """
import json, resource, sys
from registre.attest.notes.keys import Verifier
from registre.attest.verify.verifier import TrustPolicy, verify_bundle
from registre.ledger.exchange.export import export_thread
from registre.ledger.ledger import Ledger

mode, database, bundle, vkey = sys.argv[1:5]
imports = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if mode == "export":
    with Ledger.open(database, create=False) as ledger:
        entries = export_thread(ledger, "t1", bundle, overwrite=True).entries
else:
    entries = verify_bundle(bundle, TrustPolicy(Verifier.from_vkey(vkey))).entries
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"entries": entries, "imports_kb": imports, "peak_kb": peak}))
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bench-memory")


def run_child(mode: str, database: Path, bundle: Path) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(database), str(bundle), SIGNER.vkey()],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@size_params
@pytest.mark.parametrize("mode", ["export", "verify"])
def test_peak_memory(benchmark: Any, folder: Path, n: int, mode: str) -> None:
    benchmark.group = f"memory n={n}"
    database = ledger_file(folder, n)
    bundle = folder / f"memory-{n}.zip"
    if mode == "verify" and not bundle.exists():
        run_child("export", database, bundle)
    figures = benchmark.pedantic(lambda: run_child(mode, database, bundle), rounds=1)
    assert figures["entries"] == n
    benchmark.extra_info["peak_rss_mb"] = round(figures["peak_kb"] / 1024, 1)
    benchmark.extra_info["imports_rss_mb"] = round(figures["imports_kb"] / 1024, 1)
    benchmark.extra_info["work_rss_mb"] = round(
        (figures["peak_kb"] - figures["imports_kb"]) / 1024, 1
    )
