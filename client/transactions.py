"""Transaction administration: what ``kafka-transactions`` asks of the cluster.

- ``describe_producers``: DescribeProducers to a partition's leader (or a named broker):
  the producers its log knows, with the first offset of each one's open transaction.
- ``abort_transaction``: WriteTxnMarkers with one ABORT marker to a partition's leader,
  as Kafka's admin abortTransaction does for a hanging transaction (a producer whose
  transaction the coordinator has forgotten, holding the partition's last stable
  offset back). The marker names the producer's id and epoch and a coordinator epoch
  at least the one the partition last saw, or the leader refuses it.
- ``list_transactions``: ListTransactions to every broker (each coordinator lists its
  own transactional ids).
- ``describe_transaction``: DescribeTransactions to the transactional id's coordinator
  (FindCoordinator with key type 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from client.client import KafkaClient
from client.coordinator import find_coordinator
from client.errors import KafkaError
from protocol import ApiKey, ErrorCode
from protocol.messages import (
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    ListTransactionsRequest,
    WriteTxnMarkersRequest,
)
from protocol.values import TopicPartition

#: FindCoordinator's key type of a transactional id
TRANSACTION_KEY_TYPE: Final = 1
#: API keys of the coordinator's describe and list (served by broker.txn), asked at v0
#: (their only version) without negotiation
DESCRIBE_TRANSACTIONS: Final = 65
LIST_TRANSACTIONS: Final = 66


@dataclass(frozen=True, slots=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


@dataclass(frozen=True, slots=True)
class TransactionListing:
    transactional_id: str
    coordinator: int
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    coordinator: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    start_time_ms: int
    partitions: tuple[TopicPartition, ...]


async def _leader(client: KafkaClient, tp: TopicPartition) -> int:
    view = await client.refresh_metadata([tp.topic])
    topic = view.topics.get(tp.topic)
    if topic is None or topic.error_code != ErrorCode.NONE or tp.partition not in topic.partitions:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(tp))
    return view.leader(tp.topic, tp.partition)


async def describe_producers(
    client: KafkaClient, tp: TopicPartition, broker_id: int | None = None
) -> list[ProducerState]:
    """The producers ``tp``'s leader (or ``broker_id``) knows; KafkaError on an error."""
    node = await _leader(client, tp) if broker_id is None else broker_id
    body = DescribeProducersRequest(
        topics=[
            DescribeProducersRequest.TopicRequest(name=tp.topic, partition_indexes=[tp.partition])
        ]
    )
    response = await client.request(node, ApiKey.DESCRIBE_PRODUCERS, body)
    for t in response.topics:
        for p in t.partitions:
            if p.error_code != ErrorCode.NONE:
                raise KafkaError(p.error_code, f"{tp}: {p.error_message or ''}")
            return [
                ProducerState(
                    s.producer_id,
                    s.producer_epoch,
                    s.last_sequence,
                    s.last_timestamp,
                    s.coordinator_epoch,
                    s.current_txn_start_offset,
                )
                for s in p.active_producers
            ]
    raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{tp}: no answer for the partition")


async def abort_transaction(
    client: KafkaClient,
    tp: TopicPartition,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
) -> None:
    """Write an ABORT marker for the producer's transaction to ``tp``'s leader."""
    node = await _leader(client, tp)
    marker = WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transaction_result=False,
        topics=[
            WriteTxnMarkersRequest.WritableTxnMarkerTopic(
                name=tp.topic, partition_indexes=[tp.partition]
            )
        ],
        coordinator_epoch=coordinator_epoch,
    )
    response = await client.request(
        node, ApiKey.WRITE_TXN_MARKERS, WriteTxnMarkersRequest(markers=[marker])
    )
    for m in response.markers:
        for t in m.topics:
            for p in t.partitions:
                if p.error_code != ErrorCode.NONE:
                    raise KafkaError(p.error_code, f"aborting producer {producer_id} on {tp}")


async def list_transactions(client: KafkaClient) -> list[TransactionListing]:
    """Every coordinator's transactional ids."""
    view = await client.refresh_metadata([])
    out: list[TransactionListing] = []
    body = ListTransactionsRequest(state_filters=[], producer_id_filters=[])

    def build(_: int) -> ListTransactionsRequest:
        return body

    for node in sorted(view.brokers):
        response = await client.request(node, LIST_TRANSACTIONS, build, version=0)
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(response.error_code, f"ListTransactions on broker {node}")
        out.extend(
            TransactionListing(s.transactional_id, node, s.producer_id, s.transaction_state)
            for s in response.transaction_states
        )
    return out


async def describe_transaction(
    client: KafkaClient, transactional_id: str
) -> TransactionDescription:
    """The coordinator's view of ``transactional_id``'s transaction."""
    node = await find_coordinator(client, transactional_id, TRANSACTION_KEY_TYPE)
    body = DescribeTransactionsRequest(transactional_ids=[transactional_id])
    response = await client.request(node, DESCRIBE_TRANSACTIONS, lambda _: body, version=0)
    for s in response.transaction_states:
        if s.error_code != ErrorCode.NONE:
            raise KafkaError(s.error_code, transactional_id)
        return TransactionDescription(
            node,
            s.transactional_id,
            s.producer_id,
            s.producer_epoch,
            s.transaction_state,
            s.transaction_timeout_ms,
            s.transaction_start_time_ms,
            tuple(TopicPartition(t.topic, p) for t in s.topics for p in t.partitions),
        )
    raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"no description of {transactional_id}")
