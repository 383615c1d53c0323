"""Fetched record bytes: decoding from an offset, control batches, partial tails, counts."""

from __future__ import annotations

from client.fetch import count, decode, fetch_body, read_fetch_response
from protocol.messages import FetchResponse
from protocol.records.builder import build_batch
from protocol.records.control import ControlType, control_record
from tests.records import record_batch


def batch(base: int, n: int, *, control: bool = False) -> bytes:
    return record_batch(
        n, key=lambda i: b"k%d" % i, value=lambda i: b"v%d" % (base + i), headers=[("h", b"x")],
        base_offset=base, is_control=control,
    )  # fmt: skip


def test_decode_skips_offsets_before_the_position_and_control_batches() -> None:
    data = batch(0, 3) + batch(3, 1, control=True) + batch(4, 2)
    records, next_offset = decode("t", 5, data, 2)
    assert [(r.offset, r.value) for r in records] == [(2, b"v2"), (4, b"v4"), (5, b"v5")]
    assert next_offset == 6
    first = records[0]
    assert (first.topic, first.partition, first.key, first.headers) == (
        "t",
        5,
        b"k2",
        [("h", b"x")],
    )
    assert first.timestamp == 1002 and not first.log_append_time


def test_a_partial_last_batch_is_left_for_the_next_fetch() -> None:
    whole = batch(0, 2)
    cut = batch(2, 2)[:-5]
    records, next_offset = decode("t", 0, whole + cut, 0)
    assert len(records) == 2 and next_offset == 2
    counted = count(whole + cut)
    assert (counted.records, counted.bytes, counted.next_offset) == (2, len(whole), 2)
    assert count(b"").next_offset is None and decode("t", 0, b"", 0) == ([], None)


def test_fetch_body_and_response_reading() -> None:
    body = fetch_body("t", {1: 5, 0: 7}, max_wait_ms=100, min_bytes=1, max_bytes=10,
                      partition_max_bytes=5)  # fmt: skip
    assert [(p.partition, p.fetch_offset) for p in body.topics[0].partitions] == [(0, 7), (1, 5)]
    assert body.session_id == 0 and body.session_epoch == -1
    response = FetchResponse(
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic="t",
                partitions=[
                    FetchResponse.PartitionData(partition_index=0, high_watermark=9, records=None)
                ],
            )
        ]
    )
    data = read_fetch_response(response, "t")
    assert data[0].records == b"" and data[0].high_watermark == 9


def test_decode_drops_the_aborted_transactions_up_to_their_abort_marker() -> None:
    def txn(pid: int, base: int, value: bytes) -> bytes:
        return record_batch(1, value=value, base_offset=base, producer_id=pid, producer_epoch=0,
                            base_sequence=base, is_transactional=True)  # fmt: skip

    def marker(pid: int, base: int, commit: bool) -> bytes:
        kind = ControlType.COMMIT if commit else ControlType.ABORT
        return bytes(
            build_batch([control_record(kind, 0, 1)], base_offset=base, producer_id=pid,
                        producer_epoch=0, is_transactional=True, is_control=True)
        )  # fmt: skip

    data = (
        txn(1, 0, b"aborted")  # producer 1's transaction, aborted at 3
        + txn(2, 1, b"committed")  # producer 2's, committed at 4
        + record_batch(1, value=b"plain", base_offset=2)
        + marker(1, 3, commit=False)
        + marker(2, 4, commit=True)
        + txn(1, 5, b"again")  # producer 1's next transaction: not listed, kept
    )
    records, next_offset = decode("t", 0, data, 0, [(1, 0)])
    assert [r.value for r in records] == [b"committed", b"plain", b"again"]
    assert next_offset == 6
    everything, _ = decode("t", 0, data, 0)
    assert [r.value for r in everything] == [b"aborted", b"committed", b"plain", b"again"]
