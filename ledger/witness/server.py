"""The witness's HTTP server: C2SP ``tlog-witness`` ``POST /add-checkpoint`` on aiohttp.

* One route, ``POST /add-checkpoint``; other paths are 404, other methods 405.
* Bodies above :data:`~registre.ledger.witness.protocol.MAX_REQUEST_BYTES` are refused with 413
  before they are read in full.
* The checks, the cosignature and the SQLite transaction run on a small thread pool
  (:meth:`Witness.handle <ledger.witness.witness.Witness.handle>`), so the event loop keeps
  accepting requests while a commit waits for the disk; atomicity comes from the database
  (:meth:`~registre.ledger.witness.state.WitnessState.advance`), not from the loop.
* One log line per request: method, path, origin, status, milliseconds.
* :func:`serve` binds the socket first (port 0 picks a free port), announces the address,
  and runs until SIGTERM or SIGINT, then stops accepting, lets running requests finish
  (their transactions commit or roll back whole), closes the state and returns.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from registre.ledger.witness.protocol import ADD_CHECKPOINT_PATH, MAX_REQUEST_BYTES
from registre.ledger.witness.witness import Witness

__all__ = ["ACCESS_LOGGER", "RequestLogger", "create_app", "parse_listen", "serve"]

ACCESS_LOGGER = logging.getLogger("registre.witness")
_WITNESS: web.AppKey[Witness] = web.AppKey("witness", Witness)
_POOL: web.AppKey[ThreadPoolExecutor] = web.AppKey("pool", ThreadPoolExecutor)
# Where the handler leaves the origin for the request log (RequestKey on aiohttp >= 3.12).
_ORIGIN: Any = web.RequestKey("origin", str) if hasattr(web, "RequestKey") else "registre_origin"


class RequestLogger(AbstractAccessLogger):
    """``POST /add-checkpoint origin=ORIGIN status=200 ms=1.8``, one line per request."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        origin = request.get(_ORIGIN) or "-"
        self.logger.info(
            "%s %s origin=%s status=%d ms=%.1f",
            request.method,
            request.path,
            origin,
            response.status,
            time * 1000,
        )


async def _add_checkpoint(request: web.Request) -> web.Response:
    if request.content_length is not None and request.content_length > MAX_REQUEST_BYTES:
        return _too_large(request.content_length)
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        return _too_large(None)
    witness = request.app[_WITNESS]
    loop = asyncio.get_running_loop()
    answer = await loop.run_in_executor(request.app[_POOL], witness.handle, body)
    request[_ORIGIN] = answer.origin
    return web.Response(
        status=answer.status, body=answer.body, headers={"Content-Type": answer.content_type}
    )


def _too_large(length: int | None) -> web.Response:
    size = f"{length} bytes" if length is not None else "too large"
    return web.Response(
        status=413,
        text=f"request body {size}; this witness reads at most {MAX_REQUEST_BYTES} bytes\n",
    )


def create_app(witness: Witness, *, workers: int = 4) -> web.Application:
    """The aiohttp application serving ``witness``. Its thread pool starts with the app and
    is shut down (waiting for running steps) when the app is cleaned up."""
    app = web.Application(client_max_size=MAX_REQUEST_BYTES)
    app[_WITNESS] = witness
    app.router.add_post(ADD_CHECKPOINT_PATH, _add_checkpoint)

    async def start_pool(app: web.Application) -> None:
        app[_POOL] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="witness")

    async def stop_pool(app: web.Application) -> None:
        app[_POOL].shutdown(wait=True)

    app.on_startup.append(start_pool)
    app.on_cleanup.append(stop_pool)
    return app


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> (host, port); ValueError if malformed."""
    host, colon, port_text = value.rpartition(":")
    if not colon or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"listen address {value!r} must be HOST:PORT, e.g. 127.0.0.1:7380")
    return host.removeprefix("[").removesuffix("]"), int(port_text)


def serve(
    witness: Witness,
    host: str,
    port: int,
    *,
    announce: Callable[[str], None],
    workers: int = 4,
    shutdown_timeout: float = 10.0,
) -> None:
    """Serve until SIGTERM or SIGINT, then shut down cleanly and return.

    The socket is bound before ``announce`` is called with ``http://HOST:PORT`` (the port
    actually bound, so port 0 works). Raises OSError if the address cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family, backlog=256)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    announce(f"http://{shown}:{bound}")
    web.run_app(
        create_app(witness, workers=workers),
        sock=sock,
        print=None,
        access_log=ACCESS_LOGGER,
        access_log_class=RequestLogger,
        handle_signals=True,
        shutdown_timeout=shutdown_timeout,
    )
