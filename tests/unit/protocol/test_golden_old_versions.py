"""Golden frames of old versions, as kafka-python sends them to minikafka.

tests/golden/old-versions holds what kafka-python, configured for 0.8.1 to 0.11 brokers,
sent to a real minikafka broker and what the broker answered (captured by
tests/tools/capture_old_versions.py). Each request and response decodes at its version,
carries what the capture's flows put in it, and encodes back to the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import protocol
from protocol import ApiKey, ErrorCode

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "old-versions"
INDEX: dict[str, Any] = json.loads((GOLDEN / "index.json").read_text())
ENTRIES: list[dict[str, Any]] = INDEX["frames"]


def _id(entry: dict[str, Any]) -> str:
    return str(entry["request"]).removesuffix("_request.bin")


def test_the_frames_cover_the_old_versions_a_client_sends() -> None:
    captured = {(e["api_key"], e["api_version"]) for e in ENTRIES}
    assert captured >= {
        (ApiKey.METADATA, 0),
        (ApiKey.LIST_OFFSETS, 0),
        (ApiKey.OFFSET_COMMIT, 0),
        (ApiKey.OFFSET_COMMIT, 1),
        (ApiKey.OFFSET_FETCH, 0),
        (ApiKey.CREATE_TOPICS, 0),
        (ApiKey.DESCRIBE_CONFIGS, 0),
    }


@pytest.mark.parametrize("entry", ENTRIES, ids=_id)
def test_request_decodes_and_encodes_back(entry: dict[str, Any]) -> None:
    frame = (GOLDEN / entry["request"]).read_bytes()
    request = protocol.decode_request(frame)
    assert (request.api_key, request.api_version) == (entry["api_key"], entry["api_version"])
    assert request.header.client_id == entry["client_id"]
    assert protocol.encode_request(request) == frame


@pytest.mark.parametrize("entry", ENTRIES, ids=_id)
def test_response_decodes_and_encodes_back(entry: dict[str, Any]) -> None:
    frame = (GOLDEN / entry["response"]).read_bytes()
    response = protocol.decode_response(frame, entry["api_key"], entry["api_version"])
    assert protocol.encode_response(response) == frame


def _pair(api_key: int, version: int) -> tuple[Any, Any]:
    [entry] = [e for e in ENTRIES if (e["api_key"], e["api_version"]) == (api_key, version)]
    request = protocol.decode_request((GOLDEN / entry["request"]).read_bytes())
    response = protocol.decode_response((GOLDEN / entry["response"]).read_bytes(), api_key, version)
    return request.body, response.body


def test_the_flows_values_are_in_the_frames() -> None:
    commit, committed = _pair(ApiKey.OFFSET_COMMIT, 0)
    assert commit.group_id == "old-zk"
    [partition] = commit.topics[0].partitions
    assert (commit.topics[0].name, partition.committed_offset) == ("old-t", 5)
    assert committed.topics[0].partitions[0].error_code == ErrorCode.NONE
    fetch, fetched = _pair(ApiKey.OFFSET_FETCH, 0)
    assert fetch.group_id == "old-zk"
    assert fetched.topics[0].partitions[0].committed_offset == 5  # read from ZooKeeper
    _, fetched_v1 = _pair(ApiKey.OFFSET_FETCH, 1)
    assert fetched_v1.topics[0].partitions[0].committed_offset == 7
    metadata, answer = _pair(ApiKey.METADATA, 0)
    assert metadata.topics is not None  # v0 has no null: a list, empty for every topic
    assert [b.node_id for b in answer.brokers] == [0]
    _, offsets = _pair(ApiKey.LIST_OFFSETS, 0)
    assert list(offsets.topics[0].partitions[0].old_style_offsets) == [0]  # an empty log
    _, created = _pair(ApiKey.CREATE_TOPICS, 0)
    assert {t.name: t.error_code for t in created.topics} == {"old-t": 0, "old-gone": 0}
    _, described = _pair(ApiKey.DESCRIBE_CONFIGS, 0)
    entries = {c.name: c for c in described.results[0].configs}
    assert entries["retention.ms"].is_default
