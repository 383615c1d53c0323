"""JSON payloads of the znodes, encoded and decoded exactly as Kafka's ZooKeeper mode has them.

Pure functions, bytes in and out. Decoders raise ``ZkDataError`` on anything that is
not the expected shape, so a corrupt znode is reported with its content instead of a
KeyError deep inside the controller.

Shapes (Kafka writes strings for timestamps and producer-id bounds; we do the same)::

  /brokers/ids/<id>        {"version":5,"host":"h","port":9092,"jmx_port":-1,
                            "timestamp":"<ms>","endpoints":["PLAINTEXT://h:9092"],
                            "listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
                            "rack":"r" (only when set),"features":{}}
  /brokers/topics/<t>      {"version":3,"topic_id":"<base64url uuid, no padding>",
                            "partitions":{"0":[1,2]},"adding_replicas":{},"removing_replicas":{}}
  .../partitions/<p>/state {"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,
                            "isr":[1,2]}
  /controller              {"version":1,"brokerid":1,"timestamp":"<ms>"}
  /controller_epoch        "<int>" (plain text)
  /cluster/id              {"version":"1","id":"<cluster id>"}
  /latest_producer_id_block {"version":1,"broker":1,"block_start":"0","block_end":"999"}
  /config/topics/<t>       {"version":1,"config":{"retention.ms":"1000"}}
  /config/brokers/<id>, /config/brokers/<default>  the same, for dynamic broker configs
  /config/changes/config_change_<seq>  {"version":2,"entity_path":"topics/<t>"}
  /isr_change_notification/isr_change_<seq>
                           {"version":1,"partitions":[{"topic":"t","partition":0}]}
  /admin/reassign_partitions {"version":1,"partitions":[{"topic":"t","partition":0,
                            "replicas":[1,2]}]}  (a "log_dirs" list per entry is ignored)
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from protocol import uuids
from protocol.uuids import uuid_to_base64
from protocol.values import TopicPartition
from zk.model import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
)

BROKER_VERSION = 5
TOPIC_VERSION = 3
PARTITION_STATE_VERSION = 1
CONTROLLER_VERSION = 1
PRODUCER_ID_BLOCK_VERSION = 1
#: the same size Kafka hands out
PRODUCER_ID_BLOCK_SIZE = 1000


class ZkDataError(ValueError):
    """A znode's content is not what its path should hold."""


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _loads(data: bytes, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(data.decode())
    except (UnicodeDecodeError, ValueError) as exc:
        raise ZkDataError(f"{what}: not JSON: {data[:200]!r}") from exc
    if not isinstance(obj, dict):
        raise ZkDataError(f"{what}: expected a JSON object, got {data[:200]!r}")
    return obj


def _int_list(value: object, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise ZkDataError(f"{what}: expected a list of integers, got {value!r}")
    return tuple(value)


# -- ids ----------------------------------------------------------------------------------


def uuid_from_base64(text: str) -> uuid.UUID:
    try:
        return uuids.uuid_from_base64(text)
    except ValueError as exc:
        raise ZkDataError(str(exc)) from exc


def new_topic_id() -> uuid.UUID:
    """A random topic id; never the zero uuid, which Kafka reserves for "no id"."""
    while True:
        u = uuid.uuid4()
        if u.int != 0:
            return u


# -- brokers ------------------------------------------------------------------------------


def encode_broker(info: BrokerInfo, timestamp_ms: int, jmx_port: int = -1) -> bytes:
    plaintext = next((e for e in info.endpoints if e.security_protocol == "PLAINTEXT"), None)
    payload: dict[str, Any] = {
        "features": dict(info.features),
        "listener_security_protocol_map": {
            e.listener_name: e.security_protocol for e in info.endpoints
        },
        "endpoints": [e.connection_string for e in info.endpoints],
        "jmx_port": jmx_port,
        # host/port: the first PLAINTEXT endpoint, for pre-endpoint readers
        "port": plaintext.port if plaintext else -1,
        "host": plaintext.host if plaintext else None,
        "version": BROKER_VERSION,
        "timestamp": str(timestamp_ms),
    }
    if info.rack is not None:
        payload["rack"] = info.rack
    return _dumps(payload)


def _parse_endpoint(text: str, protocol_map: dict[str, str]) -> EndPoint:
    listener, sep, rest = text.partition("://")
    host, colon, port = rest.rpartition(":")
    if not sep or not colon or not port.isdigit():
        raise ZkDataError(f"bad endpoint {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return EndPoint(host, int(port), listener, protocol_map.get(listener, listener))


def decode_broker(broker_id: int, data: bytes, czxid: int = -1) -> BrokerInfo:
    obj = _loads(data, f"/brokers/ids/{broker_id}")
    protocol_map = obj.get("listener_security_protocol_map") or {}
    raw_endpoints = obj.get("endpoints")
    if isinstance(raw_endpoints, list) and raw_endpoints:
        endpoints = tuple(_parse_endpoint(str(e), protocol_map) for e in raw_endpoints)
    elif isinstance(obj.get("host"), str) and isinstance(obj.get("port"), int):
        endpoints = (EndPoint(obj["host"], obj["port"]),)
    else:
        raise ZkDataError(f"/brokers/ids/{broker_id}: no endpoints in {data[:200]!r}")
    features = obj.get("features")
    return BrokerInfo(
        id=broker_id,
        endpoints=endpoints,
        rack=obj.get("rack"),
        epoch=czxid,
        features=dict(features) if isinstance(features, dict) else {},
    )


# -- topics and partitions ----------------------------------------------------------------


def encode_topic(assignment: TopicAssignment) -> bytes:
    def by_partition(m: dict[int, tuple[int, ...]]) -> dict[str, list[int]]:
        return {str(p): list(r) for p, r in sorted(m.items())}

    return _dumps(
        {
            "version": TOPIC_VERSION,
            "topic_id": uuid_to_base64(assignment.topic_id),
            "partitions": by_partition(assignment.partitions),
            "adding_replicas": by_partition(assignment.adding_replicas),
            "removing_replicas": by_partition(assignment.removing_replicas),
        }
    )


def decode_topic(topic: str, data: bytes) -> TopicAssignment:
    """Decode a topic znode. A topic written by an old Kafka has no id: we refuse it
    rather than invent one that other brokers would not agree on."""
    what = f"/brokers/topics/{topic}"
    obj = _loads(data, what)
    topic_id = obj.get("topic_id")
    if not isinstance(topic_id, str):
        raise ZkDataError(f"{what}: no topic_id (version {obj.get('version')})")

    def by_partition(key: str) -> dict[int, tuple[int, ...]]:
        raw = obj.get(key) or {}
        if not isinstance(raw, dict):
            raise ZkDataError(f"{what}: {key} is not an object")
        try:
            return {int(p): _int_list(r, f"{what} {key}[{p}]") for p, r in raw.items()}
        except ValueError as exc:
            raise ZkDataError(f"{what}: bad partition number in {key}") from exc

    return TopicAssignment(
        topic=topic,
        topic_id=uuid_from_base64(topic_id),
        partitions=by_partition("partitions"),
        adding_replicas=by_partition("adding_replicas"),
        removing_replicas=by_partition("removing_replicas"),
    )


def encode_partition_state(lai: LeaderAndIsr, controller_epoch: int) -> bytes:
    return _dumps(
        {
            "controller_epoch": controller_epoch,
            "leader": lai.leader,
            "version": PARTITION_STATE_VERSION,
            "leader_epoch": lai.leader_epoch,
            "isr": list(lai.isr),
        }
    )


def decode_partition_state(
    tp: TopicPartition, data: bytes, zk_version: int
) -> LeaderIsrAndControllerEpoch:
    what = f"state of {tp}"
    obj = _loads(data, what)
    try:
        leader = int(obj["leader"])
        leader_epoch = int(obj["leader_epoch"])
        controller_epoch = int(obj["controller_epoch"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ZkDataError(f"{what}: missing or bad field in {data[:200]!r}") from exc
    isr = _int_list(obj.get("isr"), what)
    return LeaderIsrAndControllerEpoch(
        LeaderAndIsr(leader, leader_epoch, isr, zk_version), controller_epoch
    )


# -- controller, cluster ------------------------------------------------------------------


def encode_controller(broker_id: int, timestamp_ms: int) -> bytes:
    return _dumps(
        {"version": CONTROLLER_VERSION, "brokerid": broker_id, "timestamp": str(timestamp_ms)}
    )


def decode_controller(data: bytes) -> int:
    obj = _loads(data, "/controller")
    bid = obj.get("brokerid")
    if not isinstance(bid, int):
        raise ZkDataError(f"/controller: no brokerid in {data[:200]!r}")
    return bid


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_controller_epoch(data: bytes) -> int:
    try:
        return int(data.decode().strip())
    except (UnicodeDecodeError, ValueError) as exc:
        raise ZkDataError(f"/controller_epoch: not an integer: {data[:50]!r}") from exc


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    cid = _loads(data, "/cluster/id").get("id")
    if not isinstance(cid, str) or not cid:
        raise ZkDataError(f"/cluster/id: no id in {data[:200]!r}")
    return cid


def new_cluster_id() -> str:
    """22 characters of URL-safe base64, like Kafka's generated cluster ids."""
    return uuid_to_base64(new_topic_id())


# -- producer ids -------------------------------------------------------------------------


@dataclass(frozen=True)
class ProducerIdBlock:
    """Producer ids ``first`` to ``last`` inclusive, owned by ``broker_id``."""

    broker_id: int
    first: int
    last: int

    @property
    def size(self) -> int:
        return self.last - self.first + 1


def encode_producer_id_block(block: ProducerIdBlock) -> bytes:
    return _dumps(
        {
            "version": PRODUCER_ID_BLOCK_VERSION,
            "broker": block.broker_id,
            "block_start": str(block.first),
            "block_end": str(block.last),
        }
    )


def decode_producer_id_block(data: bytes) -> ProducerIdBlock:
    obj = _loads(data, "/latest_producer_id_block")
    try:
        return ProducerIdBlock(int(obj["broker"]), int(obj["block_start"]), int(obj["block_end"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ZkDataError(f"/latest_producer_id_block: bad content {data[:200]!r}") from exc


def next_producer_id_block(
    previous: ProducerIdBlock | None, broker_id: int, size: int = PRODUCER_ID_BLOCK_SIZE
) -> ProducerIdBlock:
    """The block after ``previous`` (pure). Producer ids are int64: refuse to wrap."""
    first = 0 if previous is None else previous.last + 1
    last = first + size - 1
    if last > 2**63 - 1:
        raise ZkDataError("producer ids are exhausted")
    return ProducerIdBlock(broker_id, first, last)


# -- configs and notifications ------------------------------------------------------------


def encode_entity_config(config: dict[str, str]) -> bytes:
    return _dumps({"version": 1, "config": dict(config)})


def decode_topic_config(topic: str, data: bytes) -> dict[str, str]:
    return decode_entity_config(f"/config/topics/{topic}", data)


def decode_entity_config(path: str, data: bytes) -> dict[str, str]:
    """The ``config`` object of any /config/<type>/<name> znode, values as text."""
    cfg = _loads(data, path).get("config") or {}
    if not isinstance(cfg, dict):
        raise ZkDataError(f"{path}: config is not an object")
    return {str(k): str(v) for k, v in cfg.items()}


def encode_config_change(entity_path: str) -> bytes:
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes) -> tuple[str, str]:
    """(entity type, entity name) of a version-2 notification (``"topics/t"``,
    ``"brokers/<default>"``); the name may not contain a slash (Kafka's rule), except a
    user's client quota entity, ``users/<user>/clients/<client-id>``, whose name is
    ``<user>/clients/<client-id>``."""
    entity_path = _loads(data, "config change notification").get("entity_path")
    if not isinstance(entity_path, str):
        raise ZkDataError(f"config change notification: bad entity_path in {data[:200]!r}")
    parts = entity_path.split("/")
    if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients" and all(parts):
        return parts[0], "/".join(parts[1:])
    if len(parts) != 2:
        raise ZkDataError(f"config change notification: bad entity_path in {data[:200]!r}")
    return parts[0], parts[1]


def encode_isr_change(partitions: Iterable[TopicPartition]) -> bytes:
    return _dumps(
        {
            "version": 1,
            "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in partitions],
        }
    )


def decode_isr_change(data: bytes) -> list[TopicPartition]:
    raw = _loads(data, "isr change notification").get("partitions")
    if not isinstance(raw, list):
        raise ZkDataError(f"isr change notification: no partitions in {data[:200]!r}")
    try:
        return [TopicPartition(str(p["topic"]), int(p["partition"])) for p in raw]
    except (KeyError, TypeError, ValueError) as exc:
        raise ZkDataError(f"isr change notification: bad entry in {data[:200]!r}") from exc


def encode_partition_list(partitions: Iterable[TopicPartition]) -> bytes:
    """/admin/preferred_replica_election's payload."""
    return encode_isr_change(partitions)


def encode_reassignment(targets: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    """/admin/reassign_partitions' payload: each partition's target replicas."""
    return _dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": tp.topic, "partition": tp.partition, "replicas": list(r)}
                for tp, r in sorted(targets.items())
            ],
        }
    )


def decode_reassignment(data: bytes) -> dict[TopicPartition, tuple[int, ...]]:
    """The partitions and target replicas an operator wrote to /admin/reassign_partitions."""
    what = "/admin/reassign_partitions"
    raw = _loads(data, what).get("partitions")
    if not isinstance(raw, list):
        raise ZkDataError(f"{what}: no partitions in {data[:200]!r}")
    out: dict[TopicPartition, tuple[int, ...]] = {}
    for entry in raw:
        try:
            tp = TopicPartition(str(entry["topic"]), int(entry["partition"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ZkDataError(f"{what}: bad entry {entry!r}") from exc
        out[tp] = _int_list(entry.get("replicas"), f"{what} {tp}")
    return out
