"""The audit report as one self-contained HTML file.

No network at view time: no external font, stylesheet, script or image. The static parts
(verdict, trust, steps, the token plot as inline SVG, the conclusion chains) are rendered
here with every text escaped; the timeline and the model-call contexts are rendered in the
browser by a small inline script from a JSON island (``<script type="application/json">``,
with ``<``, ``>`` and ``&`` escaped, read with ``JSON.parse`` and written with
``textContent`` only). The island is a small index plus compressed chunks (raw deflate,
base64; one per page of :data:`PAGE_SIZE` entries, one per :data:`CONTEXT_GROUP` model
calls), decoded by the browser's own ``DecompressionStream`` only when a page or a context
is opened: the file is about the size of the bundle, and opening it costs one page whatever
the length of the thread. ``body[data-ready]`` is set once the first page is shown.

Element ids a reader (and the browser tests) can rely on: ``#verdict``; ``#steps``;
``#plot``; ``#chains``; ``#timeline``, whose entries are ``#e-SEQ`` (a link to ``#e-SEQ``
opens the page holding that entry and highlights it); summary lines ``#l-SEQ-LINE``; a
model call's context opens in ``#context`` with its messages in ``#context-messages`` and
what it no longer saw verbatim in ``#context-missing``.
"""

from __future__ import annotations

import base64
import html
import json
import zlib
from collections.abc import Iterator
from typing import Any, Final

from registre.attest.entries import Entry
from registre.kinds import CONTEXT_COMPACTION
from registre.ledger.exchange.transcript import describe
from registre.report.gathering import ReportData, format_timestamp, json_script

__all__ = ["CONTEXT_GROUP", "PAGE_SIZE", "render_report", "timeline_data", "unpack"]

PAGE_SIZE: Final = 200
"""Entries shown per page of the timeline."""

_CSS: Final = """
:root{--ok:#11692c;--bad:#b00020;--warn:#8a5a00;--line:#d0d4dc}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1b1f24;
background:#fafbfc}
header,main{max-width:72rem;margin:0 auto;padding:0 1.2rem}
h1{font-size:1.4rem;margin:1.2rem 0 .4rem}h2{font-size:1.15rem;margin:1.6rem 0 .5rem;
border-bottom:1px solid var(--line);padding-bottom:.2rem}
.verdict{padding:.9rem 1.1rem;border-radius:6px;font-size:1.1rem;margin:.8rem 0}
.verdict.ok{background:#e6f4ea;border:2px solid var(--ok)}
.verdict.bad{background:#fde7ea;border:2px solid var(--bad)}
.verdict.warn{background:#fff6e0;border:2px solid var(--warn)}
.verdict b{font-size:1.25rem}.muted{color:#5b6470;font-size:.88em}
table{border-collapse:collapse;width:100%;font-size:.92em}
td,th{border-bottom:1px solid var(--line);padding:.3rem .4rem;text-align:left;
vertical-align:top}
.passed{color:var(--ok);font-weight:600}.failed{color:var(--bad);font-weight:600}
.skipped,.not-run,.stale{color:var(--warn);font-weight:600}
code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.86em;
word-break:break-all}
.entry{border-left:4px solid #c5cad3;background:#fff;margin:.45rem 0;padding:.35rem .7rem;
border-radius:0 4px 4px 0}
.entry.tool{border-color:#5d8fa8}.entry.pin{border-color:#d08a00;background:#fff9ec}
.entry.evidence{border-color:#2f8f46;background:#f3fbf4}.entry.record{color:#4a525c}
.entry.compaction{border:2px dashed #5959c9;background:#f4f4ff}
.entry.hit{outline:3px solid #f2b600}
.title{font-weight:600}.meta{color:#5b6470;font-size:.8em}
pre{white-space:pre-wrap;background:#f3f4f6;padding:.45rem;margin:.3rem 0;max-height:22rem;
overflow:auto}
.cov{font-size:.8em;color:#3d3d9e;margin-top:.2rem}
.sline{margin:.2rem 0}.sline.hit{background:#fff2b3}
.badge{display:inline-block;border-radius:3px;padding:0 .35rem;font-size:.78em;
margin-left:.3rem;background:#e8eaee}
.badge.bad{background:#fde7ea;color:var(--bad)}.badge.ok{background:#e6f4ea;color:var(--ok)}
.chain{background:#fff;border:1px solid var(--line);border-radius:5px;padding:.5rem .8rem;
margin:.6rem 0}.chain ul{margin:.2rem 0 .2rem 1.1rem;padding:0}
nav.pages{display:flex;gap:.5rem;align-items:center;margin:.6rem 0;flex-wrap:wrap}
button{font:inherit;padding:.15rem .6rem;cursor:pointer}
#context{position:fixed;inset:4% 4%;background:#fff;border:2px solid #333;border-radius:6px;
box-shadow:0 8px 40px #0006;display:none;flex-direction:column;z-index:5}
#context.open{display:flex}#context header{display:flex;justify-content:space-between;
align-items:center;max-width:none;width:100%;box-sizing:border-box;padding:.5rem .9rem;
border-bottom:1px solid var(--line)}
#context .cols{display:grid;grid-template-columns:2fr 1fr;gap:1rem;overflow:auto;
padding:.6rem .9rem;flex:1}
.msg{border-left:3px solid #c5cad3;padding:.2rem .5rem;margin:.35rem 0}
.msg .role{font-weight:600;font-size:.8em;text-transform:uppercase;color:#5b6470}
svg text{font-size:11px;fill:#444}
"""

