"""API version negotiation: the highest version both the client and the broker speak.

``CLIENT_VERSIONS`` lists, per API key, the versions this client's request builders fill
in correctly (the codec can encode more; the builders decide which fields matter). A
broker advertises its ranges in ApiVersionsResponse; for each API the client uses
``min(client max, broker max)`` when that is at least both minimums.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from protocol import ApiKey

#: api key -> (min, max) this client speaks. Fetch stops at 12 (13+ name topics by id),
#: Produce starts at 3 (RecordBatch v2 only), DeleteTopics 1-6 (6 names topics in a
#: struct list instead of ``topic_names``), OffsetForLeaderEpoch starts at 3 (the first with
#: ``replica_id``: a follower's truncation asks as a replica). JoinGroup stops at 5,
#: SyncGroup at 3 and LeaveGroup at 2, the versions librdkafka itself speaks: its mock
#: cluster (the tests' other peer) misreads their later versions, and nothing those add
#: (the flexible encoding, batched leaves) matters to a consumer leaving alone.
CLIENT_VERSIONS: Final[Mapping[int, tuple[int, int]]] = {
    ApiKey.PRODUCE: (3, 9),
    ApiKey.FETCH: (4, 12),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.METADATA: (1, 12),
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.DESCRIBE_LOG_DIRS: (0, 4),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (3, 4),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.FIND_COORDINATOR: (0, 4),
    ApiKey.JOIN_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 3),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 2),
    ApiKey.OFFSET_COMMIT: (2, 8),
    ApiKey.OFFSET_FETCH: (1, 8),
    ApiKey.LIST_GROUPS: (0, 4),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    # transactions (client.transactions)
    ApiKey.WRITE_TXN_MARKERS: (0, 1),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    # ACLs (client.acls): from v1, which carries pattern types
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    # SASL (client.sasl): the handshake from v1, whose tokens travel in SaslAuthenticate
    ApiKey.SASL_HANDSHAKE: (1, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
}

#: What the first ApiVersions request uses. v3 is flexible; a broker that does not know it
#: answers UNSUPPORTED_VERSION with a v0 body listing its ranges, and we retry.
API_VERSIONS_FIRST_TRY: Final = 3


def negotiate(
    broker: Iterable[tuple[int, int, int]],
    client: Mapping[int, tuple[int, int]] = CLIENT_VERSIONS,
) -> dict[int, int]:
    """``broker``: (api_key, min, max) triples from ApiVersionsResponse. Returns api key ->
    the version to use, for each API both sides have in common; APIs without a common
    version are left out."""
    chosen: dict[int, int] = {}
    for api_key, broker_min, broker_max in broker:
        ours = client.get(api_key)
        if ours is None:
            continue
        lo = max(ours[0], broker_min)
        hi = min(ours[1], broker_max)
        if lo <= hi:
            chosen[api_key] = hi
    return chosen


def retry_version(error_ranges: Iterable[tuple[int, int, int]]) -> int | None:
    """After an UNSUPPORTED_VERSION answer to ApiVersions: the version to retry with (the
    highest ApiVersions version the broker listed that we speak), or None."""
    return negotiate(error_ranges).get(ApiKey.API_VERSIONS)
