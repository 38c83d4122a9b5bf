"""The investigation as a short presentation: one self-contained HTML deck.

``registre report BUNDLE.zip --slides FILE`` (from a verified bundle, with its verdict) or
``registre transcript THREAD --format slides`` (from a ledger database: no bundle verified,
and the title slide says so). The deck tells the investigation by chapter (issue 33 item 3):

1. the title: the thread, the verdict line of :meth:`VerifyReport.summary` in its tone (word
   for word the terminal's), what was not checked, and the counts;
2. the task: the first user turn and the task's pins live at the end;
3. the decisions recorded (``decision`` entries), when there are any;
4. the key findings: what the final conclusions cite, one slide each with its evidence chain
   (evidence, the references it cites and the read entries that registered them), at most
   :data:`MAX_FINDINGS`, then one slide naming the rest;
5. the compactions, as one overview slide (how many, the tokens before and after each as a
   small chart, the sections of the latest summary);
6. the refused requests, when there are any;
7. each final conclusion with what it cites and their status at the end;
8. how to check it yourself.

Every slide fits the screen: texts are cut to a length a slide can hold (saying so) and lists
to a few items, and a slide whose content still overflows is scaled down until it fits.
Arrow keys, Page Up/Down, space, Home and End (and a click) move between slides; ``#sN`` in
the address opens slide N; printing gives one slide per page. No network at view time; every
text is escaped.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from registre.attest.entries import Entry
from registre.attest.verify import plural
from registre.errors import RegistreError
from registre.kinds import (
    CONTEXT_COMPACTION,
    DECISION,
    EVIDENCE_UPSERT,
    LIFECYCLE_KIND_NAMES,
    MODEL_CALL,
    TOOL_CALL,
    TURN,
)
from registre.ledger.exchange.transcript import describe
from registre.lifecycle import LifecycleState, apply, parse_body
from registre.report.gathering import Chain, Record, ReportData, as_record, conclusion_chains
from registre.report.html import GAP_ADVICE

if TYPE_CHECKING:
    from registre.ledger import Thread

__all__ = ["MAX_FINDINGS", "render_slides"]

MAX_FINDINGS: Final = 20
"""Key findings given a slide each; the rest are named on one more slide."""

_CSS: Final = """
html,body{margin:0;height:100%;background:#1f2430;font-family:system-ui,sans-serif;
color:#1b1f24}
.slide{display:none;box-sizing:border-box;width:min(100vw,177.78vh);height:min(56.25vw,100vh);
margin:auto;background:#fff;padding:3.2% 4.5% 5%;overflow:hidden;position:relative;
font-size:min(1.75vw,3.1vh)}
.slide.on{display:block}h1{font-size:2em;margin:0 0 .4em}h2{font-size:1.55em;margin:0 0 .5em}
p,li{line-height:1.35;margin:.25em 0}ul{margin:.2em 0 .2em 1.2em;padding:0}
ul ul{font-size:.9em}.muted{color:#5b6470;font-size:.85em}
.chapter{color:#6a3fb5;font-size:.8em;text-transform:uppercase;letter-spacing:.06em;
margin-bottom:.3em}
.foot{position:absolute;bottom:2.5%;left:4.5%;right:4.5%;display:flex;
justify-content:space-between;color:#888;font-size:.75em}
.verdict{padding:.6em .9em;border-radius:.3em;margin:.6em 0;font-size:1.05em}
.verdict.ok{background:#e6f4ea;border:.15em solid #11692c}
.verdict.warn{background:#fff6e0;border:.15em solid #8a5a00}
.verdict.bad{background:#fde7ea;border:.15em solid #b00020}
.verdict b{font-size:1.2em}.counts{display:flex;flex-wrap:wrap;gap:.4em .9em;padding:0;
margin:.6em 0;list-style:none}.counts b{font-size:1.15em}
.st{font-size:.75em;padding:0 .35em;border-radius:.25em;background:#e6f4ea;color:#11692c;
font-weight:600}.st.bad{background:#fde7ea;color:#b00020}
.refused{color:#c2410c}code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em}
svg text{font-size:12px;fill:#444}
@media print{body{background:#fff}.slide{display:block;page-break-after:always;
width:100%;height:auto;min-height:95vh}}
"""

_SCRIPT: Final = """
(function(){const s=[...document.querySelectorAll('.slide')];let i=0;
function fit(n){n.style.fontSize='';const base=parseFloat(getComputedStyle(n).fontSize);
 let k=1;while(n.scrollHeight>n.clientHeight+1&&k>0.5){k-=0.05;n.style.fontSize=(base*k)+'px';}}
function go(n){s[i].classList.remove('on');i=Math.max(0,Math.min(s.length-1,n));
 s[i].classList.add('on');fit(s[i]);history.replaceState(null,'','#s'+(i+1));
 document.body.dataset.slide=i+1;}
function fromHash(){const h=/^#s(\\d+)$/.exec(location.hash);return h?+h[1]-1:0;}
go(fromHash());window.addEventListener('hashchange',()=>go(fromHash()));
window.addEventListener('resize',()=>fit(s[i]));
const NEXT=['ArrowRight','ArrowDown','PageDown','Enter','n'],PREV=['ArrowLeft','ArrowUp',
 'PageUp','Backspace','p'];
document.addEventListener('keydown',e=>{if(e.altKey||e.ctrlKey||e.metaKey)return;let to=null;
 if(e.key===' ')to=e.shiftKey?i-1:i+1;else if(NEXT.includes(e.key))to=i+1;
 else if(PREV.includes(e.key))to=i-1;else if(e.key==='Home')to=0;
 else if(e.key==='End')to=s.length-1;if(to!==null){e.preventDefault();go(to);}});
document.addEventListener('click',e=>{if(!e.target.closest('a'))go(i+1);});})();
"""

_REASON: Final = re.compile(r"rejected \((\w+): [^)]*\)")
"""A rejection's reason code and message: the slide keeps the code."""
_TASK_PINS: Final = frozenset({"task_parameter", "definition", "open_question"})
"""The pins the task slide lists (decisions have their own slide)."""
_TEXT: Final = 420
_LINE: Final = 170
_ITEMS: Final = 7


def render_slides(source: Thread | ReportData | Record) -> Iterator[str]:
    """The deck of ``source`` as chunks of HTML (module docstring)."""
    record = as_record(source)
    entries = list(record.entries)
    blocks = [describe(entry) for entry in entries]
    refused = [
        (entry, block) for entry, block in zip(entries, blocks, strict=True) if block.refused
    ]
    state = _lifecycle(entries)
    chains = conclusion_chains(entries)
    slides: list[tuple[str, str]] = [("", _title(record, entries, len(refused), chains))]
    slides.append(("the task", _task(entries, state)))
    decisions = [e for e in entries if e.kind == DECISION]
    if decisions:
        slides.append(("decisions", _decisions(decisions)))
    findings = _findings(chains)
    for number, link in enumerate(findings[:MAX_FINDINGS], start=1):
        slides.append(("key findings", _finding(number, len(findings), link)))
    if len(findings) > MAX_FINDINGS:
        slides.append(("key findings", _more_findings(findings[MAX_FINDINGS:])))
    compactions = [e for e in entries if e.kind == CONTEXT_COMPACTION]
    if compactions:
        slides.append(("compactions", _compactions(compactions, entries)))
    if refused:
        slides.append(("refusals", _refusals(refused)))
    for chain in chains:
        slides.append(("final conclusions", _final(chain)))
    slides.append(("checking it", _check(record)))
    title = f"{record.thread}: the investigation"
    yield (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n"
    )
    for number, (chapter, slide) in enumerate(slides, start=1):
        head = f'<div class="chapter">{_e(chapter)}</div>' if chapter else ""
        yield (
            f'<section class="slide" id="s{number}">{head}{slide}<div class="foot">'
            f"<span>{_e(record.thread)}</span><span>{number} / {len(slides)}</span></div>"
            "</section>\n"
        )
    yield f"<script>{_SCRIPT}</script></body></html>\n"


# --- the slides --------------------------------------------------------------------------------


def verdict_box(record: Record) -> str:
    """The verdict in its tone; its text is the verdict line exactly."""
    verdict = record.verdict()
    rest = verdict.line()[len(verdict.headline) :]
    return (
        f'<div class="verdict {verdict.tone}" id="verdict"><b>{_e(verdict.headline)}</b>'
        f"{_e(rest)}</div>"
    )


def _title(record: Record, entries: Sequence[Entry], refused: int, chains: list[Chain]) -> str:
    kinds = Counter(entry.kind for entry in entries)
    counts = [
        plural(len(entries), "entry"),
        plural(kinds[MODEL_CALL], "model call"),
        plural(kinds[TOOL_CALL], "tool call"),
        plural(kinds[CONTEXT_COMPACTION], "compaction"),
        plural(kinds[EVIDENCE_UPSERT], "evidence proposal"),
        plural(len(chains), "final conclusion"),
    ]
    items = "".join(f"<li>{_count(item)}</li>" for item in counts)
    items += f'<li class="refused">{_count(plural(refused, "refused request"))}</li>'
    source = f"bundle {record.bundle}" if record.bundle is not None else "the ledger database"
    history = record.verdict().history_line()
    said = f"<p class='muted'>{_e(history[0].upper() + history[1:])}.</p>" if history else ""
    return (
        f"<h1>{_e(record.thread)}</h1><p class='muted'>{_e(record.origin)} · from "
        f"{_e(source)}</p>{verdict_box(record)}{said}<ul class='counts'>{items}</ul>"
    )


def _count(text: str) -> str:
    number, _, rest = text.partition(" ")
    return f"<b>{_e(number)}</b> {_e(rest)}"


def _task(entries: Sequence[Entry], state: LifecycleState) -> str:
    task = next((e for e in entries if e.kind == TURN and e.body.get("role") == "user"), None)
    said = (
        f"<p>{_e(_cut(str(task.body.get('text', '')), 700))}</p><p class='muted'>"
        f"{_e(task.actor)}, entry #{task.seq}</p>"
        if task is not None
        else "<p>No user turn recorded.</p>"
    )
    shown = " ".join(str(task.body.get("text", "")).split()) if task is not None else ""
    pins = [
        pin
        for pin in state.live_pins()
        if pin.kind in _TASK_PINS and " ".join(pin.text.split()) != shown
    ]
    listed = "".join(
        f"<li>{_e(_cut(pin.text, _LINE))} <span class='muted'>({_e(pin.kind)}, "
        f"#{pin.seq})</span></li>"
        for pin in pins[:_ITEMS]
    )
    more = _more(len(pins) - _ITEMS, "more pin")
    pinned = f"<h2>Pinned to every context</h2><ul>{listed}{more}</ul>" if pins else ""
    return f"<h2>The task</h2>{said}{pinned}"


def _decisions(decisions: Sequence[Entry]) -> str:
    listed = "".join(
        f"<li>{_e(_cut(str(e.body.get('text', '')), _LINE))} <span class='muted'>"
        f"({_e(e.actor)}, #{e.seq})</span></li>"
        for e in decisions[:_ITEMS]
    )
    return (
        f"<h2>{_e(plural(len(decisions), 'recorded decision'))}</h2><ul>{listed}"
        f"{_more(len(decisions) - _ITEMS, 'more decision')}</ul>"
    )


def _findings(chains: Sequence[Chain]) -> list[dict[str, Any]]:
    """What the final conclusions cite, each once, in the order they cite it (active finals
    first)."""
    seen: set[str] = set()
    found = []
    ordered = sorted(chains, key=lambda c: c.conclusion["status"] != "active")
    for chain in ordered:
        for link in chain.links:
            if link["id"] not in seen:
                seen.add(link["id"])
                found.append(link)
    return found


def _finding(number: int, total: int, link: dict[str, Any]) -> str:
    rest: list[str] = []
    below = link.get("links") or []
    for inner in below[:5]:
        refs = "".join(_ref(ref) for ref in inner.get("refs", [])[:2])
        rest.append(
            f"<li><b>{_e(inner['id'])}</b> {_status(inner)} {_e(_cut(inner['text'], _LINE))}"
            f"{f'<ul>{refs}</ul>' if refs else ''}</li>"
        )
    refs = "".join(_ref(ref) for ref in link.get("refs", [])[:3])
    if refs:
        rest.append(f"<li>sources<ul>{refs}</ul></li>")
    more = _more(len(below) - 5, "more cited item")
    where = f", #{link['seq']}" if link.get("seq") is not None else ""
    return (
        f"<h2>Finding {number} of {total}: {_e(link['id'])} <span class='muted'>"
        f"({_e(link['kind'])}{where})</span> {_status(link)}</h2>"
        f"<p>{_e(_cut(link['text'], _TEXT))}</p>"
        f"{f'<p class=muted>rests on</p><ul>{chr(10).join(rest)}{more}</ul>' if rest else ''}"
    )


def _more_findings(rest: Sequence[dict[str, Any]]) -> str:
    listed = "".join(
        f"<li><b>{_e(link['id'])}</b> {_status(link)} {_e(_cut(link['text'], 110))}</li>"
        for link in rest[:12]
    )
    return (
        f"<h2>{_e(plural(len(rest), 'more finding'))}</h2><ul>{listed}"
        f"{_more(len(rest) - 12, 'more')}</ul><p class='muted'>Each with its chain in the "
        "audit report.</p>"
    )


def _ref(ref: dict[str, Any]) -> str:
    read = f", read at #{ref['read_seq']}" if ref.get("read_seq") is not None else ""
    return (
        f"<li class='muted'>{_e(str(ref['ref']))}: {_e(_cut(str(ref['source']), 80))}, "
        f"{_e(_cut(str(ref['location']), 80))}{read}</li>"
    )


def _compactions(compactions: Sequence[Entry], entries: Sequence[Entry]) -> str:
    before = [int(e.body.get("tokens_before", 0)) for e in compactions]
    after = [int(e.body.get("tokens_after", 0)) for e in compactions]
    summarized = [e for e in compactions if e.body.get("summary")]
    latest = summarized[-1] if summarized else None
    sections = ""
    if latest is not None:
        counted = Counter(str(line["section"]) for line in latest.body["summary"])
        sections = (
            f"<p>The latest summary (#{latest.seq}) holds "
            f"{_e(plural(len(latest.body['summary']), 'line'))}: "
            + _e(", ".join(f"{section} {n}" for section, n in counted.items()))
            + ". Each line points at the entries it stands for; the audit report links "
            "them.</p>"
        )
    folded = latest.body.get("folded", {}) if latest is not None else {}
    reach = (
        f"<p>At the end, entries {folded.get('from')}&ndash;{folded.get('to')} are folded "
        "into summaries; every one of them stays in the ledger, signed.</p>"
        if folded
        else ""
    )
    return (
        f"<h2>{_e(plural(len(compactions), 'compaction'))} kept the context within budget</h2>"
        f"<p>Tokens before &rarr; after: median {_median(before):,} &rarr; "
        f"{_median(after):,}, largest before {max(before):,}.</p>"
        f"{_fold_chart(compactions, entries[-1].seq if entries else 1)}{reach}{sections}"
    )


def _fold_chart(compactions: Sequence[Entry], last: int) -> str:
    """Each compaction as a bar from its tokens after to its tokens before."""
    width, height, left, bottom = 900, 170, 56, 24
    top = max(int(e.body.get("tokens_before", 0)) for e in compactions) or 1
    inner_w, inner_h = width - left - 10, height - bottom - 8

    def y(tokens: int) -> float:
        return 8 + inner_h * (1 - tokens / top)

    bars = "".join(
        f'<line x1="{left + inner_w * e.seq / max(1, last):.1f}" '
        f'y1="{y(int(e.body.get("tokens_before", 0))):.1f}" '
        f'x2="{left + inner_w * e.seq / max(1, last):.1f}" '
        f'y2="{y(int(e.body.get("tokens_after", 0))):.1f}" stroke="#6a3fb5" '
        'stroke-width="2"/>'
        for e in compactions
    )
    return (
        f'<svg viewBox="0 0 {width} {height}" width="100%" role="img" aria-label="tokens '
        'before and after each compaction">'
        f'<line x1="{left}" y1="{8 + inner_h}" x2="{width - 10}" y2="{8 + inner_h}" '
        'stroke="#888"/>'
        f'<text x="{left - 6}" y="14" text-anchor="end">{top:,}</text>'
        f'<text x="{left - 6}" y="{8 + inner_h}" text-anchor="end">0</text>'
        f'<text x="{left}" y="{height - 4}">entry 0</text>'
        f'<text x="{width - 10}" y="{height - 4}" text-anchor="end">entry {last:,} '
        "(each bar: tokens before, down to tokens after)</text>"
        f"{bars}</svg>"
    )


def _median(values: Sequence[int]) -> int:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0


def _refusals(refused: Sequence[tuple[Entry, Any]]) -> str:
    kinds = Counter(entry.kind for entry, _block in refused)
    listed = "".join(_refusal(entry, block) for entry, block in refused[:_ITEMS])
    said = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    return (
        f"<h2 class='refused'>{_e(plural(len(refused), 'refused request'))}</h2>"
        f"<p>The rules refused, and the ledger recorded: {_e(said)}.</p><ul>{listed}"
        f"{_more(len(refused) - _ITEMS, 'more')}</ul>"
    )


def _refusal(entry: Entry, block: Any) -> str:
    """What was refused and why: the rejected items of a request, or its title."""
    rejected = [
        _REASON.sub(r"rejected (\1)", item) for item in block.items if " rejected" in f" {item}"
    ]
    what = "; ".join(rejected) if rejected else block.title.split(" ", 1)[-1]
    text = f" {block.text}" if block.text and not rejected else ""
    return (
        f"<li><span class='muted'>#{entry.seq} {_e(entry.kind)}</span> "
        f"{_e(_cut(what + text, _LINE))}</li>"
    )


def _final(chain: Chain) -> str:
    head = chain.conclusion
    listed = "".join(
        f"<li><b>{_e(link['id'])}</b> {_status(link)} {_e(_cut(link['text'], 95))}</li>"
        for link in chain.links[:16]
    )
    where = f", #{head['seq']}" if head.get("seq") is not None else ""
    return (
        f"<h2>Final conclusion {_e(head['id'])} <span class='muted'>({where.lstrip(', ')})"
        f"</span> {_status(head)}</h2><p>{_e(_cut(head['text'], _TEXT))}</p>"
        f"<p class='muted'>cites {_e(plural(len(chain.links), 'item'))}</p><ul>{listed}"
        f"{_more(len(chain.links) - 16, 'more')}</ul>"
    )


def _check(record: Record) -> str:
    verdict = record.verdict()
    if record.bundle is None:
        how = (
            "<p>These slides were read from a ledger database. For a verdict, export the "
            "thread and verify the bundle offline:</p><p><code>registre export "
            f"{_e(record.thread)} -o bundle.zip</code><br><code>registre report bundle.zip "
            "--key-file operator.vkey -o audit.html --slides slides.html</code></p>"
        )
    else:
        how = (
            "<p>Anyone with the bundle and the log's verifier key can check it again, offline "
            f"(only registre.attest and cryptography):</p><p><code>python -m registre.attest "
            f"verify {_e(record.bundle)} --key {_e(record.log_key or 'VKEY')}</code></p>"
        )
    gaps = "".join(
        f"<li><b>{_e(name)}</b>: {_e(GAP_ADVICE.get(name, reason))}</li>"
        for name, reason in verdict.reasons
    )
    left = f"<h2>Not checked</h2><ul>{gaps}</ul>" if gaps else ""
    return f"<h2>Check it yourself</h2>{verdict_box(record)}{how}{left}"


def _status(item: dict[str, Any]) -> str:
    if item.get("stale"):
        return "<span class='st bad'>stale</span>"
    status = str(item.get("status"))
    if status != "active":
        successor = item.get("successor")
        by = f" by {successor}" if successor else ""
        return f"<span class='st bad'>{_e(status + by)}</span>"
    return "<span class='st'>active</span>"


def _lifecycle(entries: Sequence[Entry]) -> LifecycleState:
    """The lifecycle at the last entry (the live pins)."""
    state = LifecycleState.empty()
    for entry in entries:
        if entry.kind in LIFECYCLE_KIND_NAMES:
            try:
                state = apply(state, parse_body(entry.kind, entry.body))
            except (RegistreError, ValueError):
                continue
    return state


def _more(count: int, what: str) -> str:
    """``and 3 more pins`` as a last list item (``what`` ``more``: ``and 3 more``)."""
    if count <= 0:
        return ""
    said = f"{count} more" if what == "more" else plural(count, what)
    return f"<li class='muted'>and {_e(said)}</li>"


def _cut(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters at a word, marked with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
