"""The witness's HTTP server (aiohttp): C2SP ``tlog-witness`` over HTTP/1.1.

Routes (no others; see specs/witness.md section 2):

* ``POST /add-checkpoint`` -- :meth:`Witness.handle <registre.witness.witness.Witness.handle>`;
* ``GET /<hex sha256(origin)>/checkpoint`` (and HEAD) -- the monitoring view,
  :meth:`Witness.monitor <registre.witness.witness.Witness.monitor>`;
* any other path is 404, another method on a known path 405.

What the server guarantees, whatever a client sends:

* **Bounded reads.** A request's headers and body must arrive within
  :data:`READ_TIMEOUT` seconds of its first byte, else it is answered 408 and the connection
  closed; an idle keep-alive connection is closed after :data:`IDLE_TIMEOUT`. Bodies above
  :data:`~registre.witness.protocol.MAX_REQUEST_BYTES` are refused with 413 before
  they are read in full.
* **Bounded connections** (issue 29 item 13). At most :data:`MAX_CONNECTIONS` are open at
  once: one more is closed as soon as it is accepted, before anything is read. A connection
  that sends no byte within the read timeout of being accepted is closed (aiohttp's own
  timer would hold it for the idle timeout). The server's own warnings (refused or silent
  connections, failed accepts when file descriptors run out) go through a rate limit: at most
  :data:`LOG_BURST` lines per :data:`LOG_WINDOW` seconds, then one line counting the rest.
* **Limits with their own status.** A request line longer than :data:`MAX_REQUEST_LINE`
  bytes is 414; a header field above :data:`MAX_HEADER_FIELD` bytes or more than
  :data:`MAX_HEADERS` header lines is 431; any other malformed HTTP is 400 with one line of
  text. These close the connection.
* **One log line per request** on :data:`ACCESS_LOGGER`, and nothing else:
  ``METHOD PATH origin=ORIGIN status=NNN ms=1.8``, with `` reason=...`` when the request did
  not end normally (malformed HTTP, a read timeout, the client closing the connection before
  the request was complete, a bug). Requests cut off before their headers were complete
  get a line too (``- -`` for method and path, ``status=-`` when nothing was answered). No
  traceback is logged (a bug's traceback goes to :data:`SERVER_LOGGER` at DEBUG level).
* The checks, the cosignature and the SQLite transaction run on a small thread pool, so the
  event loop keeps accepting while a commit waits for the disk; atomicity comes from the
  database (:meth:`~registre.witness.state.WitnessState.advance`).

:func:`serve` binds the socket first (port 0 picks a free port), announces the address, and
runs until SIGTERM or SIGINT, then stops accepting, lets running requests finish (their
transactions commit or roll back whole) and returns. :class:`WitnessServer` is the same
server for callers that run their own event loop (tests).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.http_exceptions import BadHttpMessage, HttpProcessingError, LineTooLong
from aiohttp.web_protocol import RequestHandler, RequestPayloadError

from registre.witness.protocol import (
    ADD_CHECKPOINT_PATH,
    MAX_REQUEST_BYTES,
    MONITOR_SUFFIX,
    parse_monitor_path,
)
from registre.witness.witness import Witness, WitnessResponse

__all__ = [
    "ACCESS_LOGGER",
    "IDLE_TIMEOUT",
    "LOG_BURST",
    "LOG_WINDOW",
    "MAX_CONNECTIONS",
    "MAX_HEADERS",
    "MAX_HEADER_FIELD",
    "MAX_REQUEST_LINE",
    "READ_TIMEOUT",
    "SERVER_LOGGER",
    "RequestLogger",
    "WitnessServer",
    "parse_listen",
    "serve",
]

ACCESS_LOGGER = logging.getLogger("registre.witness")
SERVER_LOGGER = logging.getLogger("registre.witness.server")
READ_TIMEOUT: Final = 10.0
"""Seconds from a request's first byte until its headers and body must all have arrived."""
MAX_CONNECTIONS: Final = 512
"""Connections open at once; one more is closed when accepted."""
LOG_BURST: Final = 10
LOG_WINDOW: Final = 10.0
"""At most :data:`LOG_BURST` server warnings per :data:`LOG_WINDOW` seconds."""
IDLE_TIMEOUT: Final = 75.0
"""Seconds an idle keep-alive connection stays open."""
MAX_REQUEST_LINE: Final = 4096
"""Longest request line (method, target, version) read; longer is 414."""
MAX_HEADER_FIELD: Final = 8190
"""Longest header field (name and value) read; longer is 431."""
MAX_HEADERS: Final = 64
"""Most header lines read; more is 431."""

