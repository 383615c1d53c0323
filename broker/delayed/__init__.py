"""Delayed operations of the data path: produce (acks=all) and fetch (long poll).

Each is a :class:`timer.DelayedOperation` that waits in the ReplicaManager's purgatory,
watched under the topic partitions it involves (``storage.TopicPartition`` keys), and
completes once, by its condition or its timeout, through the callback it was given.
"""

from broker.delayed.fetch import DelayedFetch, FetchParams, FetchPartitionResult, PartitionFetchInfo
from broker.delayed.produce import DelayedProduce, ProducePartitionResult, ProducePartitionStatus

__all__ = [
    "DelayedFetch",
    "DelayedProduce",
    "FetchParams",
    "FetchPartitionResult",
    "PartitionFetchInfo",
    "ProducePartitionResult",
    "ProducePartitionStatus",
]
