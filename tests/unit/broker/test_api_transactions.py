"""The transaction APIs' handlers over a fake coordinator: the switch (off: refused as
before), FindCoordinator key type 1, InitProducerId with a transactional id,
AddPartitionsToTxn v0-4 (v4 verify-only batches), AddOffsetsToTxn, EndTxn, PRODUCER_FENCED
per version (INVALID_PRODUCER_EPOCH below it), DescribeTransactions and ListTransactions."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import pytest

import protocol
from broker.apis import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    describe_transactions,
    end_txn,
    find_coordinator,
    init_producer_id,
    list_transactions,
)
from broker.metadata_cache import MetadataCache
from broker.txn import SWITCH_KEY
from broker.txn.coordinator import InitResult
from broker.txn.model import TxnMetadata
from broker.txn.states import TxnState
from broker.txn.topic import TRANSACTION_TOPIC, txn_partition_for
from protocol import ApiKey, ErrorCode
from protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListTransactionsRequest,
    UpdateMetadataRequest,
)
from protocol.values import TopicPartition
from tests.unit.broker.broker_helpers import HandlerRequest
from tests.unit.broker.handler_services import handler_services

U = UpdateMetadataRequest
APT = AddPartitionsToTxnRequest
PARTITIONS = 4
ON = {SWITCH_KEY: "true"}
T0 = TopicPartition("t", 0)


class FakeStore:
    def __init__(self) -> None:
        self.loading_partitions: frozenset[int] = frozenset()

    def partition_for(self, tid: str) -> int:
        return txn_partition_for(tid, PARTITIONS)


class FakeTxns:
    """Answers every call with ``error``, recording it."""

    def __init__(self) -> None:
        self.error: int = ErrorCode.NONE
        self.calls: list[tuple[Any, ...]] = []
        self.topic_requests = 0
        self.store = FakeStore()
        self.metas: dict[str, TxnMetadata] = {}

    def request_topic(self) -> None:
        self.topic_requests += 1

    async def init_producer_id(
        self, tid: str, timeout_ms: int, expected: tuple[int, int] | None
    ) -> InitResult:
        self.calls.append(("init", tid, timeout_ms, expected))
        if self.error:
            return InitResult(self.error)
        return InitResult(ErrorCode.NONE, 900, 3)

    async def add_partitions(
        self, tid: str, pid: int, epoch: int, tps: Collection[TopicPartition]
    ) -> dict[TopicPartition, int]:
        self.calls.append(("add", tid, pid, epoch, sorted(tps)))
        return dict.fromkeys(tps, self.error)

    def verify_partitions(
        self, tid: str, pid: int, epoch: int, tps: Collection[TopicPartition]
    ) -> dict[TopicPartition, int]:
        self.calls.append(("verify", tid, pid, epoch, sorted(tps)))
        return {tp: ErrorCode.NONE if tp == T0 else ErrorCode.INVALID_TXN_STATE for tp in tps}

    async def add_offsets(self, tid: str, pid: int, epoch: int, group: str) -> int:
        self.calls.append(("offsets", tid, pid, epoch, group))
        return self.error

    async def end_txn(self, tid: str, pid: int, epoch: int, commit: bool) -> int:
        self.calls.append(("end", tid, pid, epoch, commit))
        return self.error

    def describe(self, tid: str) -> tuple[int, TxnMetadata | None]:
        meta = self.metas.get(tid)
        return (ErrorCode.NONE, meta) if meta else (ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None)

    def list(self, states: Collection[TxnState], pids: Collection[int]) -> list[TxnMetadata]:
        return [m for m in self.metas.values() if (not states or m.state in states)]


def services(props: dict[str, str], cache: MetadataCache | None = None) -> tuple[Any, FakeTxns]:
    txns = FakeTxns()
    return handler_services(props=props, txn_coordinator=txns, metadata_cache=cache), txns


async def call(
    handle: Callable[[Any, Any], Awaitable[Any]], ctx: Any, api: int, version: int, body: Any
) -> Any:
    request = protocol.make_request(api, version, 1, "c", body)
    decoded = protocol.decode_request(protocol.encode_request(request))
    response = await handle(ctx, decoded)
    frame = protocol.encode_response(response)
    return protocol.decode_response(frame, api, version).body


def add_v3(**kw: Any) -> APT:
    return APT(
        v3_and_below_transactional_id="tx",
        v3_and_below_producer_id=900,
        v3_and_below_producer_epoch=3,
        v3_and_below_topics=[APT.AddPartitionsToTxnTopic(name="t", partitions=[0, 1])],
        **kw,
    )


def errors_v3(body: Any) -> dict[TopicPartition, int]:
    return {
        TopicPartition(t.name, p.partition_index): p.partition_error_code
        for t in body.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


async def test_switch_off_refuses_every_transactional_call() -> None:
    s, txns = services({"minikafka.transactions.enable": "false"})
    refused = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    init = await call(
        init_producer_id.handle,
        s.producer_ids,
        ApiKey.INIT_PRODUCER_ID,
        4,
        InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=1000),
    )
    assert init.error_code == refused
    added = await call(
        add_partitions_to_txn.handle, s.transactions, ApiKey.ADD_PARTITIONS_TO_TXN, 3, add_v3()
    )
    assert set(errors_v3(added).values()) == {refused}
    end = await call(
        end_txn.handle,
        s.transactions,
        ApiKey.END_TXN,
        3,
        EndTxnRequest(transactional_id="tx", producer_id=1, producer_epoch=0, committed=True),
    )
    assert end.error_code == refused
    found = await find_coordinator.handle(
        s.groups,
        HandlerRequest(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="tx", key_type=1)),
    )
    assert found.body.error_code == refused
    assert txns.calls == [] and txns.topic_requests == 0


@pytest.mark.parametrize(
    ("version", "error"), [(3, ErrorCode.INVALID_PRODUCER_EPOCH), (4, ErrorCode.PRODUCER_FENCED)]
)
async def test_init_producer_id_goes_to_the_coordinator(version: int, error: int) -> None:
    s, txns = services(ON)
    body = InitProducerIdRequest(
        transactional_id="tx", transaction_timeout_ms=1000, producer_id=900, producer_epoch=2
    )
    answer = await call(
        init_producer_id.handle, s.producer_ids, ApiKey.INIT_PRODUCER_ID, version, body
    )
    assert (answer.error_code, answer.producer_id, answer.producer_epoch) == (0, 900, 3)
    assert txns.calls == [("init", "tx", 1000, (900, 2))]
    txns.error = ErrorCode.PRODUCER_FENCED
    fenced = await call(
        init_producer_id.handle, s.producer_ids, ApiKey.INIT_PRODUCER_ID, version, body
    )
    assert fenced.error_code == error


@pytest.mark.parametrize(
    ("version", "error"), [(1, ErrorCode.INVALID_PRODUCER_EPOCH), (2, ErrorCode.PRODUCER_FENCED)]
)
async def test_fenced_per_version(version: int, error: int) -> None:
    s, txns = services(ON)
    txns.error = ErrorCode.PRODUCER_FENCED
    added = await call(
        add_partitions_to_txn.handle,
        s.transactions,
        ApiKey.ADD_PARTITIONS_TO_TXN,
        version,
        add_v3(),
    )
    assert errors_v3(added) == {T0: error, TopicPartition("t", 1): error}
    offsets = await call(
        add_offsets_to_txn.handle,
        s.transactions,
        ApiKey.ADD_OFFSETS_TO_TXN,
        version,
        AddOffsetsToTxnRequest(
            transactional_id="tx", producer_id=900, producer_epoch=3, group_id="g"
        ),
    )
    assert offsets.error_code == error
    end = await call(
        end_txn.handle,
        s.transactions,
        ApiKey.END_TXN,
        version,
        EndTxnRequest(transactional_id="tx", producer_id=900, producer_epoch=3, committed=False),
    )
    assert end.error_code == error
    assert [c[0] for c in txns.calls] == ["add", "offsets", "end"]
    assert txns.calls[2] == ("end", "tx", 900, 3, False)


async def test_add_partitions_v4_batches_and_verifies() -> None:
    s, txns = services(ON)
    body = APT(
        transactions=[
            APT.AddPartitionsToTxnTransaction(
                transactional_id="a",
                producer_id=1,
                producer_epoch=0,
                verify_only=True,
                topics=[APT.AddPartitionsToTxnTopic(name="t", partitions=[0, 1])],
            ),
            APT.AddPartitionsToTxnTransaction(
                transactional_id="b",
                producer_id=2,
                producer_epoch=0,
                verify_only=False,
                topics=[APT.AddPartitionsToTxnTopic(name="t", partitions=[0])],
            ),
        ]
    )
    answer = await call(
        add_partitions_to_txn.handle, s.transactions, ApiKey.ADD_PARTITIONS_TO_TXN, 4, body
    )
    assert answer.error_code == 0
    results = {
        r.transactional_id: {
            TopicPartition(t.name, p.partition_index): p.partition_error_code
            for t in r.topic_results
            for p in t.results_by_partition
        }
        for r in answer.results_by_transaction
    }
    assert results == {
        "a": {T0: ErrorCode.NONE, TopicPartition("t", 1): ErrorCode.INVALID_TXN_STATE},
        "b": {T0: ErrorCode.NONE},
    }
    assert [c[0] for c in txns.calls] == ["verify", "add"]


def transaction_topic(cache: MetadataCache, leaders: list[int]) -> None:
    endpoint = U.UpdateMetadataEndpoint(
        port=9092, host="h", listener="PLAINTEXT", security_protocol=0
    )
    cache.update_metadata(
        U(
            controller_id=0,
            controller_epoch=1,
            topic_states=[
                U.UpdateMetadataTopicState(
                    topic_name=TRANSACTION_TOPIC,
                    topic_id=uuid.uuid4(),
                    partition_states=[
                        U.UpdateMetadataPartitionState(
                            partition_index=p,
                            controller_epoch=1,
                            leader=leader,
                            leader_epoch=0,
                            isr=[0],
                            zk_version=0,
                            replicas=[0],
                        )
                        for p, leader in enumerate(leaders)
                    ],
                )
            ],
            live_brokers=[U.UpdateMetadataBroker(id=0, endpoints=[endpoint])],
        )
    )


async def test_find_coordinator_for_a_transactional_id() -> None:
    cache = MetadataCache(0)
    s, txns = services(ON, cache)
    request = HandlerRequest(
        ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="tx", key_type=1)
    )
    missing = (await find_coordinator.handle(s.groups, request)).body
    assert missing.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert txns.topic_requests == 1
    leaders = [-1] * PARTITIONS
    leaders[txn_partition_for("tx", PARTITIONS)] = 0
    transaction_topic(cache, leaders)
    found = (await find_coordinator.handle(s.groups, request)).body
    assert (found.error_code, found.node_id, found.host, found.port) == (0, 0, "h", 9092)
    other = next(t for i in range(100) if leaders[txn_partition_for(t := f"x{i}", PARTITIONS)] < 0)
    request = HandlerRequest(
        ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key=other, key_type=1)
    )
    assert (await find_coordinator.handle(s.groups, request)).body.error_code == (
        ErrorCode.COORDINATOR_NOT_AVAILABLE
    )


async def test_describe_and_list() -> None:
    s, txns = services(ON)
    meta = TxnMetadata(
        "tx",
        producer_id=900,
        producer_epoch=3,
        timeout_ms=5000,
        state=TxnState.ONGOING,
        partitions={T0},
        start_ms=77,
    )
    txns.metas["tx"] = meta
    described = await call(
        describe_transactions.handle,
        s.transactions,
        ApiKey.DESCRIBE_TRANSACTIONS,
        0,
        DescribeTransactionsRequest(transactional_ids=["tx", "nope"]),
    )
    tx, nope = described.transaction_states
    assert (tx.error_code, tx.transaction_state, tx.producer_id, tx.producer_epoch) == (
        0,
        "Ongoing",
        900,
        3,
    )
    assert (tx.transaction_timeout_ms, tx.transaction_start_time_ms) == (5000, 77)
    assert [(t.topic, t.partitions) for t in tx.topics] == [("t", [0])]
    assert nope.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    listed = await call(
        list_transactions.handle,
        s.transactions,
        ApiKey.LIST_TRANSACTIONS,
        0,
        ListTransactionsRequest(state_filters=["Ongoing", "Bogus"], producer_id_filters=[]),
    )
    assert listed.unknown_state_filters == ["Bogus"]
    assert [(t.transactional_id, t.transaction_state) for t in listed.transaction_states] == [
        ("tx", "Ongoing")
    ]
    txns.store.loading_partitions = frozenset({1})
    loading = await call(
        list_transactions.handle,
        s.transactions,
        ApiKey.LIST_TRANSACTIONS,
        0,
        ListTransactionsRequest(state_filters=[], producer_id_filters=[]),
    )
    assert loading.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


async def test_find_coordinator_v4_batches_transactional_ids() -> None:
    cache = MetadataCache(0)
    s, _ = services(ON, cache)
    leaders = [0] * PARTITIONS
    transaction_topic(cache, leaders)
    body = FindCoordinatorRequest(key_type=1, coordinator_keys=["a", "b"])
    answer = (
        await find_coordinator.handle(s.groups, HandlerRequest(ApiKey.FIND_COORDINATOR, 4, body))
    ).body
    assert [(c.key, c.error_code, c.node_id, c.port) for c in answer.coordinators] == [
        ("a", 0, 0, 9092),
        ("b", 0, 0, 9092),
    ]