_TEXT = "text/plain; charset=utf-8"
_LOG_FIELD_CHARS = 200
# Where handlers leave the origin and the reason for the request log (RequestKey on aiohttp
# >= 3.12, a plain key before).
_ORIGIN: Any = web.RequestKey("origin", str) if hasattr(web, "RequestKey") else "registre_origin"
_REASON: Any = web.RequestKey("reason", str) if hasattr(web, "RequestKey") else "registre_reason"


def _field(text: str, *, spaces: bool = False) -> str:
    """``text`` safe in a log line: printable (others as ``\\xNN``), no spaces unless
    ``spaces``, at most 200 characters."""

    def shown(c: str) -> str:
        kept = c.isprintable() and (not c.isspace() or (spaces and c == " "))
        return c if kept else f"\\x{ord(c):02x}"

    escaped = "".join(shown(c) for c in text)
    if len(escaped) > _LOG_FIELD_CHARS:
        return escaped[:_LOG_FIELD_CHARS] + "..."
    return escaped


def _log_line(
    method: str, path: str, origin: str | None, status: int | None, ms: float, reason: str | None
) -> None:
    shown = "-" if status is None else str(status)
    line = f"{_field(method)} {_field(path)} origin={_field(origin or '-')} status={shown}"
    line += f" ms={ms:.1f}"
    if reason:
        # the reason is always last: it may hold spaces
        line += " reason=" + _field(reason, spaces=True)
    ACCESS_LOGGER.info("%s", line)


class RequestLogger(AbstractAccessLogger):
    """``POST /add-checkpoint origin=ORIGIN status=200 ms=1.8``, one line per request."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        method, path = request.method, request.raw_path
        if method == "UNKNOWN":  # aiohttp's placeholder for a request it could not parse
            method, path = "-", "-"
        _log_line(
            method,
            path,
            request.get(_ORIGIN),
            response.status,
            time * 1000,
            request.get(_REASON),
        )


def _text_response(status: int, text: str, *, close: bool = False) -> web.Response:
    response = web.Response(status=status, text=f"{text}\n")
    if close:
        response.force_close()
    return response


class _RateLimitedLog:
    """Warnings on :data:`SERVER_LOGGER`, at most :data:`LOG_BURST` per :data:`LOG_WINDOW`
    seconds; the first line of the next window says how many were left out."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._window_start = -LOG_WINDOW
        self._shown = 0
        self._suppressed = 0

    def warning(self, message: str) -> None:
        now = self._clock()
        if now - self._window_start >= LOG_WINDOW:
            if self._suppressed:
                SERVER_LOGGER.warning(
                    "%d similar warning(s) left out in the last %g s", self._suppressed, LOG_WINDOW
                )
            self._window_start, self._shown, self._suppressed = now, 0, 0
        if self._shown < LOG_BURST:
            self._shown += 1
            SERVER_LOGGER.warning("%s", message)
        else:
            self._suppressed += 1


_WARNINGS = _RateLimitedLog(time.monotonic)


