"""The transaction coordinator on a real 3-broker cluster, with confluent-kafka's
transactional producer, transactions switched on (``minikafka.transactions.enable``).

What runs end to end: the producer finds its coordinator (FindCoordinator
key type 1 creates ``__transaction_state`` with the transaction.state.log.* settings),
gets its producer id (InitProducerId), adds partitions as it produces transactional
batches (AddPartitionsToTxn), and commits (EndTxn): the coordinator writes PrepareCommit
to ``__transaction_state`` and answers, then its marker channel sends WriteTxnMarkers to
the partitions' leaders. Where the brokers serve WriteTxnMarkers (the leaders' handler,
built apart from the coordinator), the transaction reaches CompleteCommit; where they do
not yet, the markers are retried (the coordinator logs each failed attempt, naming the
missing API) and the transaction stays in PrepareCommit, which DescribeTransactions
shows. A second producer with the same transactional id fences the first: the open
transaction is aborted under a bumped epoch (PrepareAbort; the new producer is told
CONCURRENT_TRANSACTIONS until the abort completes, and then gets the next epoch), and
the old producer's commit is refused as fenced. A transaction left open past its timeout
is aborted by the coordinator under a bumped epoch. A leader's KIP-890 question
(AddPartitionsToTxn v4, verify only) is answered per partition.

One cluster for the module; waits poll with a deadline.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from protocol import ApiKey, ErrorCode
from protocol.messages import (
    AddPartitionsToTxnRequest,
    ApiVersionsRequest,
    DescribeTransactionsRequest,
    FindCoordinatorRequest,
    ListTransactionsRequest,
)
from tests.integration.cluster import TestCluster, start_cluster
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(240)

TOPIC = "txn-data"
APT = AddPartitionsToTxnRequest


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("txn"),
        3,
        overrides=(
            ("minikafka.transactions.enable", "true"),
            ("transaction.state.log.num.partitions", "3"),
            ("transaction.state.log.replication.factor", "3"),
            ("offsets.topic.num.partitions", "3"),
            ("transaction.marker.retry.backoff.ms", "200"),
            ("transaction.abort.timed.out.transaction.cleanup.interval.ms", "300"),
        ),
    )


@pytest.fixture(scope="module")
def bootstrap(c: TestCluster) -> str:
    servers = ",".join(f"127.0.0.1:{p}" for p in c.layout.client_ports)
    admin = AdminClient({"bootstrap.servers": servers})
    futures = admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=3)])
    futures[TOPIC].result(timeout=30)
    return servers


def producer(bootstrap: str, transactional_id: str, timeout_ms: int = 60_000) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": timeout_ms,
        }
    )


def coordinator_of(c: TestCluster, transactional_id: str, ask: int = 0) -> int:
    """The coordinator broker ``ask`` names for ``transactional_id`` once it names one."""
    body = wait_until(
        lambda: (
            b := c.request(
                ask, ApiKey.FIND_COORDINATOR, 3,
                FindCoordinatorRequest(key=transactional_id, key_type=1),
            )
        ).error_code == ErrorCode.NONE and b,
        timeout=60, what=f"the coordinator of {transactional_id}", interval=0.2,
    )  # fmt: skip
    node: int = body.node_id
    return node


def describe(c: TestCluster, broker: int, transactional_id: str) -> Any:
    body = c.request(
        broker, ApiKey.DESCRIBE_TRANSACTIONS, 0,
        DescribeTransactionsRequest(transactional_ids=[transactional_id]),
    )  # fmt: skip
    return body.transaction_states[0]


def markers_served(c: TestCluster) -> bool:
    """Whether the brokers serve WriteTxnMarkers (the leaders' side of transactions)."""
    body = c.request(0, ApiKey.API_VERSIONS, 0, ApiVersionsRequest())
    return any(k.api_key == ApiKey.WRITE_TXN_MARKERS for k in body.api_keys)


def produce_some(p: Producer, n: int = 6) -> None:
    for i in range(n):
        p.produce(TOPIC, key=str(i).encode(), value=b"v%d" % i, partition=i % 3)
    assert p.flush(30) == 0


def test_commit_reaches_prepare_commit_and_the_markers_go_out(
    c: TestCluster, bootstrap: str
) -> None:
    tid = "it-commit"
    p = producer(bootstrap, tid)
    p.init_transactions(60)
    node = coordinator_of(c, tid)
    empty = describe(c, node, tid)
    assert (empty.error_code, empty.transaction_state, empty.producer_epoch) == (0, "Empty", 0)
    p.begin_transaction()
    produce_some(p)
    ongoing = describe(c, node, tid)
    assert ongoing.transaction_state == "Ongoing"
    assert sorted((t.topic, sorted(t.partitions)) for t in ongoing.topics) == [(TOPIC, [0, 1, 2])]
    # a leader's KIP-890 question, answered by the coordinator
    verify = c.request(
        node, ApiKey.ADD_PARTITIONS_TO_TXN, 4,
        APT(transactions=[APT.AddPartitionsToTxnTransaction(
            transactional_id=tid, producer_id=ongoing.producer_id,
            producer_epoch=ongoing.producer_epoch, verify_only=True,
            topics=[APT.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0]),
                    APT.AddPartitionsToTxnTopic(name="elsewhere", partitions=[0])])]),
    )  # fmt: skip
    answered = {
        (t.name, r.partition_index): r.partition_error_code
        for t in verify.results_by_transaction[0].topic_results
        for r in t.results_by_partition
    }
    assert answered == {(TOPIC, 0): ErrorCode.NONE, ("elsewhere", 0): ErrorCode.INVALID_TXN_STATE}
    p.commit_transaction(60)
    prepared = describe(c, node, tid)
    assert prepared.transaction_state == "PrepareCommit"
    listed = c.request(
        node, ApiKey.LIST_TRANSACTIONS, 0,
        ListTransactionsRequest(state_filters=["PrepareCommit"], producer_id_filters=[]),
    )  # fmt: skip
    assert tid in [t.transactional_id for t in listed.transaction_states]
    if markers_served(c):
        wait_until(
            lambda: describe(c, node, tid).transaction_state == "CompleteCommit",
            timeout=30, what="the markers acknowledged", interval=0.2,
        )  # fmt: skip
        return
    wait_until(
        lambda: c.log_text(node).count("does not serve WriteTxnMarkers") >= 2,
        timeout=30, what="the coordinator sending (and retrying) markers", interval=0.2,
    )  # fmt: skip
    assert describe(c, node, tid).transaction_state == "PrepareCommit"


