"""registre.adapters: registre inside the agent frameworks people already run.

Each adapter is a thin layer over the public :mod:`registre.ledger` API, in its own module,
with its own optional extra, so the core install never imports a framework:

* :mod:`registre.adapters.mcp_server` (``registre[mcp]``): an MCP server exposing a thread's
  record, working context, lifecycle and proofs as tools and resources
  (``registre mcp serve``); its tools are defined, framework-free, in
  :mod:`registre.adapters.mcp_tools`;
* :mod:`registre.adapters.openai_agents` (``registre[openai-agents]``): an OpenAI Agents SDK
  ``Session`` whose items are ledger entries, and a ``call_model_input_filter`` that records
  the digest of what each model call is sent;
* :mod:`registre.adapters.claude` (``registre[claude]``): a Claude Agent SDK ``SessionStore``
  mirroring transcripts as signed ``transcript.entry`` lines, Claude Code's compactions as
  ``compaction.imported`` events, and a ``PreCompact`` hook.
* :mod:`registre.adapters.langgraph` (``registre[langgraph]``): a LangGraph checkpointer
  (``BaseCheckpointSaver``, sync and async) whose checkpoints, writes, deletions and copies
  are signed records (``specs/langgraph.md``), folded by
  :mod:`registre.adapters.langgraph_records`.
* :mod:`registre.adapters.langgraph_store` (``registre[langgraph]``): a LangGraph
  ``BaseStore`` for long-term memory whose puts and deletes are signed records.
* :mod:`registre.adapters.langchain` (``registre[langchain]``): a LangChain v1
  ``AgentMiddleware`` that sends the model registre's projection, records a ``model.call``
  digesting exactly those messages, and records responses, tool calls and results.
* :mod:`registre.adapters.pydantic_ai` (``registre[pydantic-ai]``): a Pydantic AI capability
  whose ``wrap_model_request`` sends registre's projection (instructions included), records
  the ``model.call`` and the step's input and response.

Nothing in :mod:`registre.ledger` (or below it) imports this package.
"""

from __future__ import annotations

__all__: list[str] = []
