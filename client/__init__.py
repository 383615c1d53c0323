"""A small asyncio Kafka client on ``protocol/``, for minikafka's own tools.

Modules, one concept each:

- :mod:`.connection`   one broker connection: pipelined requests, ApiVersions negotiation,
                       pre-built requests (``PrebuiltRequest``), one-shot ``request_once``
- :mod:`.inflight`     requests in flight matched to responses by correlation id (sans-IO)
- :mod:`.versions`     the versions this client speaks; picking the highest common one
- :mod:`.cluster_view` brokers, topics, leaders from a MetadataResponse (pure)
- :mod:`.client`       ``KafkaClient``: bootstrap, a connection per broker, metadata
                       refresh, bounded retries
- :mod:`.admin`        create/alter/delete/describe topics, topic configs, DeleteRecords
- :mod:`.produce`      produce a pre-built batch; Kafka's murmur2 key partitioner
- :mod:`.fetch`        Fetch and ListOffsets; records decoded or only counted
- :mod:`.assignors`    range and roundrobin; the consumer protocol's bytes (pure)
- :mod:`.coordinator`  finding a group's coordinator; calling it with retries
- :mod:`.group`        ``GroupMember``: join, sync, heartbeat, commit, leave
- :mod:`.group_session` a one-topic consumer's positions, commits and rejoins in a group
- :mod:`.group_admin`  list, describe and delete groups; read and alter their offsets
- :mod:`.scram_admin`  describe and alter users' SCRAM credentials (salted here)
- :mod:`.console`      the console tools' line and record formats (pure)
- :mod:`.loadgen`      pre-built batches and requests for ``perf produce`` (pure)
- :mod:`.stats`        perf figures and Kafka's report lines (pure)

Product code uses no third-party Kafka client: kafka-python and confluent-kafka are test
and benchmark dependencies only.
"""

from client.admin import (
    ConfigEntry,
    DeleteRecordsResult,
    ElectionResult,
    NewTopic,
    OngoingReassignment,
    TopicResult,
    alter_partition_reassignments,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    describe_configs,
    describe_log_dirs,
    describe_topic_configs,
    describe_topics,
    elect_leaders,
    incremental_alter_configs,
    list_partition_reassignments,
)
from client.client import ClientConfig, KafkaClient, parse_bootstrap
from client.cluster_view import BrokerNode, ClusterView, PartitionInfo, TopicInfo
from client.connection import Connection, ConnectionConfig, PrebuiltRequest, request_once
from client.errors import (
    ClientError,
    ConnectionLost,
    KafkaError,
    RequestTimedOut,
    UnsupportedApi,
)
from client.fetch import (
    ConsumedRecord,
    Fetcher,
    PartitionData,
    count,
    decode,
    list_offsets,
)
from client.produce import ProduceResult, murmur2, parse_acks, partition_for_key, produce

__all__ = [
    "BrokerNode",
    "ClientConfig",
    "ClientError",
    "ClusterView",
    "ConfigEntry",
    "Connection",
    "ConnectionConfig",
    "ConnectionLost",
    "ConsumedRecord",
    "DeleteRecordsResult",
    "ElectionResult",
    "Fetcher",
    "KafkaClient",
    "KafkaError",
    "NewTopic",
    "OngoingReassignment",
    "PartitionData",
    "PartitionInfo",
    "PrebuiltRequest",
    "ProduceResult",
    "RequestTimedOut",
    "TopicInfo",
    "TopicResult",
    "UnsupportedApi",
    "alter_partition_reassignments",
    "count",
    "create_partitions",
    "create_topics",
    "decode",
    "delete_records",
    "delete_topics",
    "describe_configs",
    "describe_log_dirs",
    "describe_topic_configs",
    "describe_topics",
    "elect_leaders",
    "incremental_alter_configs",
    "list_offsets",
    "list_partition_reassignments",
    "murmur2",
    "parse_acks",
    "parse_bootstrap",
    "partition_for_key",
    "produce",
    "request_once",
]