class _Connection(RequestHandler):
    """aiohttp's HTTP/1.1 connection, with a read deadline per request and one-line errors.

    States: *idle* (between requests; the next byte starts a request and its read deadline),
    *reading headers* (bytes arrived, aiohttp has not parsed a full request yet: the
    deadline answers 408 here), *in a request* (the dispatcher has the headers; it reads the
    body against :attr:`read_deadline` and calls :meth:`request_read` once it has it all).
    The connection is idle again after an answer that keeps it alive with the request's body
    read to its end; any other answer closes it.
    """

    def __init__(
        self, manager: web.Server, *, read_timeout: float, max_connections: int, **kwargs: Any
    ) -> None:
        super().__init__(manager, **kwargs)
        self._read_timeout = read_timeout
        self._max_connections = max_connections
        self._refused = False
        self._first_byte: asyncio.TimerHandle | None = None
        self._read_timer: asyncio.TimerHandle | None = None
        self._read_started = 0.0
        self._idle = True
        self._in_request = False
        self._line_bytes = 0  # bytes of the current request line seen so far
        self._line_complete = False

    @property
    def read_deadline(self) -> float:
        """Loop time by which the current request must have been read in full."""
        if self._read_timer is None:
            return self._loop.time() + self._read_timeout
        return self._read_started + self._read_timeout

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        manager = self._manager
        if manager is not None and len(manager.connections) >= self._max_connections:
            self._refused = True
            _WARNINGS.warning(
                f"connection refused: {self._max_connections} connections are open (the limit)"
            )
            transport.close()
            return
        super().connection_made(transport)
        self._first_byte = self._loop.call_later(self._read_timeout, self._no_first_byte)

    def _no_first_byte(self) -> None:
        """A connection accepted that sent nothing within the read timeout: closed."""
        self._first_byte = None
        _WARNINGS.warning(f"connection closed: no byte received within {self._read_timeout:g} s")
        self.force_close()

    def data_received(self, data: bytes) -> None:
        if data and self._first_byte is not None:
            self._first_byte.cancel()
            self._first_byte = None
        if data and self._idle:
            self._idle = False
            self._read_started = self._loop.time()
            self._read_timer = self._loop.call_at(
                self._read_started + self._read_timeout, self._read_timed_out
            )
        if data and not self._in_request and not self._line_complete:
            end = data.find(b"\n")
            self._line_bytes += len(data) if end < 0 else end
            self._line_complete = end >= 0
        super().data_received(data)

    def request_started(self) -> None:
        """The dispatcher has the request's headers."""
        self._in_request = True

    def request_read(self) -> None:
        """The dispatcher has the request in full: its read deadline no longer applies."""
        self._cancel_read_timer()

    def log_access(
        self, request: web.BaseRequest, response: web.StreamResponse, time: float | None
    ) -> None:
        super().log_access(request, response, time)
        if response.keep_alive and request.content.at_eof():
            self._cancel_read_timer()
            self._idle, self._in_request = True, False
            self._line_bytes, self._line_complete = 0, False

    def _cancel_read_timer(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _reading_headers(self) -> bool:
        return self._read_timer is not None and not self._idle and not self._in_request

    def _read_timed_out(self) -> None:
        if not self._reading_headers():
            self._read_timer = None
            return  # in a request: the dispatcher reading the body answers 408 itself
        self._read_timer = None
        text = f"request headers not received within {self._read_timeout:g} s"
        ms = (self._loop.time() - self._read_started) * 1000
        _log_line("-", "-", None, 408, ms, text)
        if self.transport is not None:
            body = f"{text}\n".encode()
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain; charset=utf-8\r\n"
                + f"Content-Length: {len(body)}\r\n".encode()
                + b"Connection: close\r\n\r\n"
                + body
            )
        self.force_close()

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._refused:
            return  # never registered with the server
        if self._first_byte is not None:
            self._first_byte.cancel()
            self._first_byte = None
        if self._reading_headers():
            ms = (self._loop.time() - self._read_started) * 1000
            _log_line(
                "-",
                "-",
                None,
                None,
                ms,
                "connection closed before the request headers were complete",
            )
        self._cancel_read_timer()
        super().connection_lost(exc)

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """The answer to a request aiohttp could not parse (or, status 500, a bug): one line
        of text, the connection closed, the reason in the request's log line."""
        self._cancel_read_timer()
        self._in_request = True  # answered: no 408, no second line for this request
        if isinstance(exc, LineTooLong):
            status, text = self._too_long(exc)
        elif isinstance(exc, BadHttpMessage) and "Too many headers" in str(exc.message):
            status, text = 431, f"more than {self.max_headers} header lines"
        elif isinstance(exc, HttpProcessingError):
            detail = " ".join(str(exc.message).split())[:120]
            status, text = 400, f"malformed HTTP request: {detail}"
        else:
            SERVER_LOGGER.debug("internal error answering a request", exc_info=exc)
            status, text = 500, "internal error"
            request[_REASON] = f"internal error: {type(exc).__name__}: {exc}"
        if _REASON not in request:
            request[_REASON] = text
        if request.writer.output_size > 0:
            raise ConnectionError("the answer was already being sent; closing the connection")
        return _text_response(status, text, close=True)

    def _too_long(self, exc: LineTooLong) -> tuple[int, str]:
        """414 for the request line, 431 for a header field. The C parser names the limit it
        hit (the two differ); the pure-Python one uses the line limit for any unfinished
        line, so the bytes seen before the first newline decide."""
        limit = exc.args[1] if len(exc.args) > 1 else None
        line_too_long = not self._line_complete or self._line_bytes > self.max_line_size
        if limit == self.max_field_size and self.max_field_size != self.max_line_size:
            line_too_long = False
        if line_too_long:
            return 414, f"request line longer than {self.max_line_size} bytes"
        return 431, f"a header field longer than {self.max_field_size} bytes"

    def log_exception(self, *args: Any, **kw: Any) -> None:
        """aiohttp's own error reports, as one line without traceback."""
        exc = kw.get("exc_info")
        detail = f": {type(exc).__name__}: {exc}" if isinstance(exc, BaseException) else ""
        message = (str(args[0]) % args[1:]) if args else "error"
        _WARNINGS.warning(f"{message}{detail}")
        SERVER_LOGGER.debug("details", exc_info=exc)


