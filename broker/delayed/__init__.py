"""Delayed operations of the data path: produce (acks=all), fetch (long poll) and
DeleteRecords (every live replica moved its log start).

Each is a :class:`timer.DelayedOperation` that waits in the ReplicaManager's purgatory,
watched under the topic partitions it involves (``storage.TopicPartition`` keys), and
completes once, by its condition or its timeout, through the callback it was given.
"""

from broker.delayed.delete_records import (
    DelayedDeleteRecords,
    DeleteRecordsPartitionResult,
    DeleteRecordsPartitionStatus,
)
from broker.delayed.fetch import DelayedFetch, FetchParams, FetchPartitionResult, PartitionFetchInfo
from broker.delayed.produce import DelayedProduce, ProducePartitionResult, ProducePartitionStatus

__all__ = [
    "DelayedDeleteRecords",
    "DelayedFetch",
    "DelayedProduce",
    "DeleteRecordsPartitionResult",
    "DeleteRecordsPartitionStatus",
    "FetchParams",
    "FetchPartitionResult",
    "PartitionFetchInfo",
    "ProducePartitionResult",
    "ProducePartitionStatus",
]