_SCRIPT: Final = """
(function(){
const D=JSON.parse(document.getElementById('report-data').textContent);
const P=D.pages, STATUS=D.statuses, cache=new Map();
let page=-1, hit=null, pending=null;
const tl=document.getElementById('timeline-entries');
async function inflate(b64){const bin=Uint8Array.from(atob(b64),c=>c.charCodeAt(0));
 const st=new Blob([bin]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
 return JSON.parse(await new Response(st).text());}
function chunk(kind,i){const key=kind+i;if(!cache.has(key))cache.set(key,
 inflate(kind==='p'?D.page_data[i]:D.context_data[i]));return cache.get(key);}
function el(tag,cls,text){const n=document.createElement(tag);if(cls)n.className=cls;
 if(text!==undefined&&text!==null)n.textContent=text;return n;}
function link(seq,label){const a=el('a',null,label);a.href='#e-'+seq;return a;}
function spanLinks(parent,pointers){pointers.forEach((p,i)=>{if(i)parent.append(', ');
 parent.append(link(p[0],p[0]===p[1]?'#'+p[0]:'#'+p[0]+'\\u2013'+p[1]));});}
function renderEntry(C,e){
 const S=C.strings;const [seq,style,title,meta,text,code,items]=e;
 const box=el('div','entry '+style);box.id='e-'+seq;
 box.append(el('div','title',S[title]),el('div','meta',S[meta]));
 if(text!==null)box.append(el('div',null,S[text]));
 if(code!==null)box.append(el('pre',null,S[code]));
 const comp=C.compactions[seq];
 if(comp){comp.forEach((line,i)=>{const d=el('div','sline');d.id='l-'+seq+'-'+i;
   d.append(el('b',null,line[0]+': '),line[1]+' (see ');spanLinks(d,line[2]);
   d.append(')');box.append(d);});}
 else if(items.length){const ul=el('ul');items.forEach(t=>ul.append(el('li',null,S[t])));
   box.append(ul);}
 const cov=C.covered[seq];
 if(cov){const d=el('div','cov','summarized by ');cov.forEach((c,i)=>{if(i)d.append('; then ');
   const a=el('a',null,'#'+c[0]+' line '+(c[1]+1)+' ('+c[2]+')');a.href='#l-'+c[0]+'-'+c[1];
   d.append(a);});box.append(d);}
 if(seq in D.contexts){const b=el('button','show-context','what the model saw');
   b.dataset.seq=seq;b.addEventListener('click',()=>openContext(seq));box.append(b);}
 return box;}
async function render(p){p=Math.max(0,Math.min(p,P.length-1));if(p===page)return;
 const C=await chunk('p',p);page=p;tl.textContent='';
 C.entries.forEach(e=>tl.append(renderEntry(C,e)));
 document.getElementById('page-label').textContent='page '+(p+1)+' of '+P.length+
  ' (entries '+P[p][0]+'\\u2013'+P[p][1]+')';}
function pageOf(seq){let lo=0,hi=P.length-1;while(lo<hi){const mid=(lo+hi+1)>>1;
 if(P[mid][0]<=seq)lo=mid;else hi=mid-1;}return (P.length&&P[lo][0]<=seq&&seq<=P[lo][1])?lo:-1;}
async function show(target){
 const m=/^(e|l)-(\\d+)(?:-(\\d+))?$/.exec(target);if(!m)return;const p=pageOf(+m[2]);
 if(p<0)return;await render(p);
 if(hit)hit.classList.remove('hit');hit=document.getElementById(target);
 if(hit){hit.classList.add('hit');hit.scrollIntoView({block:'center'});}}
async function openContext(seq){const G=await chunk('c',D.contexts[seq]);const c=G.calls[seq];
 const S=G.strings;const box=document.getElementById('context');
 document.getElementById('context-title').textContent='Model call #'+seq+': the context of '+
  'entries 0\\u2013'+c.at+', '+c.tokens+' of '+c.budget+' tokens ('+c.counter+'), shape '+
  c.shape+'; digest '+c.digest+' reproduced';
 const ms=document.getElementById('context-messages');ms.textContent='';
 c.messages.forEach(m=>{const d=el('div','msg');d.append(el('div','role',S[m[0]]),
  el('pre',null,S[m[1]]));ms.append(d);});
 const miss=document.getElementById('context-missing');miss.textContent='';
 if(!c.missing.length)miss.append(el('p',null,'Every entry was shown verbatim.'));
 c.missing.forEach(r=>{const d=el('div');const st=STATUS[r[2]];const what=st==='summarized'?
  'summarized by #'+r[3]+' line '+(r[4]+1):st;
  d.append(link(r[0],r[0]===r[1]?'#'+r[0]:'#'+r[0]+'\\u2013'+r[1]),' '+what);
  miss.append(d);});
 box.classList.add('open');}
document.getElementById('context-close').addEventListener('click',()=>
 document.getElementById('context').classList.remove('open'));
document.getElementById('context-missing').addEventListener('click',ev=>{
 if(ev.target.tagName==='A')document.getElementById('context').classList.remove('open');});
document.getElementById('prev').addEventListener('click',()=>render(page-1));
document.getElementById('next').addEventListener('click',()=>render(page+1));
document.getElementById('goto').addEventListener('change',ev=>{location.hash='e-'+ev.target.value;});
window.addEventListener('hashchange',()=>show(location.hash.slice(1)));
document.addEventListener('click',ev=>{const a=ev.target.closest&&ev.target.closest('a');
 if(a&&a.hash&&a.hash===location.hash){ev.preventDefault();show(a.hash.slice(1));}});
(location.hash?show(location.hash.slice(1)):Promise.resolve()).then(()=>page<0?render(0):null)
 .then(()=>{document.body.dataset.ready='1';});
})();
"""


