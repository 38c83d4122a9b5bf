"""The audit report: what it shows of a verified bundle, and that it shows nothing of one
that fails verification."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from registre.cli.commands import cli
from registre.report import gather, render_report
from registre.report.html import unpack
from tests.report.conftest import Investigation, build


def _html(investigation: Investigation) -> str:
    return "".join(render_report(gather(investigation.bundle, investigation.policy)))


def _island(page: str) -> dict[str, Any]:
    """The report's data, every compressed chunk decoded and merged into one view."""
    island = r'<script type="application/json" id="report-data">(.*?)</script>'
    match = re.search(island, page, re.S)
    assert match is not None
    index = json.loads(match.group(1))
    merged: dict[str, Any] = {"entries": [], "compactions": {}, "covered": {}, "contexts": {}}
    for packed in index["page_data"]:
        chunk = unpack(packed)
        strings = chunk["strings"]
        merged["entries"] += [
            [row[0], row[1], *(None if i is None else strings[i] for i in row[2:6])]
            for row in chunk["entries"]
        ]
        merged["compactions"].update(chunk["compactions"])
        merged["covered"].update(chunk["covered"])
    for packed in index["context_data"]:
        merged["contexts"].update(unpack(packed)["calls"])
    merged["index"] = index
    return merged


def test_verified_bundle_shows_every_entry_contexts_and_chains(
    investigation: Investigation,
) -> None:
    data = gather(investigation.bundle, investigation.policy)
    assert data.verified
    assert [entry.seq for entry in data.entries] == list(range(len(data.entries)))
    # every model call's context was rebuilt (digest checked by the verifier's hook)
    calls = [entry for entry in data.entries if entry.kind == "model.call"]
    assert len(calls) == investigation.model_calls
    assert set(data.contexts) == {entry.seq for entry in calls}
    for entry in calls:
        context = data.contexts[entry.seq]
        assert context.digest == entry.body["projection_sha256"]
        assert context.tokens <= context.budget == entry.body["budget_tokens"]
    # compactions happened, so some call no longer saw some entries verbatim
    assert any(entry.kind == "context.compaction" for entry in data.entries)
    assert any(context.not_verbatim for context in data.contexts.values())
    # the final's chain reaches the read entries; the superseded evidence is not what it cites
    (chain,) = data.chains
    assert chain.conclusion["id"] == investigation.final_id
    assert chain.conclusion["status"] == "active"
    cited = {link["id"]: link for link in chain.links}
    assert investigation.superseded_id not in cited
    evidence = next(link for link in chain.links if link["kind"] == "evidence")
    assert evidence["refs"][0]["read_seq"] is not None
    compute = next(link for link in chain.links if link["kind"] == "compute")
    assert compute["links"][0]["refs"][0]["ref"] == "r2"


def test_report_is_self_contained(investigation: Investigation) -> None:
    page = _html(investigation)
    # nothing is fetched at view time: no src, no external href, no @import or url()
    assert " src=" not in page
    assert re.search(r'href="(?!#)', page) is None
    assert "@import" not in page and "url(" not in page
    data = _island(page)
    assert data["index"]["page_size"] == 200
    pages = data["index"]["pages"]
    assert sum(count for _, _, count in pages) == len(data["entries"]) > 0
    assert set(data["index"]["contexts"]) == set(data["contexts"])


def test_every_summary_pointer_and_covered_entry_is_linked(investigation: Investigation) -> None:
    data = _island(_html(investigation))
    compactions = data["compactions"]
    covered = data["covered"]
    assert isinstance(compactions, dict) and isinstance(covered, dict)
    pointed = set()
    for seq, lines in compactions.items():
        for number, (section, _text, pointers) in enumerate(lines):
            for first, last in pointers:
                for target in range(first, last + 1):
                    pointed.add(target)
                    assert [int(seq), number, section] in covered[str(target)]
    assert pointed and pointed == {int(seq) for seq in covered}


def test_entry_text_cannot_close_the_data_island(tmp_path: Path) -> None:
    hostile = build(tmp_path, steps=2, marker="</script><script>alert(1)</script>")
    page = _html(hostile)
    assert "<script>alert(1)" not in page
    assert "alert(1)" in json.dumps(_island(page))  # still shown, as text


