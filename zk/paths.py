"""The znode paths of Kafka's ZooKeeper mode (docs/architecture.md, "ZooKeeper layout")."""

from __future__ import annotations

BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
BROKER_SEQID = "/brokers/seqid"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
ADMIN = "/admin"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
CONFIG = "/config"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
#: the entity name of the cluster-wide default broker config: /config/brokers/<default>
DEFAULT_ENTITY = "<default>"
#: entity types of /config/<type>/<name> (Kafka's ConfigType names)
TOPICS_ENTITY = "topics"
BROKERS_ENTITY = "brokers"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
CLUSTER_ID = "/cluster/id"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
CONSUMERS = "/consumers"

#: Persistent paths every broker makes sure exist at startup (Kafka's list).
PERSISTENT_PATHS = (
    CONSUMERS,
    BROKER_IDS,
    BROKER_TOPICS,
    CONFIG_CHANGES,
    "/config/clients",
    CONFIG_BROKERS,
    CONFIG_TOPICS,
    "/config/users",
    "/config/ips",
    DELETE_TOPICS,
    BROKER_SEQID,
    ISR_CHANGE_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
)


def broker(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic(name: str) -> str:
    return f"{BROKER_TOPICS}/{name}"


def topic_partitions(name: str) -> str:
    return f"{BROKER_TOPICS}/{name}/partitions"


def partition(name: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{name}/partitions/{partition}"


def partition_state(name: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{name}/partitions/{partition}/state"


def delete_topic(name: str) -> str:
    return f"{DELETE_TOPICS}/{name}"


def topic_config(name: str) -> str:
    return entity_config(TOPICS_ENTITY, name)


def entity_config(entity_type: str, name: str) -> str:
    """/config/<type>/<name>: ``topics``/<topic>, ``brokers``/<id> or ``brokers``/<default>."""
    return f"{CONFIG}/{entity_type}/{name}"


def config_change_sequence(name: str) -> int:
    """The sequence number of a ``config_change_<10 digits>`` notification; -1 if none."""
    digits = name.removeprefix(CONFIG_CHANGE_PREFIX)
    return int(digits) if name.startswith(CONFIG_CHANGE_PREFIX) and digits.isdigit() else -1


def consumer_offset(group: str, topic: str, partition: int) -> str:
    """/consumers/<group>/offsets/<topic>/<partition>: an offset OffsetCommit v0 stored."""
    return f"{CONSUMERS}/{group}/offsets/{topic}/{partition}"
