"""The witness's HTTP server against clients that misbehave at the HTTP level, over raw
sockets to an in-process server on loopback (short read timeout): no traceback, no 500, one
log line per request, bounded reads, 414/431 for oversized request lines and headers."""

from __future__ import annotations

import logging
import random
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from registre.attest.notes import CosignatureSigner, Signer
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.witness.state import WitnessState
from registre.witness.witness import Witness
from tests.witness.conftest import grow, request_body, serving_witness

READ_TIMEOUT = 0.6
KEY = CosignatureSigner.from_seed("witness.test/r", bytes([4]) * 32)


class Server:
    """A running in-process witness, its address, and the log records it wrote."""

    def __init__(self, url: str, caplog: pytest.LogCaptureFixture) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.address = (host, int(port))
        self.caplog = caplog

    def connect(self) -> socket.socket:
        return socket.create_connection(self.address, timeout=10)

    def exchange(self, data: bytes) -> bytes:
        """Send ``data`` on a fresh connection; everything read until the server closes."""
        with self.connect() as conn:
            conn.sendall(data)
            return read_all(conn)

    def lines(self, at_least: int = 0) -> list[str]:
        """Request log lines so far, waiting up to 5 s for ``at_least``."""
        deadline = time.monotonic() + 5.0
        while True:
            lines = [r.getMessage() for r in self.caplog.records if r.name == "registre.witness"]
            if len(lines) >= at_least or time.monotonic() > deadline:
                return lines
            time.sleep(0.02)

    def assert_quiet(self) -> None:
        """Nothing shown but request lines: no traceback, no warning, no 500 (a traceback
        at DEBUG level, hidden by default, would be allowed)."""
        for record in self.caplog.records:
            if record.levelno >= logging.INFO:
                assert record.name == "registre.witness", (record.name, record.getMessage())
                assert record.exc_info is None, record.getMessage()
        assert not [line for line in self.lines() if "status=5" in line]


def read_all(conn: socket.socket) -> bytes:
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    return data


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def body_of(answer: bytes) -> bytes:
    return answer.split(b"\r\n\r\n", 1)[1]


@pytest.fixture
def thread(log_ledger: Ledger) -> Thread:
    created = log_ledger.create_thread("t1")
    grow(created, 3)
    return created


@pytest.fixture
def server(tmp_path: Path, signer: Signer, caplog: pytest.LogCaptureFixture) -> Iterator[Server]:
    state = WitnessState.create(tmp_path / "witness.db")
    state.follow(signer.vkey(), f"{signer.name}/")
    # (each set_level also sets the capture handler's level: the lowest comes last)
    caplog.set_level(logging.INFO, logger="asyncio")
    caplog.set_level(logging.DEBUG, logger="aiohttp")
    caplog.set_level(logging.DEBUG, logger="registre.witness")
    try:
        with serving_witness(
            Witness(KEY, state), read_timeout=READ_TIMEOUT, idle_timeout=30.0
        ) as url:
            yield Server(url, caplog)
    finally:
        state.close()


def post(body: bytes, *, length: int | None = None, extra: bytes = b"") -> bytes:
    size = len(body) if length is None else length
    return (
        b"POST /add-checkpoint HTTP/1.1\r\nHost: w\r\nContent-Type: text/plain\r\n"
        + f"Content-Length: {size}\r\n".encode()
        + extra
        + b"\r\n"
        + body
    )


def test_disconnect_mid_body_logged_once_without_traceback(server: Server, thread: Thread) -> None:
    body = request_body(thread, 0)
    for _ in range(20):
        with server.connect() as conn:
            conn.sendall(post(body[:40], length=len(body)))
            time.sleep(0.01)
    lines = server.lines(20)
    assert len(lines) == 20
    assert all("status=400" in line for line in lines), lines
    assert all("before the body was complete" in line for line in lines)
    server.assert_quiet()


def test_partial_headers_then_disconnect_logged_once(server: Server) -> None:
    with server.connect() as conn:
        conn.sendall(b"POST /add-checkpoint HTTP/1.1\r\nHost: w\r\n")
        time.sleep(0.05)
    (line,) = server.lines(1)
    assert line.startswith("- - origin=- status=- ")
    assert "before the request headers were complete" in line
    server.assert_quiet()


def test_slow_headers_timed_out_fail(server: Server) -> None:
    with server.connect() as conn:
        started = time.monotonic()
        conn.sendall(b"POST /add-checkpoint HTTP/1.1\r\nHost: w\r\n")
        answer = read_all(conn)  # the server answers and closes
        elapsed = time.monotonic() - started
    assert status_of(answer) == 408
    assert body_of(answer) == b"request headers not received within 0.6 s\n"
    assert READ_TIMEOUT * 0.9 < elapsed < READ_TIMEOUT + 5
    (line,) = server.lines(1)
    assert "status=408" in line
    server.assert_quiet()


