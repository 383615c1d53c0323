"""Replication, the follower's side: replica fetchers copy the leaders' logs.

- :mod:`broker.replication.manager`: ReplicaFetcherManager, which fetcher serves which
  follower partition (``num.replica.fetchers`` per source broker);
- :mod:`broker.replication.fetcher`: one fetcher task (truncate, then fetch and append);
- :mod:`broker.replication.fetch_state`: a partition's fetch state, as a table;
- :mod:`broker.replication.fetch_request`: the Fetch a fetcher sends, encoded once per
  partition list and patched per send;
- :mod:`broker.replication.fetch_response`: the Fetch response read for what a follower
  uses;
- :mod:`broker.replication.truncation`: where a follower cuts its log before fetching
  (OffsetForLeaderEpoch, KIP-101 and KIP-279);
- :mod:`broker.replication.quota` and :mod:`broker.replication.throttle`: the
  replication throttles (Kafka's windowed rate quota; which partitions each side
  throttles, and when), used by the fetchers and by the leader's reads.
"""

from broker.replication.fetch_state import FetchEvent, FetchState, PartitionFetchState
from broker.replication.fetcher import FetcherConfig, LeaderEndpoint, ReplicaFetcher
from broker.replication.manager import ReplicaFetcherManager, resolve_leader_endpoint

__all__ = [
    "FetchEvent",
    "FetchState",
    "FetcherConfig",
    "LeaderEndpoint",
    "PartitionFetchState",
    "ReplicaFetcher",
    "ReplicaFetcherManager",
    "resolve_leader_endpoint",
]
