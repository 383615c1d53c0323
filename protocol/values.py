"""Values every package means the same way: a partition's name, the sentinel numbers the
Kafka protocol gives a special meaning, and the names of the internal topics.

They live in ``protocol`` because every other package may import it (storage, zk,
controller, client, broker and tools), so each concept has this one definition.
"""

from __future__ import annotations

from typing import Final, NamedTuple


class TopicPartition(NamedTuple):
    """A partition's name. A NamedTuple: cheap to build and hash (it keys most maps of the
    broker and the controller) and ordered by (topic, partition). ``str()`` gives Kafka's
    ``topic-partition`` spelling, which is also the partition's log directory name."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


#: A partition's leader while it has none: in partition state znodes and in
#: MetadataResponse (Kafka's LeaderAndIsr.NoLeader).
NO_LEADER: Final = -1
#: UpdateMetadata's leader for a partition of a topic being deleted: brokers drop the
#: partition from their metadata cache (Kafka's LeaderAndIsr.LeaderDuringDelete).
LEADER_DURING_DELETE: Final = -2
#: StopReplica's leader epoch for a topic being deleted: the replica stops whatever epoch it
#: has (Kafka's LeaderAndIsr.EpochDuringDelete).
EPOCH_DURING_DELETE: Final = -2

#: Topics only the broker itself writes (the group and transaction coordinators' logs).
INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state"})
#: A request that names no leader epoch (clients that do not track epochs), or a partition
#: whose epoch is unknown (Kafka's RecordBatch.NO_PARTITION_LEADER_EPOCH, LeaderAndIsr.NoEpoch).
NO_LEADER_EPOCH: Final = -1

#: Fetch and ListOffsets isolation levels.
READ_UNCOMMITTED: Final = 0
READ_COMMITTED: Final = 1

#: ListOffsets' special timestamps: the offset after the last fetchable record, the log
#: start offset, and the record with the largest timestamp (v7, KIP-734).
LATEST_TIMESTAMP: Final = -1
EARLIEST_TIMESTAMP: Final = -2
MAX_TIMESTAMP: Final = -3

#: The authorized-operations fields of Metadata and DescribeCluster when the client did not
#: ask for them (Kafka's Integer.MIN_VALUE).
AUTHORIZED_OPERATIONS_OMITTED: Final = -(2**31)
