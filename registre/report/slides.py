"""The thread as a short presentation: one self-contained HTML deck.

``registre transcript THREAD --format slides``. The deck is the investigation told by its
own record:

1. the task (the first user turn) and the pins live at the end of the thread;
2. one slide per compaction with a summary, oldest first: the investigation's chapters
   (the range folded and each summary line with the entries it points at);
3. one slide per final conclusion with its chain (conclusion, then each cited evidence or
   compute with its status, then the references and the read entries), stale or inactive
   links marked.

Arrow keys, Page Up/Down, space or a click move between slides; printing gives one slide per
page. No network at view time; every text is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

from registre.context.model import format_spans
from registre.kinds import CONTEXT_COMPACTION, TURN
from registre.report.gathering import conclusion_chains

if TYPE_CHECKING:
    from registre.ledger import Thread

__all__ = ["render_slides"]

_CSS: Final = """
html,body{margin:0;height:100%;background:#1f2430;font-family:system-ui,sans-serif}
.slide{display:none;box-sizing:border-box;width:min(100vw,177vh);height:min(56.25vw,100vh);
margin:auto;background:#fff;padding:4vh 5vw;overflow:auto;position:relative}
.slide.on{display:block}h1{font-size:2.1em;margin:.2em 0 .5em}h2{font-size:1.6em;margin:0 0 .5em}
p,li{font-size:1.15em;line-height:1.4}.muted{color:#5b6470;font-size:.9em}
.n{position:absolute;bottom:2vh;right:3vw;color:#888}.bad{color:#b00020;font-weight:600}
.ok{color:#11692c;font-weight:600}ul ul li{font-size:1em}
@media print{body{background:#fff}.slide{display:block;page-break-after:always;
width:100%;height:auto}}
"""

_SCRIPT: Final = """
(function(){const s=[...document.querySelectorAll('.slide')];let i=0;
function go(n){s[i].classList.remove('on');i=Math.max(0,Math.min(s.length-1,n));
s[i].classList.add('on');location.hash='s'+(i+1);}
const h=/^#s(\\d+)$/.exec(location.hash);go(h?+h[1]-1:0);
document.addEventListener('keydown',e=>{if(['ArrowRight','PageDown',' '].includes(e.key))
go(i+1);if(['ArrowLeft','PageUp'].includes(e.key))go(i-1);});
document.addEventListener('click',e=>{if(!e.target.closest('a'))go(i+1);});})();
"""


def render_slides(thread: Thread) -> Iterator[str]:
    """The deck of ``thread`` as chunks of HTML (module docstring)."""
    entries = list(thread.entries())
    task = next((e for e in entries if e.kind == TURN and e.body.get("role") == "user"), None)
    pins = thread.pins(live=True)
    slides: list[str] = []
    task_text = _e(str(task.body["text"])) if task is not None else "No user turn recorded."
    pin_items = "".join(
        f"<li><b>{_e(pin.kind)}</b> ({_e(pin.id)}, from #{pin.source_seq}): {_e(pin.text)}</li>"
        for pin in pins
    )
    slides.append(
        f"<h1>{_e(thread.id)}</h1><p>{task_text}</p>"
        + (f"<h2>Pinned</h2><ul>{pin_items}</ul>" if pins else "")
        + f"<p class='muted'>{_e(thread.origin)} · {len(entries)} entries</p>"
    )
    chapters = [e for e in entries if e.kind == CONTEXT_COMPACTION and e.body.get("summary")]
    for number, entry in enumerate(chapters, start=1):
        folded = entry.body.get("folded", {})
        lines = "".join(
            f"<li><b>{_e(line['section'])}</b>: {_e(line['text'])} <span class='muted'>(seq "
            f"{_e(format_spans(tuple(tuple(p) for p in line['pointers'])))})</span></li>"
            for line in entry.body["summary"]
        )
        slides.append(
            f"<h2>Chapter {number}: entries {folded.get('from')}&ndash;{folded.get('to')}</h2>"
            f"<ul>{lines}</ul><p class='muted'>compaction #{entry.seq} · "
            f"{entry.body['tokens_before']} &rarr; {entry.body['tokens_after']} tokens</p>"
        )
    for chain in conclusion_chains(entries):
        head = chain.conclusion
        links = "".join(_link(link) for link in chain.links)
        slides.append(
            f"<h2>Conclusion {_e(head['id'])} {_status(head)}</h2><p>{_e(head['text'])}</p>"
            f"<ul>{links}</ul>"
        )
    yield (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(thread.id)}</title><style>{_CSS}</style></head><body>\n"
    )
    for number, slide in enumerate(slides, start=1):
        yield (
            f'<section class="slide" id="s{number}">{slide}'
            f'<div class="n">{number} / {len(slides)}</div></section>\n'
        )
    yield f"<script>{_SCRIPT}</script></body></html>\n"


def _link(link: dict[str, Any]) -> str:
    refs = "".join(
        f"<li>{_e(ref['ref'])}: {_e(str(ref['source']))}, {_e(str(ref['location']))}"
        + (f" (read at #{ref['read_seq']})" if ref["read_seq"] is not None else "")
        + "</li>"
        for ref in link["refs"]
    )
    below = "".join(_link(inner) for inner in link.get("links", ()))
    return (
        f"<li><b>{_e(link['id'])}</b> {_status(link)}: {_e(link['text'])}"
        f"<ul>{refs}{below}</ul></li>"
    )


def _status(item: dict[str, Any]) -> str:
    if item.get("stale"):
        return "<span class='bad'>stale</span>"
    if item.get("status") != "active":
        return f"<span class='bad'>{_e(str(item.get('status')))}</span>"
    return "<span class='ok'>active</span>"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
