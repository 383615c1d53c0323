"""``minikafka api-versions``: the API versions minikafka supports, or a broker offers.

Without options it prints the codec's matrix (protocol.SUPPORTED_VERSIONS). With
``--bootstrap-server HOST:PORT`` it asks that broker (an ApiVersions v0 request, which
every Kafka broker answers) and prints its ranges beside ours.
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
from typing import TextIO

import protocol
from protocol.api import api_name
from protocol.messages import ApiVersionsRequest


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        help="ask this broker for its versions and show them beside minikafka's",
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, help="seconds to wait for the broker (10)"
    )


def format_table(
    ours: dict[int, tuple[int, int]], theirs: dict[int, tuple[int, int]] | None = None
) -> str:
    header = ["API", "KEY", "MIN", "MAX"]
    if theirs is not None:
        header += ["BROKER MIN", "BROKER MAX"]
    rows = [header]
    for key in sorted(set(ours) | set(theirs or {})):
        row = [api_name(key, unknown=f"Unknown({key})"), str(key)]
        row += [str(v) for v in ours[key]] if key in ours else ["-", "-"]
        if theirs is not None:
            row += [str(v) for v in theirs[key]] if key in theirs else ["-", "-"]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        chunks += chunk
    return bytes(chunks)


def query_broker(address: str, timeout: float) -> dict[int, tuple[int, int]]:
    """The ranges a broker advertises in its ApiVersions v0 response."""
    host, _, port = address.rpartition(":")
    request = protocol.make_request(
        protocol.ApiKey.API_VERSIONS, 0, 1, "minikafka-api-versions", ApiVersionsRequest()
    )
    frame = protocol.encode_request(request)
    with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
        if not 0 <= size <= 1 << 20:
            raise ConnectionError(f"implausible response size {size}")
        response = protocol.decode_response(_recv_exactly(sock, size), 18, 0)
    if response.body.error_code:
        raise ConnectionError(f"ApiVersions failed with error {response.body.error_code}")
    return {k.api_key: (k.min_version, k.max_version) for k in response.body.api_keys}


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = sys.stdout if out is None else out  # looked up now, not at import
    theirs = None
    if args.bootstrap_server:
        try:
            theirs = query_broker(args.bootstrap_server, args.timeout)
        except (OSError, ValueError, protocol.ProtocolError) as e:
            print(f"api-versions: cannot query {args.bootstrap_server}: {e}", file=sys.stderr)
            return 1
    print(format_table(dict(protocol.SUPPORTED_VERSIONS), theirs), file=out)
    return 0
