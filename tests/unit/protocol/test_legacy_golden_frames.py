"""Golden frames of clients configured for old brokers (kafka-python with ``api_version``
(0, 10): Produce v2 carrying magic 1 message sets, uncompressed and in gzip, lz4 and
snappy wrappers, read back with Fetch v2; (0, 9): Produce v1 carrying magic 0 sets,
uncompressed, gzip and snappy, read back with Fetch v1). tests/tools/
capture_legacy_golden.py made them; tests/golden/legacy/index.json lists them. Each
request decodes with the codec and the lean Fetch reader alike, each message set reads
and up-converts to the records the client sent, and each Fetch answer is in the magic
its version reads, the offsets in order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import protocol
from protocol import ApiKey
from protocol.fetch_reader import read_fetch_request
from protocol.records import read_batch
from protocol.records.conversion import up_convert
from protocol.records.legacy import deep_messages, iter_messages

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "legacy"
INDEX = json.loads((GOLDEN / "index.json").read_text())
FRAMES: list[dict[str, Any]] = INDEX["frames"]
PRODUCES = [f for f in FRAMES if f["api_key"] == ApiKey.PRODUCE]
FETCHES = [f for f in FRAMES if f["api_key"] == ApiKey.FETCH]
CODECS = {"golden-none": 0, "golden-gzip": 1, "golden-snappy": 2, "golden-lz4": 3}
#: client -> (Produce and Fetch version, magic)
CLIENTS = {"kafka-python-0.10": (2, 1), "kafka-python-0.9": (1, 0)}


def frame(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


def test_every_client_and_codec_was_captured() -> None:
    for client, (version, _) in CLIENTS.items():
        produced = [f for f in PRODUCES if f["client"] == client]
        expected = set(CODECS) - ({"golden-lz4"} if version == 1 else set())
        assert {f["client_id"] for f in produced} == expected
        assert {f["api_version"] for f in produced} == {version}
        fetched = [f for f in FETCHES if f["client"] == client]
        assert fetched and {f["api_version"] for f in fetched} == {version}


@pytest.mark.parametrize("entry", PRODUCES, ids=lambda f: f["request"])
def test_produce_carries_legacy_message_sets(entry: dict[str, Any]) -> None:
    version, magic = CLIENTS[entry["client"]]
    request = protocol.decode_request(frame(entry["request"]))
    assert (request.header.api_key, request.header.api_version) == (ApiKey.PRODUCE, version)
    (topic,) = request.body.topic_data
    (part,) = topic.partition_data
    records = bytes(part.records)
    codec = CODECS[entry["client_id"]]
    shallow = [m for _, m in iter_messages(records)]
    assert {m.magic for m in shallow} == {magic}
    assert {m.compression for m in shallow} == {codec}
    sent = [d for m in shallow for d in deep_messages(m)]
    name = entry["client_id"].removeprefix("golden-").encode()
    assert [(d.key, d.value) for d in sent] == [
        (b"key-%d" % i, (b"%s-%d " % (name, i)) * 8) for i in range(3)
    ]
    if magic == 1:
        assert all(d.timestamp > 1_600_000_000_000 for d in sent)
    else:
        assert {d.timestamp for d in sent} == {-1}  # magic 0 has no timestamps
    up = up_convert(records)
    header, converted = read_batch(up.batch)
    assert (header.magic, header.compression, up.records) == (2, codec, 3)
    assert [(r.key, r.value) for r in converted] == [(d.key, d.value) for d in sent]
    assert [header.base_timestamp + r.timestamp_delta for r in converted] == [
        d.timestamp for d in sent
    ]
    response = protocol.decode_response(frame(entry["response"]), ApiKey.PRODUCE, version).body
    assert [p.error_code for t in response.responses for p in t.partition_responses] == [0]


@pytest.mark.parametrize("entry", FETCHES, ids=lambda f: f["request"])
def test_fetch_is_read_by_both_decoders_and_answered_in_its_magic(entry: dict[str, Any]) -> None:
    version, magic = CLIENTS[entry["client"]]
    raw = frame(entry["request"])
    generic = protocol.decode_request(raw)
    assert generic.header.api_version == version
    lean = read_fetch_request(raw, version)
    assert lean is not None and (lean[0], lean[1]) == (generic.header, generic.body)
    body = protocol.decode_response(frame(entry["response"]), ApiKey.FETCH, version).body
    records = b"".join(bytes(p.records or b"") for t in body.responses for p in t.partitions)
    messages = [d for _, m in iter_messages(records) for d in deep_messages(m)]
    assert messages and {m.magic for m in messages} == {magic}
    offsets = [m.offset for m in messages]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
