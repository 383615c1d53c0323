"""Golden frames from the four real clients decode and re-encode byte-exactly.

tests/golden holds request frames sent by kcat (librdkafka 2.0), confluent-kafka (bundled
librdkafka), kafka-python 3 and aiokafka, and the responses they got from librdkafka's mock
cluster or from the capture tooling's fake broker (tests/tools/capture_golden.py made them;
index.json says which answered each one). For every frame: decode, check the header against
the index, check field values the capture flows make known (so a decoder reading garbage
cannot pass), encode, and compare with the original bytes.

Two documented exceptions to "encode gives back the frame":
- an ApiVersions request newer than we support decodes from its header alone
  (``body is None``), so re-encoding gives back exactly the header bytes;
- ``request_trailing_bytes``: librdkafka 2.16 writes the null topic array of a Metadata v9+
  "all topics" request as a 4-byte int32 instead of a 1-byte varint
  (confluentinc/librdkafka#5049). Kafka reads that as null topics, allow_auto_topic_creation
  false, no tagged fields, and ignores the 3 bytes left; so must we, and re-encoding gives
  the frame without them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import protocol

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
INDEX: dict[str, Any] = json.loads((GOLDEN / "index.json").read_text())
ENTRIES: list[dict[str, Any]] = INDEX["frames"]

# Cases that fail because of a codec bug, by test id -> reason (reported to the lead).
# Each is xfail(strict=True), so a fix makes the suite say so.
KNOWN_CODEC_BUGS: dict[str, str] = {}

API_VERSIONS = 18
NODE_ID = 1  # the mock cluster's one broker; the fake broker answers as the same node


def _case_id(entry: dict[str, Any], kind: str) -> str:
    return f"{Path(entry[kind]).stem.replace('_' + kind, '')}-{entry['client']}"


def _params(kind: str) -> list[Any]:
    params = []
    for entry in ENTRIES:
        if entry[kind] is None:
            continue  # a Produce with acks=0 has no response
        case = f"{kind}:{_case_id(entry, kind)}"
        marks = []
        if case in KNOWN_CODEC_BUGS:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_CODEC_BUGS[case]))
        params.append(pytest.param(entry, id=case, marks=marks))
    return params


def _frame(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


class Known:
    """Names the capture flows used for one client (tests/tools/client_flows.py)."""

    def __init__(self, entry: dict[str, Any]) -> None:
        prefix = f"golden-{entry['client']}"
        self.t1 = f"{prefix}-t1"  # 4 partitions, produced to and consumed from
        self.t2 = f"{prefix}-t2"  # created with 2, grown to 6, deleted
        self.group = f"{prefix}-g"
        # kcat's metadata-only probe keeps librdkafka's default id; "-epoch" is the consumer
        # that saw leader epochs move (and so validated with OffsetForLeaderEpoch).
        self.client_ids = {f"{prefix}-client", f"{prefix}-client-epoch", "rdkafka"}


def _batch_codec(records: Any) -> tuple[int, int]:
    """(magic, compression codec) read straight from a RecordBatch's header bytes."""
    raw = bytes(records)
    assert len(raw) >= 61, "a record batch header is 61 bytes"
    return raw[16], int.from_bytes(raw[21:23], "big") & 0x7


# -- requests -----------------------------------------------------------------------------


