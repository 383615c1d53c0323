"""A container's health, for Docker's HEALTHCHECK: exit 0 when healthy, 1 otherwise.

    minikafka-healthcheck broker HOST:PORT      ApiVersions answered without error, then a
                                                Metadata v1 answer that lists this broker
                                                (KAFKA_BROKER_ID): it is registered and its
                                                metadata cache is filled
    minikafka-healthcheck zookeeper HOST:PORT   ``ruok`` answered ``imok``

It runs every few seconds in every container, so it speaks the two requests itself with
the standard library (ApiVersions v0 and Metadata v1, whose layouts are fixed) instead of
importing the project's protocol codec: a check costs a few milliseconds of CPU.
"""

from __future__ import annotations

import os
import socket
import struct
import sys

TIMEOUT_S = 3.0
API_VERSIONS, METADATA = 18, 3
CLIENT_ID = b"minikafka-healthcheck"


def _request(
    sock: socket.socket, api_key: int, version: int, correlation_id: int, body: bytes
) -> bytes:
    """Send a request with header v1 (key, version, correlation id, client id) and return
    the response body after its correlation id."""
    header = struct.pack(">hhih", api_key, version, correlation_id, len(CLIENT_ID)) + CLIENT_ID
    frame = header + body
    sock.sendall(struct.pack(">i", len(frame)) + frame)
    size = struct.unpack(">i", _read(sock, 4))[0]
    payload = _read(sock, size)
    (answered,) = struct.unpack_from(">i", payload)
    if answered != correlation_id:
        raise ValueError(f"correlation id {answered}, expected {correlation_id}")
    return payload[4:]


def _read(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise ConnectionError("closed by the broker")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _metadata_broker_ids(body: bytes) -> list[int]:
    """The node ids of a Metadata v1 response's brokers array (node_id, host, port, rack)."""
    (count,), pos, ids = struct.unpack_from(">i", body), 4, []
    for _ in range(count):
        node_id, host_len = struct.unpack_from(">ih", body, pos)
        ids.append(node_id)
        pos += 4 + 2 + host_len + 4
        (rack_len,) = struct.unpack_from(">h", body, pos)
        pos += 2 + max(0, rack_len)  # -1: no rack
    return ids


def broker_healthy(host: str, port: int, broker_id: int | None) -> bool:
    with socket.create_connection((host, port), timeout=TIMEOUT_S) as sock:
        sock.settimeout(TIMEOUT_S)
        versions = _request(sock, API_VERSIONS, 0, 1, b"")
        if struct.unpack_from(">h", versions)[0] != 0:
            return False
        # an empty topic list: the brokers only
        brokers = _metadata_broker_ids(_request(sock, METADATA, 1, 2, struct.pack(">i", 0)))
    return bool(brokers) if broker_id is None else broker_id in brokers


def zookeeper_healthy(host: str, port: int) -> bool:
    with socket.create_connection((host, port), timeout=TIMEOUT_S) as sock:
        sock.settimeout(TIMEOUT_S)
        sock.sendall(b"ruok")
        return sock.recv(16) == b"imok"


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("broker", "zookeeper"):
        print("usage: minikafka-healthcheck broker|zookeeper HOST:PORT", file=sys.stderr)
        return 2
    host, _, port = argv[1].rpartition(":")
    try:
        if argv[0] == "zookeeper":
            healthy = zookeeper_healthy(host, int(port))
        else:
            raw_id = os.environ.get("KAFKA_BROKER_ID", "")
            broker_id = int(raw_id) if raw_id.lstrip("-").isdigit() else None
            healthy = broker_healthy(host, int(port), broker_id)
    except (OSError, ValueError, struct.error) as exc:
        print(f"unhealthy: {exc}", file=sys.stderr)
        return 1
    if not healthy:
        print("unhealthy: not answering as expected yet", file=sys.stderr)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