class _Server(web.Server):
    """aiohttp's low-level server, making :class:`_Connection` protocols."""

    def __init__(
        self, handler: Any, *, read_timeout: float, max_connections: int, **kwargs: Any
    ) -> None:
        super().__init__(handler, **kwargs)
        self._read_timeout = read_timeout
        self._max_connections = max_connections

    def __call__(self) -> RequestHandler:
        return _Connection(
            self,
            loop=self._loop,
            read_timeout=self._read_timeout,
            max_connections=self._max_connections,
            **self._kwargs,
        )


class WitnessServer:
    """The witness's HTTP server on a socket, in the running event loop.

    ``await start(sock)`` serves on ``sock`` (already bound and listening);
    ``await stop()`` stops accepting, lets running requests finish (up to
    ``shutdown_timeout`` seconds) and shuts the thread pool down. It does not close the
    witness's state.
    """

    def __init__(
        self,
        witness: Witness,
        *,
        workers: int = 4,
        read_timeout: float = READ_TIMEOUT,
        idle_timeout: float = IDLE_TIMEOUT,
        shutdown_timeout: float = 10.0,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.witness = witness
        self._max_connections = max_connections
        self._workers = workers
        self._read_timeout = read_timeout
        self._idle_timeout = idle_timeout
        self._shutdown_timeout = shutdown_timeout
        self._pool: ThreadPoolExecutor | None = None
        self._runner: web.ServerRunner | None = None

    async def start(self, sock: socket.socket) -> None:
        """Serve on ``sock``."""
        self._pool = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="witness")
        server = _Server(
            self._dispatch,
            read_timeout=self._read_timeout,
            max_connections=self._max_connections,
            keepalive_timeout=self._idle_timeout,
            max_line_size=MAX_REQUEST_LINE,
            max_field_size=MAX_HEADER_FIELD,
            max_headers=MAX_HEADERS,
            lingering_time=self._read_timeout,
            logger=SERVER_LOGGER,
            access_log=ACCESS_LOGGER,
            access_log_class=RequestLogger,
        )
        self._runner = web.ServerRunner(server, shutdown_timeout=self._shutdown_timeout)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    async def stop(self) -> None:
        """Stop accepting, finish running requests, shut the thread pool down."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    async def _dispatch(self, request: web.BaseRequest) -> web.StreamResponse:
        connection = request.protocol
        if isinstance(connection, _Connection):
            connection.request_started()
        response = await self._route(request, connection)
        if not request.content.at_eof():
            # a body left unread (a refusal before reading it): drained for a while by
            # aiohttp, then the connection closes rather than parse what follows
            response.force_close()
        return response

    async def _route(self, request: web.BaseRequest, connection: object) -> web.StreamResponse:
        path = request.path
        origin_hash = parse_monitor_path(path)
        if path == ADD_CHECKPOINT_PATH:
            if request.method != "POST":
                return _not_allowed("POST")
            return await self._add_checkpoint(request, connection)
        if isinstance(connection, _Connection):
            connection.request_read()  # no body is read on the other routes
        if origin_hash is not None:
            if request.method not in ("GET", "HEAD"):
                return _not_allowed("GET, HEAD")
            answer = await self._run(self.witness.monitor, origin_hash)
            return self._answer(request, answer)
        return _text_response(
            404,
            f"no such path; this witness serves POST {ADD_CHECKPOINT_PATH} and "
            f"GET /<hex sha256(origin)>{MONITOR_SUFFIX}",
        )

    async def _add_checkpoint(
        self, request: web.BaseRequest, connection: object
    ) -> web.StreamResponse:
        length = request.content_length
        if length is not None and length > MAX_REQUEST_BYTES:
            return _too_large(f"{length} bytes")
        deadline = (
            connection.read_deadline
            if isinstance(connection, _Connection)
            else asyncio.get_running_loop().time() + self._read_timeout
        )
        try:
            async with asyncio.timeout_at(deadline):
                expect = request.headers.get("Expect", "").lower()
                if expect == "100-continue" and request.version >= (1, 1):
                    await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                body = await request.content.read(MAX_REQUEST_BYTES + 1)
                while len(body) <= MAX_REQUEST_BYTES and not request.content.at_eof():
                    body += await request.content.read(MAX_REQUEST_BYTES + 1 - len(body))
        except TimeoutError:
            text = f"request body not received within {self._read_timeout:g} s"
            request[_REASON] = text
            return _text_response(408, text, close=True)
        except (ConnectionError, RequestPayloadError, HttpProcessingError) as exc:
            request[_REASON] = (
                "connection closed by the client before the body was complete"
                if isinstance(exc, ConnectionError)
                else f"malformed body: {exc}"
            )
            return _text_response(400, request[_REASON], close=True)
        if len(body) > MAX_REQUEST_BYTES:
            return _too_large("too large")
        if isinstance(connection, _Connection):
            connection.request_read()
        answer = await self._run(self.witness.handle, body)
        return self._answer(request, answer)

    async def _run(self, step: Callable[[Any], WitnessResponse], arg: Any) -> WitnessResponse:
        assert self._pool is not None, "WitnessServer.start() was not called"
        return await asyncio.get_running_loop().run_in_executor(self._pool, step, arg)

    @staticmethod
    def _answer(request: web.BaseRequest, answer: WitnessResponse) -> web.Response:
        request[_ORIGIN] = answer.origin
        return web.Response(
            status=answer.status, body=answer.body, headers={"Content-Type": answer.content_type}
        )


def _not_allowed(allowed: str) -> web.Response:
    response = _text_response(405, f"method not allowed; this path answers {allowed}")
    response.headers["Allow"] = allowed
    return response


def _too_large(size: str) -> web.Response:
    return _text_response(
        413,
        f"request body {size}; this witness reads at most {MAX_REQUEST_BYTES} bytes",
        close=True,
    )


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> (host, port); ValueError if malformed."""
    host, colon, port_text = value.rpartition(":")
    if not colon or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"listen address {value!r} must be HOST:PORT, e.g. 127.0.0.1:7380")
    return host.removeprefix("[").removesuffix("]"), int(port_text)


def _loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """asyncio's unexpected-error reports, as one line (a traceback at DEBUG level)."""
    exc = context.get("exception")
    detail = f": {type(exc).__name__}: {exc}" if exc is not None else ""
    _WARNINGS.warning(f"{context.get('message', 'event loop error')}{detail}")
    if exc is not None:
        SERVER_LOGGER.debug("details", exc_info=exc)


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

    async def run() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(_loop_error)
        stop = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        server = WitnessServer(witness, workers=workers, shutdown_timeout=shutdown_timeout)
        await server.start(sock)
        try:
            await stop.wait()
        finally:
            await server.stop()

    try:
        asyncio.run(run())
    finally:
        sock.close()