def _check_request(entry: dict[str, Any], body: Any) -> None:
    k = Known(entry)
    key, version = entry["api_key"], entry["api_version"]
    if key == 0:  # Produce
        variant = dict(item.partition("=")[::2] for item in entry["variant"].split(","))
        assert body.acks == int(variant["acks"])
        for topic in body.topic_data:
            assert topic.name == k.t1
            for part in topic.partition_data:
                assert 0 <= part.index < 4
                assert _batch_codec(part.records) == (2, int(variant["codec"]))
                producer_id = int.from_bytes(bytes(part.records)[43:51], "big", signed=True)
                assert (producer_id >= 0) == ("idempotent" in variant)
    elif key == 1:  # Fetch
        assert [t.topic for t in body.topics] in ([], [k.t1])
    elif key == 2:  # ListOffsets
        assert {t.name for t in body.topics} == {k.t1}
    elif key == 3:  # Metadata
        names = {t.name for t in body.topics or []}
        assert names <= {k.t1, k.t2}
        if entry.get("request_trailing_bytes"):
            assert body.topics is None
            assert body.allow_auto_topic_creation is False
    elif key == 8:  # OffsetCommit
        assert body.group_id == k.group
        assert [t.name for t in body.topics] == [k.t1]
    elif key == 9:  # OffsetFetch
        group = body.groups[0].group_id if version >= 8 else body.group_id
        assert group == k.group
    elif key == 10:  # FindCoordinator
        keys = list(body.coordinator_keys) if version >= 4 else [body.key]
        assert keys == [k.group]
    elif key == 11:  # JoinGroup
        assert body.group_id == k.group
        assert body.protocol_type == "consumer"
        assert k.t1.encode() in bytes(body.protocols[0].metadata)
    elif key in (12, 13, 14):  # Heartbeat, LeaveGroup, SyncGroup
        assert body.group_id == k.group
    elif key == 15:  # DescribeGroups
        assert list(body.groups) == [k.group]
    elif key == 17:  # SaslHandshake
        assert body.mechanism == "PLAIN"
    elif key == API_VERSIONS and version >= 3:
        assert body.client_software_name
    elif key == 19:  # CreateTopics
        assert {(t.name, t.num_partitions) for t in body.topics} == {(k.t1, 4), (k.t2, 2)}
    elif key == 20:  # DeleteTopics
        deleted = [t.name for t in body.topics] if version >= 6 else list(body.topic_names)
        assert deleted == [k.t2]
    elif key == 21:  # DeleteRecords
        assert [
            (t.name, [(p.partition_index, p.offset) for p in t.partitions]) for t in body.topics
        ] == [(k.t1, [(1, 1)])]
    elif key == 22:  # InitProducerId
        assert body.transactional_id is None
    elif key == 23:  # OffsetForLeaderEpoch: positions fetched under epoch 0
        assert [t.topic for t in body.topics] == [k.t1]
        assert {p.leader_epoch for t in body.topics for p in t.partitions} == {0}
        assert all(p.current_leader_epoch >= 1 for t in body.topics for p in t.partitions)
    elif key == 32:  # DescribeConfigs
        resources = {(r.resource_type, r.resource_name) for r in body.resources}
        assert resources <= {(2, k.t1), (4, "1")}
        assert resources
    elif key == 36:  # SaslAuthenticate: PLAIN is authzid NUL user NUL password
        authzid, user, password = bytes(body.auth_bytes).split(b"\0")
        assert (user, password) == (b"golden", b"golden")
        assert authzid in (b"", user)
    elif key == 37:  # CreatePartitions
        assert [(t.name, t.count) for t in body.topics] == [(k.t2, 6)]


@pytest.mark.parametrize("entry", _params("request"))
def test_request_round_trip(entry: dict[str, Any]) -> None:
    frame = _frame(entry["request"])
    request = protocol.decode_request(frame)
    header = request.header
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        entry["api_key"],
        entry["api_version"],
        entry["correlation_id"],
        entry["client_id"],
    )
    assert header.client_id in Known(entry).client_ids
    encoded = protocol.encode_request(request)
    if request.body is None:
        # Only an ApiVersions request above our range decodes from its header alone.
        assert header.api_key == API_VERSIONS
        assert header.api_version > protocol.SUPPORTED_VERSIONS[API_VERSIONS][1]
        assert len(encoded) < len(frame)
        assert encoded == frame[: len(encoded)]
        return
    trailing = entry.get("request_trailing_bytes", 0)
    assert encoded == frame[: len(frame) - trailing]
    _check_request(entry, request.body)


# -- responses ----------------------------------------------------------------------------