def render_report(data: ReportData) -> Iterator[str]:
    """The report as chunks of HTML, in order (module docstring for what it holds)."""
    # nothing unverified before the verdict (issue 29 item 8): a failing bundle's claimed
    # origin is not its title
    shown = data.verification.origin if data.verified else None
    title = f"registre audit report: {shown or _cut(data.bundle, _SHORT)}"
    yield (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n"
        f"<header><h1>{_e(title)}</h1>"
        f'<div class="muted">bundle {_e(data.bundle)} · report generated '
        f"{_e(format_timestamp(int(data.generated)))} by registre, offline</div></header><main>\n"
    )
    yield _verdict(data)
    yield _trust(data)
    yield _steps(data)
    if not data.verified:
        yield "</main></body></html>\n"
        return
    yield _plot(data)
    yield _chain_section(data)
    yield (
        '<section id="timeline"><h2>Timeline</h2>'
        '<nav class="pages"><button id="prev">&larr; previous</button>'
        '<span id="page-label"></span><button id="next">next &rarr;</button>'
        '<label>go to entry <input id="goto" type="number" min="0" style="width:7rem">'
        "</label></nav>"
        '<div id="timeline-entries"></div></section>\n'
        '<div id="context" role="dialog" aria-modal="true"><header>'
        '<span id="context-title" class="title"></span>'
        '<button id="context-close">close</button></header><div class="cols">'
        '<div><h3>Sent to the model</h3><div id="context-messages"></div></div>'
        "<div><h3>No longer seen verbatim</h3>"
        '<div id="context-missing"></div></div></div></div>\n'
    )
    yield (
        '<script type="application/json" id="report-data">'
        + json_script(timeline_data(data))
        + "</script>\n"
    )
    yield f"<script>{_SCRIPT}</script>\n</main></body></html>\n"


# --- static sections ---------------------------------------------------------------------------


