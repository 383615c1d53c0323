"""The lean Fetch request reader makes exactly what the generic decoder makes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import message_strategy

import protocol
import protocol.api
from protocol import ApiKey, ProtocolError
from protocol.codec import MESSAGE_INFO
from protocol.fetch_reader import VERSIONS, read_fetch_request
from protocol.messages import FetchRequest

SERVED = range(
    protocol.SUPPORTED_VERSIONS[ApiKey.FETCH][0], protocol.SUPPORTED_VERSIONS[ApiKey.FETCH][1] + 1
)


def frame_of(version: int, body: FetchRequest, client_id: str | None = "replica-1") -> bytes:
    return protocol.encode_request(protocol.make_request(ApiKey.FETCH, version, 7, client_id, body))


def generic_decode(frame: bytes) -> protocol.Request:
    """decode_request without its lean readers: the generic decoder alone."""
    saved = dict(protocol.api._LEAN_READERS)
    protocol.api._LEAN_READERS.clear()
    try:
        return protocol.decode_request(frame)
    finally:
        protocol.api._LEAN_READERS.update(saved)


def follower_body(topics: dict[str, list[int]], version: int) -> FetchRequest:
    return FetchRequest(
        replica_id=2,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=10 * 1024 * 1024,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(
                topic=name,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=p,
                        current_leader_epoch=3,
                        fetch_offset=1000 + p,
                        last_fetched_epoch=2 if version >= 12 else -1,
                        log_start_offset=5,
                        partition_max_bytes=1024 * 1024,
                    )
                    for p in partitions
                ],
            )
            for name, partitions in topics.items()
        ],
        forgotten_topics_data=[],
        rack_id="rack-a" if version >= 11 else "",
    )


def test_it_knows_every_served_version() -> None:
    assert set(SERVED) <= set(VERSIONS)
    assert {v for (key, v) in protocol.api._LEAN_READERS if key == ApiKey.FETCH} == set(SERVED)


@pytest.mark.parametrize("version", SERVED)
@pytest.mark.parametrize(
    "topics",
    [{"t": [0]}, {"orders": [0, 1, 2], "é-ü": [7]}, {"t": []}, {}],
    ids=["one-partition", "several", "no-partitions", "no-topics"],
)
@pytest.mark.parametrize("client_id", ["replica-1", "", None])
def test_common_shapes_are_read_as_the_generic_decoder_reads_them(
    version: int, topics: dict[str, list[int]], client_id: str | None
) -> None:
    frame = frame_of(version, follower_body(topics, version), client_id)
    lean = read_fetch_request(frame, version)
    assert lean is not None
    expected = generic_decode(frame)
    assert lean == (expected.header, expected.body)
    assert protocol.decode_request(frame) == expected


@pytest.mark.parametrize("version", SERVED)
def test_a_consumers_fetch_is_read_too(version: int) -> None:
    body = follower_body({"a": [0, 1], "b": [3]}, version)
    body.replica_id = -1
    body.isolation_level = 1
    frame = frame_of(version, body, "rdkafka")
    lean = read_fetch_request(frame, version)
    assert lean is not None and lean[1] == generic_decode(frame).body


def test_other_shapes_are_declined_and_decoded_generically() -> None:
    version = 12
    with_forgotten = follower_body({"t": [0]}, version)
    with_forgotten.forgotten_topics_data = [FetchRequest.ForgottenTopic(topic="t", partitions=[1])]
    with_cluster_id = follower_body({"t": [0]}, version)
    with_cluster_id.cluster_id = "c1"
    with_unknown_tag = follower_body({"t": [0]}, version)
    with_unknown_tag.topics[0].partitions[0].unknown_tags = [(9, b"x")]
    long_name = follower_body({"t" * 200: [0]}, version)
    for body in (with_forgotten, with_cluster_id, with_unknown_tag, long_name):
        frame = frame_of(version, body)
        assert read_fetch_request(frame, version) is None
        assert protocol.decode_request(frame).body == body


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), version=st.sampled_from(list(SERVED)))
def test_any_fetch_request_is_decoded_as_the_generic_decoder_does(
    data: st.DataObject, version: int
) -> None:
    body = data.draw(message_strategy(MESSAGE_INFO["FetchRequest"], version))
    client_id = data.draw(st.none() | st.text(max_size=6))
    frame = frame_of(version, body, client_id)
    expected = generic_decode(frame)
    lean = read_fetch_request(frame, version)
    if lean is not None:
        assert lean == (expected.header, expected.body)
    assert protocol.decode_request(frame) == expected


def outcome(decode: object, frame: bytes) -> object:
    try:
        return decode(frame)  # type: ignore[operator]
    except ProtocolError as exc:
        return ("error", exc.error_code, exc.header)


@settings(max_examples=80, deadline=None)
@given(data=st.data(), version=st.sampled_from(list(SERVED)))
def test_a_damaged_frame_gets_the_generic_decoders_answer(
    data: st.DataObject, version: int
) -> None:
    frame = bytearray(frame_of(version, follower_body({"t": [0, 1], "u": [2]}, version)))
    cut = data.draw(st.integers(4, len(frame)))
    flips = data.draw(st.lists(st.tuples(st.integers(4, len(frame) - 1), st.integers(0, 255))))
    for at, value in flips:
        frame[at] = value
    damaged = bytes(frame[:cut])
    assert outcome(protocol.decode_request, damaged) == outcome(generic_decode, damaged)
