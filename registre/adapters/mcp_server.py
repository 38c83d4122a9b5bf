"""An MCP server over a registre ledger (the official ``mcp`` SDK, ``registre[mcp]``).

:func:`build_server` gives an ``mcp.server.lowlevel.Server`` whose tools and resources are
those of :mod:`registre.adapters.mcp_tools`; :func:`serve_stdio` and :func:`serve_http` run it
(``registre mcp serve`` and ``registre mcp serve --listen 127.0.0.1:PORT``).

Contract, for every tool call:

* the arguments are checked against the tool's strict schema before anything runs; a bad
  call is an MCP tool error (``isError: true``) whose one text block is one plain sentence,
  and the ledger is left exactly as it was;
* a refusal by registre's rules is a tool error with the rule's sentence; a lifecycle
  refusal is recorded on the ledger (the sentence names its entry), any other leaves the
  ledger unchanged;
* a result is one text block holding the result as JSON, and the same data as
  ``structuredContent``.

Resources are served from URI templates (``registre://{thread}/entry/{seq}``,
``registre://{thread}/context``); a server started with a default thread also lists that
thread's context. Ledger calls run on the event loop's thread, one at a time: each is a short
database transaction.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from typing import Any, Final

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from registre.adapters.mcp_tools import (
    RESOURCE_TEMPLATES,
    TOOLS,
    call_tool,
    error_sentence,
    read_resource,
)
from registre.errors import RegistreError
from registre.ledger import Ledger

__all__ = ["LOOPBACK_HOSTS", "SERVER_NAME", "build_server", "serve_http", "serve_stdio"]

SERVER_NAME: Final = "registre"
LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "::1")
_INSTRUCTIONS: Final = (
    "registre is a verifiable memory: every record_* call appends a signed entry to an "
    "append-only Merkle ledger. Call `context` with a budget (and a model name to record the "
    "call) for what to send the model; `expand` an entry behind a summary pointer to get it "
    "with its inclusion proof."
)


def _text_result(data: dict[str, Any]) -> types.CallToolResult:
    text = json.dumps(data, ensure_ascii=False, sort_keys=True)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=data
    )


def _error_result(sentence: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=sentence)], is_error=True
    )


def build_server(ledger: Ledger, thread: str | None = None) -> Server[Any]:
    """The MCP server over ``ledger``; ``thread`` is the default thread of every tool (module
    docstring). The ledger stays the caller's to close."""

    async def list_tools(
        _ctx: Any, _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=tool.name, description=tool.description, input_schema=tool.schema)
                for tool in TOOLS
            ]
        )

    async def on_call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            return _text_result(call_tool(ledger, params.name, params.arguments or {}, thread))
        except RegistreError as exc:
            return _error_result(error_sentence(exc))

    async def list_templates(
        _ctx: Any, _params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=uri, name=name, description=text, mime_type="application/json"
                )
                for uri, name, text in RESOURCE_TEMPLATES
            ]
        )

    async def list_resources(
        _ctx: Any, _params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        listed = []
        if thread is not None:
            listed.append(
                types.Resource(
                    uri=f"registre://{thread}/context",
                    name=f"{thread} context",
                    mime_type="application/json",
                )
            )
        return types.ListResourcesResult(resources=listed)

    async def on_read_resource(
        _ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text = read_resource(ledger, uri)
        except RegistreError as exc:
            raise MCPError(types.INVALID_PARAMS, error_sentence(exc)) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
        )

    return Server(
        SERVER_NAME,
        version=version("registre"),
        instructions=_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=on_call_tool,
        on_list_resource_templates=list_templates,
        on_list_resources=list_resources,
        on_read_resource=on_read_resource,
    )


async def serve_stdio(ledger: Ledger, thread: str | None = None) -> None:
    """Serve :func:`build_server` over this process's stdin and stdout until stdin closes."""
    server = build_server(ledger, thread)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(ledger: Ledger, host: str, port: int, thread: str | None = None) -> None:
    """Serve :func:`build_server` over streamable HTTP at ``http://HOST:PORT/mcp``.

    ``host`` must be a loopback name (:data:`LOOPBACK_HOSTS`): the server has no
    authentication, so it never listens where another machine could reach it (ValueError)."""
    if host not in LOOPBACK_HOSTS:
        raise ValueError(f"refusing to listen on {host}: only loopback addresses are served")
    import uvicorn

    app = build_server(ledger, thread).streamable_http_app(host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()
