"""A small recording fake broker, built on kafka-python's protocol classes (test tool).

It answers what librdkafka's mock cluster does not implement (admin APIs, DescribeGroups,
ListGroups, DeleteRecords, SASL) or not at the version a client picks (ApiVersions v3+, the
newest group-coordinator versions, OffsetForLeaderEpoch v3+ which it asks the mock as v2).
Answers are plausible and consistent enough that the real clients carry on with their normal
flow; they are not a broker:

- topics created here are also created in the mock (by an auto-creating Metadata request on
  a side connection), so produce/fetch against the mock find them;
- the group coordinator is a single-round one: every JoinGroup completes at once with the
  joining member as leader, which is all a one-consumer-per-group flow needs;
- committed offsets are kept in a dict.

Responses are built from plain dicts (``build``), so a field-name slip raises at once.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka.protocol.metadata import MetadataRequest

from tests.tools import kp

# Kafka error codes used by the fake (names as in Kafka).
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
UNSUPPORTED_VERSION = 35
TOPIC_ALREADY_EXISTS = 36
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
UNSUPPORTED_SASL_MECHANISM = 33
SASL_AUTHENTICATION_FAILED = 58
MEMBER_ID_REQUIRED = 79

OFFSET_FOR_LEADER_EPOCH = 23

# The mock cluster creates topics with this many partitions (librdkafka's default).
MOCK_DEFAULT_PARTITIONS = 4
NODE_ID = 1


def build(cls: Any, version: int, values: dict[str, Any]) -> Any:
    """A kafka-python message or nested struct from a dict of snake_case field values."""
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        spec = cls._struct.fields[name]
        if not spec.for_version_q(version):
            continue  # lets one dict serve every version of a message
        if spec.is_struct_array() and value is not None:
            value = [
                build(spec.data_class, version, v) if isinstance(v, dict) else v for v in value
            ]
        elif spec.is_struct() and isinstance(value, dict):
            value = build(spec.data_class, version, value)
        kwargs[name] = value
    return cls(version=version, **kwargs)


@dataclass
class Group:
    generation: int = 0
    protocol_type: str = "consumer"
    protocol_name: str = ""
    leader: str = ""
    members: dict[str, bytes] = field(default_factory=dict)  # member id -> metadata
    assignments: dict[str, bytes] = field(default_factory=dict)
    client_ids: dict[str, str] = field(default_factory=dict)


class FakeBroker:
    def __init__(
        self,
        advertised: dict[int, tuple[int, int]],
        mock_address: tuple[str, int],
        cluster_id: str,
        proxy_port: Callable[[], int],
        io_timeout: float = 10.0,
    ) -> None:
        self.advertised = advertised
        self.mock_address = mock_address
        self.cluster_id = cluster_id
        self.proxy_port = proxy_port
        self.io_timeout = io_timeout
        self.topics: dict[str, tuple[uuid.UUID, int]] = {}
        self.groups: dict[str, Group] = {}
        self.offsets: dict[tuple[str, str, int], tuple[int, int, str | None]] = {}
        self._member_ids = itertools.count(1)
        self._handlers: dict[int, Callable[[Any, int, Any], dict[str, Any]]] = {
            8: self._offset_commit,
            9: self._offset_fetch,
            10: self._find_coordinator,
            11: self._join_group,
            12: self._heartbeat,
            13: self._leave_group,
            14: self._sync_group,
            15: self._describe_groups,
            16: self._list_groups,
            17: self._sasl_handshake,
            19: self._create_topics,
            20: self._delete_topics,
            21: self._delete_records,
            32: self._describe_configs,
            36: self._sasl_authenticate,
            37: self._create_partitions,
            60: self._describe_cluster,
        }

    # -- entry point ----------------------------------------------------------------------

    async def handle(self, header: kp.FrameHeader, frame: bytes) -> bytes | None:
        version = header.api_version
        if header.api_key == kp.API_VERSIONS_KEY:
            return self._api_versions(header)
        request = kp.decode_request(frame)
        if header.api_key == kp.PRODUCE_KEY and request.acks == 0:
            return None
        handler = self._handlers.get(header.api_key)
        if header.api_key == OFFSET_FOR_LEADER_EPOCH:
            values = await self._offset_for_leader_epoch(request, version)
        elif handler is None:
            raise ValueError(f"fake broker cannot answer api {header.api_key} v{version}")
        else:
            values = handler(request, version, header)
        if header.api_key == 19:
            await self._create_in_mock(
                [t["name"] for t in values["topics"] if t["error_code"] == NONE]
            )
        body = build(kp.RESPONSE_CLASSES[header.api_key], version, values)
        return bytes(kp.encode_response(body, header.correlation_id, version))

    # -- ApiVersions --------------------------------------------------------------------

    def _api_versions(self, header: kp.FrameHeader) -> bytes:
        cls = kp.RESPONSE_CLASSES[kp.API_VERSIONS_KEY]
        top = self.advertised[kp.API_VERSIONS_KEY][1]
        if header.api_version > top:
            # Answered from the header alone, with a v0 body: Kafka lists only its own
            # ApiVersions range so the client can retry with a version both understand.
            values: dict[str, Any] = {
                "error_code": UNSUPPORTED_VERSION,
                "api_keys": [
                    {"api_key": kp.API_VERSIONS_KEY, "min_version": 0, "max_version": top}
                ],
            }
            return bytes(kp.encode_response(build(cls, 0, values), header.correlation_id, 0))
        values = {"error_code": NONE, "api_keys": api_table(self.advertised)}
        if header.api_version >= 1:
            values["throttle_time_ms"] = 0
        body = build(cls, header.api_version, values)
        return bytes(kp.encode_response(body, header.correlation_id, header.api_version))

    # -- SASL: PLAIN, any user and password --------------------------------------------

    def _sasl_handshake(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        error = NONE if req.mechanism == "PLAIN" else UNSUPPORTED_SASL_MECHANISM
        return {"error_code": error, "mechanisms": ["PLAIN"]}

    def _sasl_authenticate(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        # PLAIN's token is authzid NUL user NUL password; a user is all the fake wants.
        parts = bytes(req.auth_bytes).split(b"\0")
        ok = len(parts) == 3 and bool(parts[1])
        return {
            "error_code": NONE if ok else SASL_AUTHENTICATION_FAILED,
            "error_message": None if ok else "bad PLAIN token",
            "auth_bytes": b"",
            "session_lifetime_ms": 0,
        }

    # -- topics ---------------------------------------------------------------------------

    def _create_topics(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        results = []
        for topic in req.topics:
            count = topic.num_partitions if topic.num_partitions > 0 else MOCK_DEFAULT_PARTITIONS
            factor = topic.replication_factor if topic.replication_factor > 0 else 1
            error = TOPIC_ALREADY_EXISTS if topic.name in self.topics else NONE
            if error == NONE and not req.validate_only:
                self.topics[topic.name] = (uuid.uuid4(), count)
            topic_id = self.topics.get(topic.name, (uuid.UUID(int=0), 0))[0]
            results.append(
                {
                    "name": topic.name,
                    "topic_id": topic_id,
                    "error_code": error,
                    "error_message": None if error == NONE else "Topic already exists.",
                    "num_partitions": count,
                    "replication_factor": factor,
                    "configs": [
                        {
                            "name": c.name,
                            "value": c.value,
                            "read_only": False,
                            "config_source": 1,
                            "is_sensitive": False,
                        }
                        for c in topic.configs
                    ],
                }
            )
        return {"throttle_time_ms": 0, "topics": results}

    def _delete_topics(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        names = [t.name for t in req.topics] if version >= 6 else list(req.topic_names)
        responses = []
        for name in names:
            known = name in self.topics
            topic_id = self.topics.pop(name)[0] if known else uuid.UUID(int=0)
            responses.append(
                {
                    "name": name,
                    "topic_id": topic_id,
                    "error_code": NONE if known else UNKNOWN_TOPIC_OR_PARTITION,
                }
            )
        return {"throttle_time_ms": 0, "responses": responses}

    def _create_partitions(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        results = []
        for topic in req.topics:
            known = topic.name in self.topics
            if known:
                self.topics[topic.name] = (self.topics[topic.name][0], topic.count)
            results.append(
                {
                    "name": topic.name,
                    "error_code": NONE if known else UNKNOWN_TOPIC_OR_PARTITION,
                    "error_message": None,
                }
            )
        return {"throttle_time_ms": 0, "results": results}

    def _delete_records(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        return {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "low_watermark": max(p.offset, 0),
                            "error_code": NONE,
                        }
                        for p in t.partitions
                    ],
                }
                for t in req.topics
            ],
        }

    def _describe_configs(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        results = []
        for res in req.resources:
            table = TOPIC_CONFIGS if res.resource_type == 2 else BROKER_CONFIGS
            keys = res.configuration_keys
            configs = [
                {
                    "name": name,
                    "value": value,
                    "read_only": False,
                    "config_source": 5,
                    "is_default": False,
                    "is_sensitive": False,
                    "synonyms": [{"name": name, "value": value, "source": 5}]
                    if req.include_synonyms
                    else [],
                    "config_type": ctype,
                    "documentation": None,
                }
                for name, value, ctype in table
                if keys is None or name in keys
            ]
            results.append(
                {
                    "error_code": NONE,
                    "error_message": None,
                    "resource_type": res.resource_type,
                    "resource_name": res.resource_name,
                    "configs": configs,
                }
            )
        return {"throttle_time_ms": 0, "results": results}

    def _describe_cluster(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        return {
            "throttle_time_ms": 0,
            "error_code": NONE,
            "error_message": None,
            "endpoint_type": 1,
            "cluster_id": self.cluster_id,
            "controller_id": NODE_ID,
            "brokers": [
                {"broker_id": NODE_ID, "host": "127.0.0.1", "port": self.proxy_port(), "rack": None}
            ],
            "authorized_operations": None,
        }

    async def _ask_mock(self, request: Any, api_key: int, version: int) -> Any:
        """One request to the mock cluster on a side connection (not recorded)."""
        request.with_header(correlation_id=1, client_id="golden-fake-broker")
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(*self.mock_address), self.io_timeout
        )
        try:
            writer.write(bytes(request.encode(header=True, framed=True)))
            await asyncio.wait_for(writer.drain(), self.io_timeout)
            (size,) = struct.unpack(
                ">i", await asyncio.wait_for(reader.readexactly(4), self.io_timeout)
            )
            frame = await asyncio.wait_for(reader.readexactly(size), self.io_timeout)
        finally:
            writer.close()
        return kp.decode_response(frame, api_key, version)

    async def _create_in_mock(self, names: list[str]) -> None:
        """Make the mock cluster know the topics too: it auto-creates on Metadata."""
        if not names:
            return
        req = MetadataRequest[4](
            topics=[MetadataRequest[4].MetadataRequestTopic(name=n) for n in names],
            allow_auto_topic_creation=True,
        )
        await self._ask_mock(req, 3, 4)

    async def _offset_for_leader_epoch(self, req: Any, version: int) -> dict[str, Any]:
        """v3+ (the mock only has v2): asked of the mock as v2, without leader fencing."""
        cls = kp.REQUEST_CLASSES[OFFSET_FOR_LEADER_EPOCH]
        v2 = build(
            cls,
            2,
            {
                "topics": [
                    {
                        "topic": t.topic,
                        "partitions": [
                            {
                                "partition": p.partition,
                                "current_leader_epoch": -1,
                                "leader_epoch": p.leader_epoch,
                            }
                            for p in t.partitions
                        ],
                    }
                    for t in req.topics
                ]
            },
        )
        answer = await self._ask_mock(v2, OFFSET_FOR_LEADER_EPOCH, 2)
        return {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "topic": t.topic,
                    "partitions": [
                        {
                            "error_code": p.error_code,
                            "partition": p.partition,
                            "leader_epoch": p.leader_epoch,
                            "end_offset": p.end_offset,
                        }
                        for p in t.partitions
                    ],
                }
                for t in answer.topics
            ],
        }

    # -- group coordinator ----------------------------------------------------------------

    def _coordinator(self) -> dict[str, Any]:
        return {"node_id": NODE_ID, "host": "127.0.0.1", "port": self.proxy_port()}

    def _find_coordinator(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        if version >= 4:
            coordinators = []
            for key in req.coordinator_keys:
                entry = {
                    "key": key,
                    "error_code": NONE,
                    "error_message": None,
                    **self._coordinator(),
                }
                if req.key_type == 1:  # transactions are not offered
                    entry.update(
                        error_code=TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        node_id=-1,
                        host="",
                        port=-1,
                    )
                coordinators.append(entry)
            return {"throttle_time_ms": 0, "coordinators": coordinators}
        if req.key_type == 1:
            return {
                "throttle_time_ms": 0,
                "error_code": TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "error_message": None,
                "node_id": -1,
                "host": "",
                "port": -1,
            }
        return {
            "throttle_time_ms": 0,
            "error_code": NONE,
            "error_message": None,
            **self._coordinator(),
        }

    def _join_group(self, req: Any, version: int, header: Any) -> dict[str, Any]:
        group = self.groups.setdefault(req.group_id, Group())
        member_id = req.member_id
        if not member_id:
            member_id = f"{header.client_id or 'client'}-{next(self._member_ids)}"
            if version >= 4:
                # v4+: the first join only hands out a member id, the client rejoins.
                return {
                    "throttle_time_ms": 0,
                    "error_code": MEMBER_ID_REQUIRED,
                    "generation_id": -1,
                    "protocol_type": None,
                    "protocol_name": None,
                    "leader": "",
                    "member_id": member_id,
                    "members": [],
                }
        protocol = req.protocols[0]
        group.generation += 1
        group.protocol_type = req.protocol_type
        group.protocol_name = protocol.name
        group.members[member_id] = bytes(protocol.metadata)
        group.client_ids[member_id] = header.client_id or ""
        group.leader = member_id
        group.assignments.clear()
        return {
            "throttle_time_ms": 0,
            "error_code": NONE,
            "generation_id": group.generation,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name,
            "leader": member_id,
            "member_id": member_id,
            "members": [
                {"member_id": m, "group_instance_id": None, "metadata": meta}
                for m, meta in group.members.items()
            ],
        }

    def _member_error(self, group_id: str, member_id: str, generation: int) -> int:
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            return UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return ILLEGAL_GENERATION
        return NONE

    def _sync_group(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        error = self._member_error(req.group_id, req.member_id, req.generation_id)
        group = self.groups.get(req.group_id, Group())
        if error == NONE and req.member_id == group.leader:
            group.assignments = {a.member_id: bytes(a.assignment) for a in req.assignments}
        return {
            "throttle_time_ms": 0,
            "error_code": error,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name,
            "assignment": group.assignments.get(req.member_id, b""),
        }

    def _heartbeat(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        error = self._member_error(req.group_id, req.member_id, req.generation_id)
        return {"throttle_time_ms": 0, "error_code": error}

    def _leave_group(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        group = self.groups.get(req.group_id, Group())
        if version < 3:
            leaving = [req.member_id]
        else:
            leaving = [m.member_id for m in req.members]
        results = []
        for member_id in leaving:
            known = member_id in group.members
            group.members.pop(member_id, None)
            results.append(
                {
                    "member_id": member_id,
                    "group_instance_id": None,
                    "error_code": NONE if known else UNKNOWN_MEMBER_ID,
                }
            )
        return {"throttle_time_ms": 0, "error_code": NONE, "members": results}

    def _offset_commit(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        topics = []
        for topic in req.topics:
            parts = []
            for p in topic.partitions:
                self.offsets[(req.group_id, topic.name, p.partition_index)] = (
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.committed_metadata,
                )
                parts.append({"partition_index": p.partition_index, "error_code": NONE})
            topics.append({"name": topic.name, "partitions": parts})
        return {"throttle_time_ms": 0, "topics": topics}

    def _fetched_topics(self, group_id: str, topics: Any) -> list[dict[str, Any]]:
        out = []
        for topic in topics or []:
            parts = []
            for index in topic.partition_indexes:
                offset, epoch, meta = self.offsets.get((group_id, topic.name, index), (-1, -1, ""))
                parts.append(
                    {
                        "partition_index": index,
                        "committed_offset": offset,
                        "committed_leader_epoch": epoch,
                        "metadata": meta,
                        "error_code": NONE,
                    }
                )
            out.append({"name": topic.name, "partitions": parts})
        return out

    def _offset_fetch(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        if version >= 8:
            return {
                "throttle_time_ms": 0,
                "groups": [
                    {
                        "group_id": g.group_id,
                        "error_code": NONE,
                        "topics": self._fetched_topics(g.group_id, g.topics),
                    }
                    for g in req.groups
                ],
            }
        return {
            "throttle_time_ms": 0,
            "error_code": NONE,
            "topics": self._fetched_topics(req.group_id, req.topics),
        }

    def _describe_groups(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        groups = []
        for group_id in req.groups:
            group = self.groups.get(group_id)
            if group is None or not group.members:
                groups.append(
                    {
                        "error_code": NONE,
                        "group_id": group_id,
                        "group_state": "Dead",
                        "protocol_type": "",
                        "protocol_data": "",
                        "members": [],
                        "authorized_operations": None,
                    }
                )
                continue
            members = [
                {
                    "member_id": m,
                    "group_instance_id": None,
                    "client_id": group.client_ids.get(m, ""),
                    "client_host": "/127.0.0.1",
                    "member_metadata": meta,
                    "member_assignment": group.assignments.get(m, b""),
                }
                for m, meta in group.members.items()
            ]
            groups.append(
                {
                    "error_code": NONE,
                    "group_id": group_id,
                    "group_state": "Stable",
                    "protocol_type": group.protocol_type,
                    "protocol_data": group.protocol_name,
                    "members": members,
                    "authorized_operations": None,
                }
            )
        return {"throttle_time_ms": 0, "groups": groups}

    def _list_groups(self, req: Any, version: int, _h: Any) -> dict[str, Any]:
        return {
            "throttle_time_ms": 0,
            "error_code": NONE,
            "groups": [
                {
                    "group_id": gid,
                    "protocol_type": g.protocol_type,
                    "group_state": "Stable" if g.members else "Empty",
                }
                for gid, g in self.groups.items()
            ],
        }


def api_table(advertised: dict[int, tuple[int, int]]) -> list[dict[str, int]]:
    return [
        {"api_key": key, "min_version": lo, "max_version": hi}
        for key, (lo, hi) in sorted(advertised.items())
    ]


# (name, value, config type) answered by DescribeConfigs; types: 2 INT, 3 LONG, 7 LIST.
TOPIC_CONFIGS = [
    ("cleanup.policy", "delete", 7),
    ("retention.ms", "604800000", 3),
    ("segment.bytes", "1073741824", 2),
]
BROKER_CONFIGS = [
    ("log.retention.hours", "168", 2),
    ("num.partitions", "1", 2),
]