def _verdict(data: ReportData) -> str:
    report = data.verification
    about = ""
    if report.origin is not None and data.verified:
        about = (
            f"{_e(report.origin)}: {_e(str(report.disclosure))} bundle, {report.entries} "
            f"entries, tree size {report.tree_size}, {report.checkpoints} checkpoint(s)"
        )
    elif report.origin is not None:
        about = f"the bundle claims origin {_unverified(report.origin)}"
    if data.verified:
        verdict = report.verdict()
        css = "ok" if verdict == "VERIFIED" else "warn"
        inactive = ""
        if report.inactive:
            inactive = "<br>Not current at the checkpoint: " + ", ".join(
                f"<code>{_e(item)}</code>" for item in report.inactive
            )
        return (
            f'<div id="verdict" class="verdict {css}"><b>{_e(verdict)}</b> &mdash; {about}. '
            f"Every check below passed against the keys pinned for this report.{inactive}</div>\n"
        )
    failure = report.failure.sentence() if report.failure is not None else "a step did not run"
    failure = _cut(failure, _LONG)
    return (
        f'<div id="verdict" class="verdict bad"><b>NOT VERIFIED</b> &mdash; {about}<br>'
        f"First failure: <code>{_e(failure)}</code><br>Nothing in this bundle is shown: "
        "none of it can be trusted as the record.</div>\n"
    )


_SHORT = 120
_LONG = 600


def _cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters not shown)"


def _unverified(text: str) -> str:
    """Text from a bundle that did not verify, escaped, cut short and marked as unverified."""
    return f'<code class="unverified">{_e(_cut(text, _SHORT))}</code> (unverified)'


def _trust(data: ReportData) -> str:
    rows = [f"<tr><th>log key</th><td><code>{_e(data.log_key)}</code></td></tr>"]
    if data.witnesses:
        keys = "<br>".join(f"<code>{_e(key)}</code>" for key in data.witnesses)
        rows.append(f"<tr><th>witnesses (quorum {data.quorum})</th><td>{keys}</td></tr>")
    else:
        rows.append("<tr><th>witnesses</th><td>none pinned: no cosignature was required</td></tr>")
    if data.newest_cosignature is not None:
        rows.append(
            "<tr><th>newest cosignature</th><td>"
            f"{_e(format_timestamp(data.newest_cosignature))} "
            f"({_e(str(data.cosignature_age()))} before this report)</td></tr>"
        )
    elif data.verified:
        rows.append("<tr><th>newest cosignature</th><td>none from a pinned witness</td></tr>")
    return f'<section id="trust"><h2>Checked against</h2><table>{"".join(rows)}</table></section>\n'


def _steps(data: ReportData) -> str:
    rows = []
    for step in data.verification.steps:
        # a failing bundle's steps may quote what it claims: each line cut short
        limit = None if data.verified else _LONG
        checked = "".join(f"<li>{_e(_maybe_cut(item, limit))}</li>" for item in step.checked)
        missing = "".join(
            f"<li>not checked: {_e(_maybe_cut(item, limit))}</li>" for item in step.not_checked
        )
        css = step.status.replace(" ", "-")
        rows.append(
            f'<tr><td>{step.number}</td><td>{_e(step.name)}</td><td class="{css}">'
            f"{_e(step.status)}</td><td><ul>{checked}{missing}</ul></td></tr>"
        )
    notes = "".join(
        f"<p class='muted'>note: {_e(_maybe_cut(n, None if data.verified else _LONG))}</p>"
        for n in data.verification.notes
    )
    return (
        '<section id="steps"><h2>Verification, step by step</h2><table><tr><th>#</th>'
        f"<th>step</th><th>status</th><th>what was checked</th></tr>{''.join(rows)}</table>"
        f"{notes}</section>\n"
    )


def _maybe_cut(text: str, limit: int | None) -> str:
    return text if limit is None else _cut(text, limit)