def test_trickled_headers_bounded_by_one_deadline_fail(server: Server) -> None:
    # one byte at a time keeps the connection busy, but the deadline runs from the first byte
    with server.connect() as conn:
        conn.settimeout(0.1)
        started = time.monotonic()
        answer = b""
        for byte in b"POST /add-checkpoint HTTP/1.1\r\nHost: w\r\nX-Slow: " + b"a" * 200:
            try:
                conn.sendall(bytes([byte]))
                answer += conn.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
            if answer:
                break
        elapsed = time.monotonic() - started
    assert status_of(answer) == 408
    assert elapsed < READ_TIMEOUT + 5
    server.assert_quiet()


def test_slow_body_timed_out_fail(server: Server, thread: Thread) -> None:
    body = request_body(thread, 0)
    with server.connect() as conn:
        conn.sendall(post(body[:40], length=len(body)))
        answer = read_all(conn)
    assert status_of(answer) == 408
    assert body_of(answer) == b"request body not received within 0.6 s\n"
    (line,) = server.lines(1)
    assert line.startswith("POST /add-checkpoint origin=- status=408 ")
    server.assert_quiet()


def test_idle_keepalive_connection_not_timed_out(server: Server, thread: Thread) -> None:
    with server.connect() as conn:
        conn.sendall(post(request_body(thread, 0)))
        first = conn.recv(65536)
        assert status_of(first) == 200
        time.sleep(READ_TIMEOUT * 2)  # idle between requests: not a slow request
        conn.sendall(post(request_body(thread, 3)))
        second = conn.recv(65536)
        assert status_of(second) == 200
    assert [line.split()[3] for line in server.lines(2)] == ["status=200", "status=200"]
    server.assert_quiet()


def test_100_continue_answered(server: Server, thread: Thread) -> None:
    body = request_body(thread, 0)
    with server.connect() as conn:
        conn.sendall(post(b"", length=len(body), extra=b"Expect: 100-continue\r\n"))
        assert conn.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        conn.sendall(body)
        assert status_of(conn.recv(65536)) == 200


def test_100_kb_path_answered_414_fail(server: Server) -> None:
    answer = server.exchange(b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: w\r\n\r\n")
    assert status_of(answer) == 414
    assert body_of(answer) == b"request line longer than 4096 bytes\n"
    (line,) = server.lines(1)
    assert line.startswith("- - origin=- status=414 ")
    server.assert_quiet()


def test_path_just_over_the_limit_in_one_packet_answered_414_fail(server: Server) -> None:
    # the whole request in one packet: the newline after the request line is in view
    answer = server.exchange(b"GET /" + b"a" * 4200 + b" HTTP/1.1\r\nHost: w\r\n\r\n")
    assert status_of(answer) == 414


def test_100_kb_header_answered_431_fail(server: Server) -> None:
    answer = server.exchange(b"GET / HTTP/1.1\r\nHost: w\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n")
    assert status_of(answer) == 431
    assert body_of(answer) == b"a header field longer than 8190 bytes\n"
    server.assert_quiet()


def test_too_many_headers_answered_431_fail(server: Server) -> None:
    headers = b"".join(f"X-H{i}: v\r\n".encode() for i in range(100))
    answer = server.exchange(b"GET / HTTP/1.1\r\nHost: w\r\n" + headers + b"\r\n")
    assert status_of(answer) == 431
    assert body_of(answer) == b"more than 64 header lines\n"
    server.assert_quiet()


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"\x00\x01 not http \xff\r\n\r\n",
        b"POST /add-checkpoint HTTP/1.1\r\nContent-Length: zz\r\n\r\n",
        b"POST /add-checkpoint HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nold 0",
        b"GET / HTTP/9.9\r\n\r\n",
        b"POST /add-checkpoint HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nold\r\n",
        b"GET /\x7f HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
    ],
)
def test_malformed_http_answered_400_in_one_line_fail(server: Server, request_bytes: bytes) -> None:
    answer = server.exchange(request_bytes)
    assert status_of(answer) == 400
    text = body_of(answer)
    assert text.startswith(b"malformed HTTP request: ") and text.count(b"\n") == 1, text
    (line,) = server.lines(1)
    assert " status=400 " in line
    server.assert_quiet()


def test_control_characters_in_path_escaped_in_log(server: Server) -> None:
    answer = server.exchange(
        b"GET /%0a%1b[31mfake%20line HTTP/1.1\r\nHost: w\r\nConnection: close\r\n\r\n"
    )
    assert status_of(answer) == 404
    (line,) = server.lines(1)
    assert "\n" not in line and "\x1b" not in line
    assert line.startswith("GET /%0a%1b[31mfake%20line origin=- status=404 ")