def test_a_second_producer_fences_the_first(c: TestCluster, bootstrap: str) -> None:
    tid = "it-fence"
    first = producer(bootstrap, tid)
    first.init_transactions(60)
    node = coordinator_of(c, tid)
    first.begin_transaction()
    produce_some(first, 3)
    epoch = describe(c, node, tid).producer_epoch
    second = producer(bootstrap, tid)
    if markers_served(c):
        second.init_transactions(60)  # after the abort completed
        after = describe(c, node, tid)
        assert (after.transaction_state, after.producer_epoch) == ("Empty", epoch + 2)
    else:
        with pytest.raises(KafkaException):  # CONCURRENT_TRANSACTIONS: the abort is stuck
            second.init_transactions(5)
        fenced = describe(c, node, tid)
        assert (fenced.transaction_state, fenced.producer_epoch) == ("PrepareAbort", epoch + 1)
    with pytest.raises(KafkaException) as refused:
        first.commit_transaction(30)
    assert refused.value.args[0].fatal()


def moved_off(c: TestCluster, tid: str, old: int) -> tuple[int] | None:
    """The coordinator another broker names, in a tuple (broker 0 is a falsy answer),
    once it is not ``old``."""
    node = coordinator_of(c, tid, ask=(old + 1) % 3)
    return (node,) if node != old else None


def test_markers_owed_are_resent_by_the_next_coordinator(c: TestCluster, bootstrap: str) -> None:
    tid = "it-failover"
    p = producer(bootstrap, tid)
    p.init_transactions(60)
    old = coordinator_of(c, tid)
    p.begin_transaction()
    produce_some(p, 3)
    p.commit_transaction(60)
    served = markers_served(c)
    if not served:
        assert describe(c, old, tid).transaction_state == "PrepareCommit"
    c.local.stop_broker(old)  # a controlled shutdown moves its leaderships away
    try:
        (new,) = wait_until(
            lambda: moved_off(c, tid, old),
            timeout=60, what="the coordinator to move off the stopped broker", interval=0.2,
        )  # fmt: skip
        moved = wait_until(
            lambda: (d := describe(c, new, tid)).error_code == ErrorCode.NONE and d,
            timeout=30, what="the new coordinator to load the transaction", interval=0.2,
        )  # fmt: skip
        if served:
            assert moved.transaction_state in ("PrepareCommit", "CompleteCommit")
        else:
            assert moved.transaction_state == "PrepareCommit"
            wait_until(
                lambda: f"{tid}: resuming its PrepareCommit markers" in c.log_text(new),
                timeout=30, what="the new coordinator resuming the markers", interval=0.2,
            )  # fmt: skip
    finally:
        c.restart(old)


def test_a_transaction_past_its_timeout_is_aborted(c: TestCluster, bootstrap: str) -> None:
    tid = "it-timeout"
    p = producer(bootstrap, tid, timeout_ms=2000)
    p.init_transactions(60)
    node = coordinator_of(c, tid)
    p.begin_transaction()
    produce_some(p, 3)
    epoch = describe(c, node, tid).producer_epoch
    aborted = wait_until(
        lambda: (d := describe(c, node, tid)).transaction_state in ("PrepareAbort", "CompleteAbort")
        and d,
        timeout=30, what="the coordinator aborting the timed-out transaction", interval=0.2,
    )  # fmt: skip
    assert aborted.producer_epoch == epoch + 1
    assert f"{tid}: aborting, past its timeout of 2000 ms" in c.log_text(node)