def _plot(data: ReportData) -> str:
    """Context tokens of every model call against its budget, compactions as markers."""
    calls = sorted(data.contexts.values(), key=lambda c: c.seq)
    compactions = [
        (e.seq, int(e.body["tokens_before"]), int(e.body["tokens_after"]))
        for e in data.entries
        if e.kind == CONTEXT_COMPACTION and e.body.get("summary")
    ]
    if not calls and not compactions:
        return (
            '<section id="plot"><h2>Context tokens</h2><p>No model call or compaction in this '
            "bundle.</p></section>\n"
        )
    last = max(1, len(data.entries) - 1)
    top = max(
        [c.budget for c in calls] + [b for _, b, _ in compactions] + [1],
    )
    width, height, left, bottom = 960, 260, 56, 28
    inner_w, inner_h = width - left - 12, height - bottom - 12

    def x(seq: int) -> float:
        return left + inner_w * seq / last

    def y(tokens: int) -> float:
        return 12 + inner_h * (1 - tokens / (top * 1.05))

    parts = [
        f'<svg viewBox="0 0 {width} {height}" width="100%" role="img" '
        'aria-label="context tokens against the budget">',
        f'<line x1="{left}" y1="{12 + inner_h}" x2="{width - 12}" y2="{12 + inner_h}" '
        'stroke="#888"/>',
        f'<text x="{left}" y="{height - 8}">entry 0</text>',
        f'<text x="{width - 12}" y="{height - 8}" text-anchor="end">entry {last}</text>',
        f'<text x="{left - 6}" y="{y(top) + 4:.1f}" text-anchor="end">{top}</text>',
        f'<text x="{left - 6}" y="{12 + inner_h}" text-anchor="end">0</text>',
    ]
    for seq, before, after in compactions:
        parts.append(
            f'<line x1="{x(seq):.1f}" y1="12" x2="{x(seq):.1f}" y2="{12 + inner_h}" '
            f'stroke="#5959c9" stroke-dasharray="3,3"><title>compaction #{seq}: {before} '
            f"&#8594; {after} tokens</title></line>"
        )
    if calls:
        budget = " ".join(f"{x(c.seq):.1f},{y(c.budget):.1f}" for c in calls)
        used = " ".join(f"{x(c.seq):.1f},{y(c.tokens):.1f}" for c in calls)
        for points, colour in ((budget, "#b00020"), (used, "#11692c")):
            parts.append(
                f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.5"/>'
            )
    legend = (
        '<p class="muted"><span style="color:#11692c">&#9632;</span> tokens sent at each model '
        'call (rebuilt) · <span style="color:#b00020">&#9632;</span> budget · '
        '<span style="color:#5959c9">&#9482;</span> compaction</p>'
    )
    if not calls:
        legend += "<p class='muted'>No model call could be rebuilt from this bundle.</p>"
    return (
        f'<section id="plot"><h2>Context tokens against the budget</h2>{"".join(parts)}</svg>'
        f"{legend}</section>\n"
    )


def _chain_section(data: ReportData) -> str:
    if not data.chains:
        return '<section id="chains"><h2>Final conclusions</h2><p>None.</p></section>\n'
    blocks = []
    for chain in data.chains:
        head = chain.conclusion
        items = "".join(_chain_link(link) for link in chain.links)
        where = f" ({_seq_link(head['seq'])})" if head.get("seq") is not None else ""
        blocks.append(
            f'<div class="chain" id="chain-{_e(head["id"])}"><b>{_e(head["id"])}</b>'
            f"{_status_badges(head)}{where}: {_e(head['text'])}<ul>{items}</ul></div>"
        )
    return (
        '<section id="chains"><h2>Final conclusions and their chains</h2>'
        "<p class='muted'>Status as of the bundle's checkpoint: conclusion &rarr; evidence "
        "&rarr; source references &rarr; the read entries and their passage hashes.</p>"
        f"{''.join(blocks)}</section>\n"
    )


def _chain_link(link: dict[str, Any]) -> str:
    """One cited id as a list item: its status, text, references and what it cites."""
    refs = "".join(
        f"<li>{_e(ref['ref'])}: {_e(str(ref['source']))}, {_e(str(ref['location']))}, "
        f"passage SHA-256 <code>{_e(str(ref['sha256']))}</code>"
        + (
            f", read at {_seq_link(ref['read_seq'])}"
            if ref["read_seq"] is not None
            else " (the read entry is not in this bundle)"
        )
        + "</li>"
        for ref in link["refs"]
    )
    below = "".join(_chain_link(inner) for inner in link.get("links", ()))
    where = f" ({_seq_link(link['seq'])})" if link.get("seq") is not None else ""
    return (
        f"<li><b>{_e(link['id'])}</b>{_status_badges(link)}{where}: {_e(link['text'])}"
        f"<ul>{refs}{below}</ul></li>"
    )