def test_oversized_body_refused_before_reading_fail(server: Server) -> None:
    with server.connect() as conn:
        conn.sendall(post(b"", length=10**9))
        answer = read_all(conn)
    assert status_of(answer) == 413
    (line,) = server.lines(1)
    assert "status=413" in line
    server.assert_quiet()


def test_server_still_serves_after_abuse(server: Server, thread: Thread) -> None:
    server.exchange(b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\n\r\n")
    with server.connect() as conn:
        conn.sendall(b"POST /add-checkpoint HTTP/1.1\r\n")
    answer = server.exchange(post(request_body(thread, 0), extra=b"Connection: close\r\n"))
    assert status_of(answer) == 200
    assert len(server.lines(3)) == 3
    server.assert_quiet()


def test_mutated_requests_never_500_or_traceback(server: Server, thread: Thread) -> None:
    # a valid request cut short, bytes flipped, runs deleted or duplicated, each on its own
    # connection: every one is answered below 500 (408 if it stopped short) or cut, and logged
    rng = random.Random(14)
    valid = post(request_body(thread, 0), extra=b"Connection: close\r\n")
    statuses = []
    sent = 0
    while sent < 40:
        data = bytearray(valid)
        for _ in range(rng.randint(1, 4)):
            if not data:
                break
            choice, at = rng.random(), rng.randrange(len(data))
            if choice < 0.4:
                data[at] = rng.randrange(256)
            elif choice < 0.6:
                del data[at : at + rng.randint(1, 40)]
            elif choice < 0.8:
                data[at:at] = data[at : at + rng.randint(1, 40)]
            else:
                del data[at:]
        if not data:
            continue  # nothing sent is no request
        sent += 1
        with server.connect() as conn:
            conn.sendall(bytes(data))
            conn.settimeout(READ_TIMEOUT + 1.0)
            answer = b""
            try:
                while chunk := conn.recv(65536):
                    answer += chunk
            except (TimeoutError, ConnectionResetError):
                pass  # a keep-alive answer (the mutation hit Connection: close), or cut
        if answer:
            statuses.append(status_of(answer))
    assert len(statuses) >= 30 and all(status < 500 for status in statuses), statuses
    assert len(server.lines(40)) >= 40  # every connection that sent a byte is logged
    server.assert_quiet()


# --- issue 29 item 13: connections are bounded ------------------------------------------------


@pytest.fixture
def small_server(
    tmp_path: Path, signer: Signer, caplog: pytest.LogCaptureFixture
) -> Iterator[Server]:
    state = WitnessState.create(tmp_path / "witness.db")
    state.follow(signer.vkey(), f"{signer.name}/")
    caplog.set_level(logging.DEBUG, logger="registre.witness")
    try:
        with serving_witness(
            Witness(KEY, state), read_timeout=READ_TIMEOUT, idle_timeout=30.0, max_connections=4
        ) as url:
            yield Server(url, caplog)
    finally:
        state.close()


def _closed_by_server(conn: socket.socket, within: float) -> bool:
    conn.settimeout(within)
    try:
        return conn.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_idle_connections_exhaust_the_server_fail(small_server: Server) -> None:
    """Connections past the limit are closed at once, and the warnings about them are
    rate-limited; once the idle ones are gone (no byte within the read timeout), a request
    is answered again."""
    from registre.witness.server import LOG_BURST

    held = [small_server.connect() for _ in range(4)]
    extra = [small_server.connect() for _ in range(40)]
    try:
        assert all(_closed_by_server(conn, 3.0) for conn in extra)
        warnings = [
            r.getMessage()
            for r in small_server.caplog.records
            if r.name == "registre.witness.server" and "connection refused" in r.getMessage()
        ]
        assert 1 <= len(warnings) <= LOG_BURST
    finally:
        for conn in extra:
            conn.close()
    assert all(_closed_by_server(conn, READ_TIMEOUT + 3.0) for conn in held)
    for conn in held:
        conn.close()
    answer = small_server.exchange(b"GET /nothing HTTP/1.1\r\nHost: w\r\nConnection: close\r\n\r\n")
    assert status_of(answer) == 404


def test_idle_connection_held_before_first_byte_fail(server: Server) -> None:
    """A connection that sends nothing is closed after the read timeout, not the idle one."""
    with server.connect() as conn:
        started = time.monotonic()
        assert _closed_by_server(conn, 5.0)
        assert time.monotonic() - started < READ_TIMEOUT + 2.0