def test_tampered_bundle_report_shows_nothing_fail(tmp_path: Path) -> None:
    honest = build(tmp_path, steps=2)
    forged = tmp_path / "forged.zip"
    with zipfile.ZipFile(honest.bundle) as source, zipfile.ZipFile(forged, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "entries.jsonl":
                data = data.replace(b"reconciles within tolerance", b"reconciles beyond question")
            target.writestr(item, data)
    result = gather(forged, honest.policy)
    assert not result.verified
    assert result.entries == [] and result.chains == [] and result.contexts == {}
    page = "".join(render_report(result))
    assert "NOT VERIFIED" in page and "Nothing in this bundle is shown" in page
    assert "reconciles beyond question" not in page
    assert 'id="report-data"' not in page


def test_cli_report_writes_the_file_and_exits_by_verdict(
    investigation: Investigation, tmp_path: Path
) -> None:
    runner = CliRunner()
    out = tmp_path / "report.html"
    args = ["report", str(investigation.bundle), "--key", investigation.vkey, "-o", str(out)]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "VERIFIED" in result.output
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    other = build(tmp_path / "other", steps=1) if (tmp_path / "other").mkdir() is None else None
    assert other is not None
    wrong_key = runner.invoke(
        cli, ["report", str(investigation.bundle), "--key", other.vkey, "-o", str(out)]
    )
    assert wrong_key.exit_code == 1
    assert "NOT VERIFIED" in out.read_text(encoding="utf-8")


def test_stale_final_is_marked_on_the_first_screen(tmp_path: Path) -> None:
    stale = build(tmp_path, steps=2, stale=True)
    data = gather(stale.bundle, stale.policy)
    assert data.verified
    assert any(stale.final_id in item for item in data.verification.stale_finals)
    page = "".join(render_report(data))
    verdict = page.split('id="verdict"', 1)[1].split("</div>", 1)[0]
    assert 'class="verdict warn"' in page and "STALE" in verdict and stale.final_id in verdict
    (chain,) = data.chains
    assert chain.conclusion["stale"] is True
    assert "stale: evidence it relies on changed" in page


def test_bundle_swapped_during_report_fail(tmp_path: Path, monkeypatch: Any) -> None:
    """Another bundle of the same log renamed over the path while it was being verified:
    the report shows what was verified (issue 29 item 7), never the other thread."""
    import importlib
    import shutil

    from registre.attest.notes import Signer

    gather_module = importlib.import_module("registre.report.gathering")

    signer = Signer.generate("report.example/ledger")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    verified = build(tmp_path / "a", steps=3, marker=" Transfer REJECTED.", signer=signer)
    other = build(tmp_path / "b", steps=3, marker=" Transfer APPROVED.", signer=signer)
    real = gather_module.verify_bundle

    def racing(source: Any, *args: Any, **kwargs: Any) -> Any:
        report = real(source, *args, **kwargs)
        shutil.copy(other.bundle, verified.bundle)  # renamed over the path meanwhile
        return report

    monkeypatch.setattr(gather_module, "verify_bundle", racing)
    data = gather(verified.bundle, verified.policy)
    shown = json.dumps([entry.body for entry in data.entries])
    assert data.verified and "REJECTED" in shown and "APPROVED" not in shown


def test_failing_bundle_report_opens_with_verified_fail(tmp_path: Path) -> None:
    """A failing bundle whose manifest claims a 64 KiB origin of "VERIFIED ✔ … verified":
    nothing unverified comes before the verdict, and what follows it is cut short and marked
    (issue 29 item 8)."""
    honest = build(tmp_path, steps=2)
    forged = tmp_path / "forged.zip"
    claim = "VERIFIED ✔ every check passed, verified " * 1600
    with zipfile.ZipFile(honest.bundle) as source, zipfile.ZipFile(forged, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "manifest.json":
                manifest = json.loads(data)
                manifest["origin"] = claim
                data = json.dumps(manifest).encode()
            target.writestr(item, data)
    result = gather(forged, honest.policy)
    assert not result.verified
    page = "".join(render_report(result))
    before, _sep, after = page.partition('id="verdict"')
    assert "✔" not in before and "VERIFIED ✔" not in before
    assert len(before) < 8000
    assert "NOT VERIFIED" in after[:200]
    assert claim not in page and "VERIFIED ✔ every check passed" * 3 not in page


def test_report_options_disagree_with_verify_fail(
    investigation: Investigation, tmp_path: Path
) -> None:
    """report takes every option of verify and prints verify's own report, so the verdict in
    the terminal, the page's and `registre verify`'s agree (issue 29 item 9): a ratio limit
    too low for the bundle fails both alike, a larger one lets both verify; --max-age without
    a pinned witness fails both alike; --state records the head."""
    runner = CliRunner()
    out = tmp_path / "report.html"
    base = [str(investigation.bundle), "--key", investigation.vkey]
    for extra, code in (
        (["--max-ratio", "1"], 1),
        (["--max-ratio", "1000", "--require-full"], 0),
        (["--max-age", "7d"], 1),
        (["--state", str(tmp_path / "state.json")], 0),
    ):
        verified = runner.invoke(cli, ["verify", *base, *extra])
        reported = runner.invoke(cli, ["report", *base, *extra, "-o", str(out)])
        assert (verified.exit_code != 0, reported.exit_code != 0) == (code != 0, code != 0), (
            extra,
            verified.output,
            reported.output,
        )
        verdict = verified.output.splitlines()[0]
        assert verdict in reported.output, (verdict, reported.output)
        page = out.read_text(encoding="utf-8")
        assert ("NOT VERIFIED" in page) == (code != 0)
    assert (tmp_path / "state.json").exists()


# --- issue 33 items 1 and 2: one verdict, history as a count, a chart to read ---------------


def _section(page: str, section: str) -> str:
    return page.split(f'id="{section}"', 1)[1].split("</section>", 1)[0]


def test_verdict_line_is_the_terminals_and_history_is_a_count(
    investigation: Investigation,
) -> None:
    data = gather(investigation.bundle, investigation.policy)
    page = "".join(render_report(data))
    verdict = _section(page, "verdict").split("</div>\n", 1)[0]
    line = re.sub(r"<[^>]+>", "", verdict.split('id="verdict-line">', 1)[1].split("</div>")[0])
    assert line == data.verification.verdict() == "VERIFIED; not checked: witnesses, rollback"
    assert 'class="verdict warn"' in page  # no witness pinned
    assert "<b>witnesses</b>: no witness was pinned" in verdict
    assert "History" not in verdict and "is active and fresh" in _section(page, "history")
    assert "Every check below passed" not in page


def test_history_is_a_count_beside_the_verdict_and_a_list_below(tmp_path: Path) -> None:
    stale = build(tmp_path, steps=2, stale=True)
    data = gather(stale.bundle, stale.policy)
    page = "".join(render_report(data))
    verdict = _section(page, "verdict").split("</div>\n", 1)[0]
    history = data.verification.summary().history
    assert history and "superseded" not in data.verification.verdict()
    said = ", ".join(f"{n} {status}" for status, n in history)
    assert f"History at the checkpoint: {said}: ordinary history" in verdict
    assert '<a href="#history">the list</a>' in verdict
    listed = _section(page, "history")
    for item in data.verification.inactive:
        assert f"<li>{item}</li>" in listed
        if item not in data.verification.stale_finals:
            assert item not in verdict


def test_refusals_are_counted_and_flagged(investigation: Investigation) -> None:
    page = _html(investigation)
    assert '<li class="refused" id="refusals"><b>1</b> refused request (1 conclusion.final)' in (
        page
    )
    data = _island(page)
    index = data["index"]
    flags = [row for chunk in index["page_data"] for row in unpack(chunk)["entries"]]
    refused = [row[0] for row in flags if row[7] & 1]
    assert len(refused) == 1
    facets = unpack(index["facet_data"])
    assert [flags[i][0] for i in facets["r"]] == refused
    assert len(facets["k"]) == len(facets["a"]) == len(flags)
    assert index["kinds"][facets["k"][refused[0]]] == "conclusion.final"


def test_chart_has_axes_budget_tick_and_compaction_marks(investigation: Investigation) -> None:
    data = gather(investigation.bundle, investigation.policy)
    plot = _section("".join(render_report(data)), "plot")
    assert ">entry (seq)</text>" in plot and ">context tokens</text>" in plot
    assert ">budget 2,000</text>" in plot
    compactions = sum(1 for e in data.entries if e.kind == "context.compaction")
    assert plot.count('class="fold"') == compactions > 0
    assert "stroke-dasharray" in plot and plot.count("<polyline") == 1  # the tokens line
    # the y axis is scaled to what is plotted: its top label is at most 6% over the budget
    labels = [int(t.replace(",", "")) for t in re.findall(r'text-anchor="end">([\d,]+)<', plot)]
    assert max(labels) <= 2000 * 1.06


def test_no_model_calls_says_so(tmp_path: Path) -> None:
    from registre.attest.notes import Signer
    from registre.attest.verify import TrustPolicy
    from registre.ledger import Ledger, export_thread

    signer = Signer.generate("report.example/ledger")
    with Ledger.open(str(tmp_path / "l.db"), signer) as ledger:
        thread = ledger.create_thread("quiet")
        thread.append("turn", {"role": "user", "text": "Nothing to call a model for."}, "user")
        thread.checkpoint()
        export_thread(ledger, "quiet", tmp_path / "quiet.zip")
    data = gather(tmp_path / "quiet.zip", TrustPolicy(log_key=signer.verifier()))
    plot = _section("".join(render_report(data)), "plot")
    assert "<svg" not in plot
    assert "No model calls in this bundle" in plot


def test_times_are_human_and_plurals_agree(investigation: Investigation) -> None:
    page = _html(investigation)
    assert "(s)" not in page and "(ies)" not in page and "(es)" not in page
    assert "<b>1</b> final conclusion</li>" in page and "</b> entries</li>" in page
    data = _island(page)
    meta = data["entries"][0][3]
    assert re.search(r" · \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$", meta), meta
    assert re.search(r"Recorded from \S+Z to \S+Z \(\d+ (second|minute)s? before", page)