def _status_badges(item: dict[str, Any]) -> str:
    status = str(item.get("status"))
    badges = []
    if status == "active":
        badges.append('<span class="badge ok">active</span>')
    else:
        successor = item.get("successor")
        by = f" by {_e(str(successor))}" if successor else ""
        badges.append(f'<span class="badge bad">{_e(status)}{by}</span>')
    if item.get("stale"):
        badges.append('<span class="badge bad">stale: evidence it relies on changed</span>')
    return "".join(badges)


def _seq_link(seq: int) -> str:
    return f'<a href="#e-{seq}">#{seq}</a>'


# --- the JSON island ---------------------------------------------------------------------------


class _Strings:
    """Texts stored once per chunk: a page's entries, or a group of model calls whose
    contexts share most of their messages."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str | None) -> int | None:
        if text is None:
            return None
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.items)
            self.items.append(text)
        return found


CONTEXT_GROUP: Final = 40
"""Model calls whose contexts are compressed together (consecutive calls share most text)."""

_STATUS_CODES: Final = {"summarized": 0, "stubbed": 1, "folded": 2}


def _pack(value: object) -> str:
    """``value`` as JSON, raw-deflated and base64-encoded (the browser's
    ``DecompressionStream('deflate-raw')`` reads it back)."""
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(packer.compress(raw) + packer.flush()).decode("ascii")


def unpack(text: str) -> Any:
    """The inverse of the packing the report uses for its chunks (for tests and tools)."""
    return json.loads(zlib.decompress(base64.b64decode(text), -15).decode("utf-8"))


def timeline_data(data: ReportData) -> dict[str, Any]:
    """The JSON island: a small index (page ranges, which chunk holds each call's context)
    and the compressed chunks, each decoded only when the reader opens it."""
    covered: dict[int, list[list[Any]]] = {}
    lines: dict[int, list[list[Any]]] = {}
    for entry in data.entries:
        if entry.kind == CONTEXT_COMPACTION:
            lines[entry.seq] = _compaction(entry, covered)
    pages: list[list[int]] = []
    page_data: list[str] = []
    for start in range(0, len(data.entries), PAGE_SIZE):
        part = data.entries[start : start + PAGE_SIZE]
        strings = _Strings()
        rows = []
        for entry in part:
            block = describe(entry)
            rows.append(
                [
                    entry.seq,
                    block.style,
                    strings(block.title),
                    strings(block.meta),
                    strings(block.text) if block.text else None,
                    strings(block.code),
                    [strings(item) for item in block.items],
                ]
            )
        seqs = [entry.seq for entry in part]
        pages.append([seqs[0], seqs[-1], len(seqs)])
        page_data.append(
            _pack(
                {
                    "strings": strings.items,
                    "entries": rows,
                    "compactions": {s: lines[s] for s in seqs if s in lines},
                    "covered": {s: covered[s] for s in seqs if s in covered},
                }
            )
        )
    contexts: dict[int, int] = {}
    context_data: list[str] = []
    calls = sorted(data.contexts.values(), key=lambda call: call.seq)
    for start in range(0, len(calls), CONTEXT_GROUP):
        strings = _Strings()
        group: dict[int, Any] = {}
        for call in calls[start : start + CONTEXT_GROUP]:
            contexts[call.seq] = len(context_data)
            group[call.seq] = {
                "at": call.at,
                "budget": call.budget,
                "tokens": call.tokens,
                "counter": call.counter,
                "shape": call.shape,
                "digest": call.digest,
                "messages": [[strings(role), strings(text)] for role, text in call.messages],
                "missing": [
                    [
                        run["from"],
                        run["to"],
                        _STATUS_CODES[run["status"]],
                        run.get("compaction"),
                        run.get("line"),
                    ]
                    for run in call.not_verbatim
                ],
            }
        context_data.append(_pack({"strings": strings.items, "calls": group}))
    return {
        "page_size": PAGE_SIZE,
        "statuses": list(_STATUS_CODES),
        "pages": pages,
        "page_data": page_data,
        "contexts": contexts,
        "context_data": context_data,
    }


def _compaction(entry: Entry, covered: dict[int, list[list[Any]]]) -> list[list[Any]]:
    """The compaction's lines as ``[section, text, pointers]``; marks what each line covers."""
    lines = []
    for number, line in enumerate(entry.body.get("summary", [])):
        pointers = [list(span) for span in line["pointers"]]
        lines.append([line["section"], line["text"], pointers])
        for first, last in pointers:
            for seq in range(first, last + 1):
                covered.setdefault(seq, []).append([entry.seq, number, line["section"]])
    return lines


def _e(text: str) -> str:
    return html.escape(text, quote=True)
