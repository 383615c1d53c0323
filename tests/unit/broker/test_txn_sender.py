"""The marker channel's TCP sender against a stub broker on 127.0.0.1 standing in for
the leaders' WriteTxnMarkers handler: the version is the highest both speak, the request
carries the markers and the answer completes them; a connection the stub drops is
reopened for the retry; a broker that does not serve WriteTxnMarkers fails the send; the
sender's own broker, once served locally, is written in-process and never over TCP."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

import protocol
from broker.txn.markers import MarkerChannel, MarkerOutcome, PendingMarkers
from broker.txn.sender import TcpMarkerSender
from client.connection import ConnectionConfig
from client.errors import UnsupportedApi
from protocol import ApiKey
from protocol.api import request_header_version, request_message
from protocol.codec import decode_struct
from protocol.messages import (
    ApiVersionsResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from protocol.values import TopicPartition

SIZE = struct.Struct(">i")
A0 = TopicPartition("a", 0)
DEADLINE_S = 5.0
Resp = WriteTxnMarkersResponse


@dataclass
class StubLeader:
    """Serves ApiVersions (with ``ranges``) and WriteTxnMarkers (every partition NONE);
    closes the connection instead of answering the first ``drop`` marker requests."""

    ranges: dict[int, tuple[int, int]]
    drop: int = 0
    received: list[tuple[int, WriteTxnMarkersRequest]] = field(default_factory=list)
    connections: int = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                (size,) = SIZE.unpack(await reader.readexactly(4))
                frame = await reader.readexactly(size)
                api_key, version = struct.unpack_from(">hh", frame, 0)
                if api_key == ApiKey.API_VERSIONS:
                    request = protocol.decode_request(frame)
                    keys = [
                        ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                        for k, (lo, hi) in self.ranges.items()
                    ]
                    body: object = ApiVersionsResponse(api_keys=keys)
                    header = request.header
                else:
                    header, pos = decode_struct(
                        protocol.api._REQUEST_HEADER,  # the server's own header reader
                        request_header_version(api_key, version),
                        memoryview(frame),
                        0,
                    )
                    markers, _ = decode_struct(
                        request_message(api_key).root, version, memoryview(frame), pos
                    )
                    if self.drop:
                        self.drop -= 1
                        return
                    self.received.append((version, markers))
                    body = Resp(markers=[_all_written(m) for m in markers.markers])
                answer = protocol.encode_response(protocol.make_response(header, body))
                writer.write(SIZE.pack(len(answer)) + answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def _all_written(marker: WriteTxnMarkersRequest.WritableTxnMarker) -> Resp.WritableTxnMarkerResult:
    return Resp.WritableTxnMarkerResult(
        producer_id=marker.producer_id,
        topics=[
            Resp.WritableTxnMarkerTopicResult(
                name=t.name,
                partitions=[
                    Resp.WritableTxnMarkerPartitionResult(partition_index=p, error_code=0)
                    for p in t.partition_indexes
                ],
            )
            for t in marker.topics
        ],
    )


@dataclass
class Running:
    stub: StubLeader
    port: int


@pytest.fixture
async def leader() -> AsyncIterator[Running]:
    stub = StubLeader({ApiKey.API_VERSIONS: (0, 3), ApiKey.WRITE_TXN_MARKERS: (0, 1)})
    server = await asyncio.start_server(stub.serve, "127.0.0.1", 0)
    yield Running(stub, int(server.sockets[0].getsockname()[1]))
    server.close()
    await server.wait_closed()


def sender(port: int) -> TcpMarkerSender:
    endpoints = {1: ("127.0.0.1", port)}
    return TcpMarkerSender(endpoints.get, ConnectionConfig("test", 2.0, request_timeout_s=2.0))


async def test_markers_reach_the_leader_at_v1_and_complete(leader: Running) -> None:
    ch = MarkerChannel({A0: 1}.get, {"a"}.__contains__, sender(leader.port), retry_backoff_ms=10)
    markers = PendingMarkers("tx", 42, 3, False, 7, 0, {A0})
    ch.add(markers)
    assert await asyncio.wait_for(markers.done, DEADLINE_S) is MarkerOutcome.WRITTEN
    [(version, request)] = leader.stub.received
    assert version == 1
    [marker] = request.markers
    assert (marker.producer_id, marker.producer_epoch, marker.transaction_result) == (42, 3, False)
    assert marker.coordinator_epoch == 7
    assert [(t.name, t.partition_indexes) for t in marker.topics] == [("a", [0])]
    await ch.close()


async def test_a_dropped_connection_is_reopened_for_the_retry(leader: Running) -> None:
    leader.stub.drop = 1
    ch = MarkerChannel({A0: 1}.get, {"a"}.__contains__, sender(leader.port), retry_backoff_ms=10)
    markers = PendingMarkers("tx", 42, 3, True, 7, 0, {A0})
    ch.add(markers)
    assert await asyncio.wait_for(markers.done, DEADLINE_S) is MarkerOutcome.WRITTEN
    assert leader.stub.connections == 2 and len(leader.stub.received) == 1
    await ch.close()


async def test_a_broker_without_write_txn_markers_fails_the_send(leader: Running) -> None:
    leader.stub.ranges = {ApiKey.API_VERSIONS: (0, 3)}
    s = sender(leader.port)
    with pytest.raises(UnsupportedApi):
        await s.send(1, WriteTxnMarkersRequest(markers=[]))
    await s.close()


async def test_the_local_broker_is_written_in_process_and_others_over_tcp(
    leader: Running,
) -> None:
    b0 = TopicPartition("a", 1)
    local: list[WriteTxnMarkersRequest] = []

    async def write_here(request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
        local.append(request)
        return Resp(markers=[_all_written(m) for m in request.markers])

    endpoints = {1: ("127.0.0.1", leader.port), 2: ("127.0.0.1", leader.port)}
    s = TcpMarkerSender(endpoints.get, ConnectionConfig("test", 2.0, request_timeout_s=2.0))
    s.serve_locally(2, write_here)
    ch = MarkerChannel({A0: 1, b0: 2}.get, {"a"}.__contains__, s, retry_backoff_ms=10)
    markers = PendingMarkers("tx", 42, 3, True, 7, 0, {A0, b0})
    ch.add(markers)
    assert await asyncio.wait_for(markers.done, DEADLINE_S) is MarkerOutcome.WRITTEN
    [(_, remote)] = leader.stub.received
    assert [(t.name, t.partition_indexes) for t in remote.markers[0].topics] == [("a", [0])]
    [here] = local
    assert [(t.name, t.partition_indexes) for t in here.markers[0].topics] == [("a", [1])]
    assert leader.stub.connections == 1  # broker 2 (this one) was never connected to
    await ch.close()
