"""Codec throughput: decode+encode per second.

    .venv/bin/python tests/bench/bench_protocol.py [--quick]

- Produce v9 request carrying one 1 KiB batch vs one 1 MiB batch. Decoding must cost the
  same for both (the batch is a memoryview of the frame: neither copied nor parsed).
  Encoding to one ``bytes`` copies the batch once (a memcpy, shown as the baseline).
- Metadata v12 response for 100 topics x 10 partitions (3 replicas each), beside the
  same object's msgspec msgpack round trip as a baseline for "a C codec of this shape".
- Fetch v12 response of 50 partitions whose records are file regions (the broker's
  sendfile path): encode_response_parts per second.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import msgspec

import protocol
from protocol.messages import FetchResponse, MetadataResponse, ProduceRequest


def _calibrate(fn: Callable[[], object], seconds: float) -> int:
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed > seconds / 20:
            return max(1, int(n * (seconds / 5) / elapsed))
        n *= 2


def rates(fns: list[Callable[[], object]], seconds: float) -> list[float]:
    """Calls per second of each function, best of five rounds. Rounds of the functions
    are interleaved so that load from other processes (a shared 2-core machine) hits
    them alike."""
    counts = [_calibrate(fn, seconds) for fn in fns]
    best = [0.0] * len(fns)
    for _ in range(5):
        for i, (fn, n) in enumerate(zip(fns, counts)):
            start = time.perf_counter()
            for _ in range(n):
                fn()
            best[i] = max(best[i], n / (time.perf_counter() - start))
    return best


def produce_frame(batch_size: int) -> bytes:
    body = ProduceRequest(
        acks=-1,
        timeout_ms=30000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="bench",
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, records=b"\xab" * batch_size)
                ],
            )
        ],
    )
    return protocol.encode_request(protocol.make_request(0, 9, 1, "bench", body))


def metadata_response() -> protocol.Response:
    M = MetadataResponse
    brokers = [M.MetadataResponseBroker(node_id=i, host=f"broker-{i}", port=9092) for i in range(3)]
    topics = [
        M.MetadataResponseTopic(
            name=f"topic-{t:03d}",
            topic_id=uuid.UUID(int=t + 1),
            partitions=[
                M.MetadataResponsePartition(
                    partition_index=p,
                    leader_id=p % 3,
                    leader_epoch=5,
                    replica_nodes=[p % 3, (p + 1) % 3, (p + 2) % 3],
                    isr_nodes=[p % 3, (p + 1) % 3, (p + 2) % 3],
                )
                for p in range(10)
            ],
        )
        for t in range(100)
    ]
    body = M(brokers=brokers, cluster_id="bench-cluster", controller_id=0, topics=topics)
    return protocol.Response(protocol.ResponseHeader(correlation_id=1), body, 3, 12)


class Region:
    """Stands in for storage.FileRegion: records the broker sends with sendfile."""

    def __len__(self) -> int:
        return 65536


def fetch_response() -> protocol.Response:
    F = FetchResponse
    topics = [
        F.FetchableTopicResponse(
            topic=f"topic-{t}",
            partitions=[
                F.PartitionData(partition_index=p, high_watermark=1000, records=Region())
                for p in range(10)
            ],
        )
        for t in range(5)
    ]
    body = F(responses=topics)
    return protocol.Response(protocol.ResponseHeader(correlation_id=1), body, 1, 12)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    args = parser.parse_args()
    seconds = 0.6 if args.quick else 2.0

    print("Produce v9 request, one batch (ops/s, best of 5):")
    small, large = produce_frame(1024), produce_frame(1024 * 1024)
    for frame in (small, large):
        assert protocol.encode_request(protocol.decode_request(frame)) == frame
    results = rates(
        [
            lambda: protocol.decode_request(small),
            lambda: protocol.decode_request(large),
            lambda: protocol.encode_request(protocol.decode_request(small)),
            lambda: protocol.encode_request(protocol.decode_request(large)),
            lambda: bytearray(small),
            lambda: bytearray(large),
        ],
        seconds,
    )
    for i, label in enumerate(("1 KiB", "1 MiB")):
        print(
            f"  {label}: decode {results[i]:>10,.0f}   decode+encode {results[2 + i]:>10,.0f}"
            f"   baseline: one copy of the frame {results[4 + i]:>10,.0f}"
        )
    ratio = results[0] / results[1]
    print(f"  decode 1 KiB / decode 1 MiB = {ratio:.2f} (1.0: the batch is not copied or parsed)")

    response = metadata_response()
    frame = protocol.encode_response(response)
    assert protocol.decode_response(frame, 3, 12) == response
    body = response.body
    packed = msgspec.msgpack.encode(body)
    decode, encode, both, base = rates(
        [
            lambda: protocol.decode_response(frame, 3, 12),
            lambda: protocol.encode_response(response),
            lambda: protocol.encode_response(protocol.decode_response(frame, 3, 12)),
            lambda: msgspec.msgpack.encode(msgspec.msgpack.decode(packed, type=type(body))),
        ],
        seconds,
    )
    print(f"Metadata v12 response, 100 topics x 10 partitions ({len(frame):,} bytes):")
    print(f"  decode {decode:,.0f}/s   encode {encode:,.0f}/s   decode+encode {both:,.0f}/s")
    print(f"  baseline: msgspec msgpack decode+encode of the same object {base:,.0f}/s")

    fetch = fetch_response()
    parts = protocol.encode_response_parts(fetch)
    assert sum(1 for part in parts if isinstance(part, Region)) == 50
    (parts_rate,) = rates([lambda: protocol.encode_response_parts(fetch)], seconds)
    print("Fetch v12 response, 5 topics x 10 partitions, records as sendfile regions:")
    print(f"  encode_response_parts {parts_rate:,.0f}/s ({len(parts)} pieces)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
