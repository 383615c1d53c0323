"""Golden frames of a client configured for 0.10 brokers (kafka-python, ``api_version=(0, 10)``):
Produce v2 requests carrying magic 1 message sets, uncompressed and in gzip, lz4 and
snappy wrappers, and the Fetch v2 exchanges that read them back
(tests/tools/capture_legacy_golden.py made them; tests/golden/legacy/index.json lists
them). Each request decodes with the codec and the lean Fetch reader alike, each message
set reads and up-converts to the records the client sent, and each Fetch answer is magic 1
again, the offsets in order."""

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


def frame(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


def test_every_codec_was_captured() -> None:
    assert sorted(f["client_id"] for f in PRODUCES) == sorted(CODECS)
    assert {f["api_version"] for f in PRODUCES} == {2}
    assert FETCHES and {f["api_version"] for f in FETCHES} == {2}


@pytest.mark.parametrize("entry", PRODUCES, ids=lambda f: f["client_id"])
def test_produce_v2_carries_magic_1_message_sets(entry: dict[str, Any]) -> None:
    request = protocol.decode_request(frame(entry["request"]))
    assert (request.header.api_key, request.header.api_version) == (ApiKey.PRODUCE, 2)
    (topic,) = request.body.topic_data
    (part,) = topic.partition_data
    records = bytes(part.records)
    codec = CODECS[entry["client_id"]]
    shallow = [m for _, m in iter_messages(records)]
    assert {m.magic for m in shallow} == {1}
    assert {m.compression for m in shallow} == {codec}
    sent = [d for m in shallow for d in deep_messages(m)]
    name = entry["client_id"].removeprefix("golden-").encode()
    assert [(d.key, d.value) for d in sent] == [
        (b"key-%d" % i, (b"%s-%d " % (name, i)) * 8) for i in range(3)
    ]
    assert all(d.timestamp > 1_600_000_000_000 for d in sent)
    up = up_convert(records)
    header, converted = read_batch(up.batch)
    assert (header.magic, header.compression, up.records) == (2, codec, 3)
    assert [(r.key, r.value) for r in converted] == [(d.key, d.value) for d in sent]
    assert [header.base_timestamp + r.timestamp_delta for r in converted] == [
        d.timestamp for d in sent
    ]
    response = protocol.decode_response(frame(entry["response"]), ApiKey.PRODUCE, 2).body
    assert [p.error_code for t in response.responses for p in t.partition_responses] == [0]


@pytest.mark.parametrize("entry", FETCHES, ids=lambda f: f["request"])
def test_fetch_v2_is_read_by_both_decoders_and_answered_in_magic_1(entry: dict[str, Any]) -> None:
    raw = frame(entry["request"])
    generic = protocol.decode_request(raw)
    lean = read_fetch_request(raw, 2)
    assert lean is not None and (lean[0], lean[1]) == (generic.header, generic.body)
    body = protocol.decode_response(frame(entry["response"]), ApiKey.FETCH, 2).body
    records = b"".join(bytes(p.records or b"") for t in body.responses for p in t.partitions)
    messages = [d for _, m in iter_messages(records) for d in deep_messages(m)]
    assert messages and {m.magic for m in messages} == {1}
    offsets = [m.offset for m in messages]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