def _check_response(entry: dict[str, Any], body: Any) -> None:
    k = Known(entry)
    key, version = entry["api_key"], entry["api_version"]
    if key == 0:  # Produce
        for topic in body.responses:
            assert topic.name == k.t1
            assert all(p.error_code == 0 for p in topic.partition_responses)
    elif key == 1:  # Fetch
        for topic in body.responses:
            assert topic.topic == k.t1
            for part in topic.partitions:
                assert part.error_code == 0
                assert part.high_watermark >= 0
    elif key == 2:  # ListOffsets
        assert {t.name for t in body.topics} == {k.t1}
    elif key == 3:  # Metadata
        assert [(b.node_id, b.host) for b in body.brokers] == [(NODE_ID, "127.0.0.1")]
        for topic in body.topics:
            if topic.name == k.t1:
                assert topic.error_code == 0
                assert sorted(p.partition_index for p in topic.partitions) == [0, 1, 2, 3]
    elif key == 10:  # FindCoordinator
        nodes = body.coordinators if version >= 4 else [body]
        assert [(n.error_code, n.node_id) for n in nodes] == [(0, NODE_ID)]
    elif key == 11:  # JoinGroup: MEMBER_ID_REQUIRED first (v4+), then joined
        assert body.error_code in (0, 79)
        if body.error_code == 0:
            assert body.generation_id >= 1
            assert body.leader in {m.member_id for m in body.members} | {body.member_id}
    elif key == 17:  # SaslHandshake
        assert (body.error_code, list(body.mechanisms)) == (0, ["PLAIN"])
    elif key == API_VERSIONS:
        ranges = {(a.api_key, a.min_version, a.max_version) for a in body.api_keys}
        if body.error_code == 35:  # UNSUPPORTED_VERSION: ApiVersions' own range
            assert (API_VERSIONS, 0, 3) in ranges
        else:
            assert body.error_code == 0
            table = (
                INDEX["advertised"] if entry["upstream"] == "fake" else INDEX["mock_api_versions"]
            )
            assert ranges == {(int(api), lo, hi) for api, (lo, hi) in table.items()}
    elif key == 19:  # CreateTopics
        assert {(t.name, t.error_code) for t in body.topics} == {(k.t1, 0), (k.t2, 0)}
    elif key == 20:  # DeleteTopics
        assert [(r.name, r.error_code) for r in body.responses] == [(k.t2, 0)]
    elif key == 22:  # InitProducerId
        assert body.error_code == 0
        assert body.producer_id >= 0
    elif key == 23:  # OffsetForLeaderEpoch
        for topic in body.topics:
            assert topic.topic == k.t1
            assert all(
                p.error_code == 0 and p.leader_epoch == 0 and p.end_offset >= 0
                for p in topic.partitions
            )
    elif key == 32:  # DescribeConfigs
        assert {r.resource_name for r in body.results} <= {k.t1, "1"}
        assert all(r.error_code == 0 and r.configs for r in body.results)
    elif key == 36:  # SaslAuthenticate
        assert body.error_code == 0
    elif key == 37:  # CreatePartitions
        assert [(r.name, r.error_code) for r in body.results] == [(k.t2, 0)]
    elif key == 60:  # DescribeCluster
        assert [b.broker_id for b in body.brokers] == [NODE_ID]


@pytest.mark.parametrize("entry", _params("response"))
def test_response_round_trip(entry: dict[str, Any]) -> None:
    frame = _frame(entry["response"])
    response = protocol.decode_response(frame, entry["api_key"], entry["api_version"])
    assert response.header.correlation_id == entry["correlation_id"]
    # The answer to a too-new ApiVersions request carries a v0 body (index.json says so).
    assert response.api_version == entry.get("response_body_version", entry["api_version"])
    assert protocol.encode_response(response) == frame
    _check_response(entry, response.body)


def test_index_covers_every_client_and_the_matrix_apis() -> None:
    """The golden set is not silently thinned out by a capture run that went wrong."""
    clients = {e["client"] for e in ENTRIES}
    assert clients == {"kcat", "confluent", "kafka-python", "aiokafka"}
    for client in clients:
        keys = {e["api_key"] for e in ENTRIES if e["client"] == client}
        # Every client bootstraps, produces, fetches and runs a consumer group.
        assert {0, 1, 2, 3, 10, 11, 14, API_VERSIONS, 22} <= keys, client
    every_key = {e["api_key"] for e in ENTRIES}
    assert {8, 9, 12, 13, 15, 16, 17, 19, 20, 21, 23, 32, 36, 37, 60} <= every_key
    for entry in ENTRIES:
        assert (GOLDEN / entry["request"]).is_file()
        assert entry["response"] is None or (GOLDEN / entry["response"]).is_file()


def test_every_client_produced_idempotently_and_fetched_records() -> None:
    """Each client's set holds an idempotent batch (producer id and sequence set) and a
    Fetch response that carried magic-2 batches: the interesting paths, not just empties."""
    for client in ("kcat", "confluent", "kafka-python", "aiokafka"):
        producer_ids = []
        fetched = []
        for entry in ENTRIES:
            if entry["client"] != client:
                continue
            if entry["api_key"] == 0:
                body = protocol.decode_request(_frame(entry["request"])).body
                producer_ids += [
                    int.from_bytes(bytes(p.records)[43:51], "big", signed=True)
                    for t in body.topic_data
                    for p in t.partition_data
                ]
            elif entry["api_key"] == 1:
                body = protocol.decode_response(
                    _frame(entry["response"]), 1, entry["api_version"]
                ).body
                fetched += [
                    bytes(p.records) for t in body.responses for p in t.partitions if p.records
                ]
        assert any(pid >= 0 for pid in producer_ids), client
        assert fetched, client
        assert all(records[16] == 2 for records in fetched), client


def test_capture_advertised_what_the_codec_supports() -> None:
    """The clients chose their versions from this table: when the matrix changes, the
    frames no longer show what clients send to minikafka; recapture them
    (.venv/bin/python -m tests.tools.capture_golden)."""
    advertised = {int(api): tuple(r) for api, r in INDEX["advertised"].items()}
    inter_broker = {4, 5, 6, 7}
    assert advertised == {
        api: tuple(r) for api, r in protocol.SUPPORTED_VERSIONS.items() if api not in inter_broker
    }
