"""The OpenAI and Anthropic summarizers, with the real SDK clients, over real HTTP to a local
server that speaks the provider's API (:mod:`tests.summarizers.provider_server`), on a SQLite
ledger: a good reply is recorded under the summarizer's name; a reply that invents a quote,
points outside the fold, is cut short, or a server error, leaves the ledger as it was."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from registre.attest.notes import Signer
from registre.context import (
    InventedQuoteError,
    Summarizer,
    SummaryPointerOutsideRangeError,
)
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.summarizers import (
    PROMPT_VERSION,
    SYSTEM_PROMPT,
    AnthropicSummarizer,
    OpenAISummarizer,
    UnusableReplyError,
)
from tests.ledger.context_helpers import SMALL, opened, step
from tests.ledger.helpers import dump
from tests.summarizers.provider_server import ProviderServer, folded_range

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

PROVIDERS = ("openai", "anthropic")
MODELS = {"openai": "gpt-4.1-mini", "anthropic": "claude-sonnet-4-5"}
FINDING = "the spec lookup misses namespace packages"
_STEP = re.compile(r"\[seq (\d+) \| turn \| agent \| role assistant\]\n(Step \d+): " + FINDING)


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    running = ProviderServer().start()
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    opened_ledger = Ledger.open(
        f"sqlite:///{tmp_path / 'registre.db'}",
        Signer.from_seed("registre.test/summarizers", bytes(range(32))),
    )
    try:
        yield opened_ledger
    finally:
        opened_ledger.close()


@pytest.fixture
def thread(ledger: Ledger) -> Thread:
    """A thread with a question, a pinned task parameter and ten loop steps: a compaction is
    due under ``SMALL``."""
    created = opened(ledger.create_thread("t1"))
    for number in range(10):
        step(created, number)
    return created


def summarizer(provider: str, server: ProviderServer) -> Summarizer:
    """The provider's summarizer over a real SDK client pointed at the local server (no
    retries: a server error reaches the test at once)."""
    if provider == "openai":
        client = openai.OpenAI(base_url=server.openai_url, api_key="test", max_retries=0)
        return OpenAISummarizer(client, model=MODELS[provider])
    client = anthropic.Anthropic(base_url=server.anthropic_url, api_key="test", max_retries=0)
    return AnthropicSummarizer(client, model=MODELS[provider], max_tokens=1024)


def good_reply(prompt: str) -> str:
    """A reply that follows the format: a specific line quoting a folded step verbatim, and a
    line for the tool outputs of the whole fold."""
    first, last = folded_range(prompt)
    found = _STEP.search(prompt)
    assert found, "the prompt lists the folded assistant turns"
    seq, label = found.groups()
    return (
        f"findings | {seq} | {label} found “{FINDING}”\n"
        f"tool_outputs | {first}-{last} | ls listed the module_N.py files of each step\n"
    )


def user_message(provider: str, body: dict[str, Any]) -> str:
    if provider == "openai":
        return str(body["messages"][1]["content"])
    return str(body["messages"][0]["content"])


def assert_request(provider: str, server: ProviderServer, thread: Thread) -> None:
    """The request that made the recorded summary: the model, the system prompt, the user's
    message with the folded items. The first compaction of a thread that pins its task asks
    twice (a dry run before the pin is written, then the compaction), so at most two."""
    assert 1 <= len(server.received) <= 2
    received = server.received[-1]
    body = received.body
    assert body["model"] == MODELS[provider]
    if provider == "openai":
        assert received.path == "/v1/chat/completions"
        assert received.headers["authorization"] == "Bearer test"
        assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
    else:
        assert received.path == "/v1/messages"
        # the API key, as x-api-key or (newer SDKs) as a bearer token
        keys = (received.headers.get("x-api-key"), received.headers.get("authorization"))
        assert keys in (("test", None), (None, "Bearer test"))
        assert body["system"] == SYSTEM_PROMPT
        assert body["max_tokens"] == 1024
        assert [m["role"] for m in body["messages"]] == ["user"]
    prompt = user_message(provider, body)
    first, last = folded_range(prompt)
    assert f"Every line's SEQS must lie within {first}-{last}." in prompt
    assert re.search(r"Token allowance: the whole summary must fit in \d+ tokens\.", prompt)
    shown = 0
    for entry in thread.entries(first, last + 1):
        if entry.kind not in ("turn", "tool.call", "tool.result"):
            continue
        assert f"[seq {entry.seq} | {entry.kind} | {entry.actor}" in prompt
        text = entry.body.get("text", entry.body.get("content"))
        if isinstance(text, str):
            assert text.rstrip() in prompt
        shown += 1
    assert shown >= 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_good_reply_is_recorded_under_the_summarizers_name(
    provider: str, server: ProviderServer, ledger: Ledger, thread: Thread
) -> None:
    server.reply = good_reply
    before = thread.head().size
    entry = thread.compact(policy=SMALL, summarizer=summarizer(provider, server))
    assert entry is not None and entry.kind == "context.compaction"
    assert entry.seq == thread.head().size - 1
    # only the automatic task pin (the first user turn) may come before it
    assert [thread.entry(seq).kind for seq in range(before, entry.seq)] in ([], ["context.pin"])
    assert entry.body["summarizer"] == {
        "name": f"{provider}:{MODELS[provider]}",
        "version": PROMPT_VERSION,
    }
    lines = entry.body["summary"]
    assert [line["section"] for line in lines] == ["findings", "tool_outputs"]
    assert f"“{FINDING}”" in lines[0]["text"]
    assert_request(provider, server, thread)
    verify_database(ledger, thread=thread.id)
    shown = "\n".join(m.content for m in thread.project(budget=SMALL.budget_tokens).messages)
    assert f"found “{FINDING}”" in shown


def invented_quote(prompt: str) -> str:
    first, last = folded_range(prompt)
    return f"decisions | {first}-{last} | the user said “delete the failing tests”\n"


def outside_the_fold(prompt: str) -> str:
    first, last = folded_range(prompt)
    return (
        f"findings | {first} | the question is about astroid\n"
        f"findings | {last + 1}-{last + 40} | later steps found the fix\n"
    )


@pytest.mark.parametrize(
    ("reply", "refusal"),
    [(invented_quote, InventedQuoteError), (outside_the_fold, SummaryPointerOutsideRangeError)],
    ids=["invented quote", "outside the fold"],
)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_bad_reply_is_refused_and_nothing_is_written(
    provider: str,
    server: ProviderServer,
    ledger: Ledger,
    thread: Thread,
    reply: Any,
    refusal: type[Exception],
) -> None:
    server.reply = reply
    head, tables = thread.head(), dump(ledger.engine)
    with pytest.raises(refusal):
        thread.compact(policy=SMALL, summarizer=summarizer(provider, server))
    assert thread.head() == head
    assert dump(ledger.engine) == tables
    assert_request(provider, server, thread)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_server_error_propagates_and_nothing_is_written(
    provider: str, server: ProviderServer, ledger: Ledger, thread: Thread
) -> None:
    server.status = 500
    sdk = openai if provider == "openai" else anthropic
    head, tables = thread.head(), dump(ledger.engine)
    with pytest.raises(sdk.InternalServerError) as failed:
        thread.compact(policy=SMALL, summarizer=summarizer(provider, server))
    assert failed.value.status_code == 500
    assert thread.head() == head
    assert dump(ledger.engine) == tables
    assert_request(provider, server, thread)


@pytest.mark.parametrize(("provider", "stop"), [("openai", "length"), ("anthropic", "max_tokens")])
def test_a_reply_cut_at_its_token_limit_is_refused(
    provider: str, stop: str, server: ProviderServer, ledger: Ledger, thread: Thread
) -> None:
    server.reply = good_reply
    server.stop = stop
    head, tables = thread.head(), dump(ledger.engine)
    with pytest.raises(UnusableReplyError, match="cut") as refused:
        thread.compact(policy=SMALL, summarizer=summarizer(provider, server))
    assert refused.value.hint is not None
    assert thread.head() == head
    assert dump(ledger.engine) == tables


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_empty_reply_is_refused(
    provider: str, server: ProviderServer, ledger: Ledger, thread: Thread
) -> None:
    server.reply = lambda _prompt: "  \n"
    head = thread.head()
    with pytest.raises(UnusableReplyError, match="no summary line"):
        thread.compact(policy=SMALL, summarizer=summarizer(provider, server))
    assert thread.head() == head


def test_importing_the_summarizers_needs_neither_sdk() -> None:
    code = (
        "import sys; sys.modules['openai'] = sys.modules['anthropic'] = None\n"
        "import registre.summarizers as s\n"
        "print(s.OpenAISummarizer(object(), 'm').name, s.AnthropicSummarizer(object(), 'm').name)"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["openai:m", "anthropic:m"]
