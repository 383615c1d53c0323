"""``minikafka api-versions``: the matrix table, and a broker's ranges beside it."""

from __future__ import annotations

import io
import socket
import struct
import threading

import protocol
from protocol.messages import ApiVersionsResponse
from tools import api_versions
from tools.main import build_parser


def _run(argv: list[str]) -> tuple[int, str]:
    args = build_parser().parse_args(["api-versions", *argv])
    out = io.StringIO()
    return api_versions.run(args, out), out.getvalue()


def test_prints_the_supported_matrix() -> None:
    status, text = _run([])
    assert status == 0
    lines = text.splitlines()
    assert lines[0].split() == ["API", "KEY", "MIN", "MAX"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows["Produce"] == ["0", "0", "9"]
    assert rows["Fetch"] == ["1", "0", "12"]
    assert rows["DescribeCluster"] == ["60", "0", "1"]
    assert len(rows) == len(protocol.SUPPORTED_VERSIONS)


def _fake_broker(server: socket.socket) -> None:
    conn, _ = server.accept()
    with conn:
        conn.settimeout(10)
        (size,) = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))
        request = protocol.decode_request(conn.recv(size, socket.MSG_WAITALL))
        entry = ApiVersionsResponse.ApiVersion
        body = ApiVersionsResponse(
            api_keys=[entry(api_key=0, min_version=3, max_version=11), entry(api_key=99)]
        )
        frame = protocol.encode_response(protocol.make_response(request.header, body))
        conn.sendall(struct.pack(">i", len(frame)) + frame)


def test_shows_a_brokers_ranges_beside_ours() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(10)
        thread = threading.Thread(target=_fake_broker, args=(server,), daemon=True)
        thread.start()
        port = server.getsockname()[1]
        status, text = _run(["--bootstrap-server", f"127.0.0.1:{port}", "--timeout", "10"])
        thread.join(10)
    assert status == 0
    rows = {line.split()[0]: line.split()[1:] for line in text.splitlines()[1:]}
    assert rows["Produce"] == ["0", "0", "9", "3", "11"]
    assert rows["Fetch"] == ["1", "0", "12", "-", "-"]
    assert rows["Unknown(99)"] == ["99", "-", "-", "0", "0"]


def test_unreachable_broker_is_a_clear_failure() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
    status, text = _run(["--bootstrap-server", f"127.0.0.1:{port}", "--timeout", "2"])
    assert status == 1 and text == ""
