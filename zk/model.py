"""Value types of the cluster metadata kept in ZooKeeper: leadership, brokers, topic
assignments. Partitions are named by ``protocol.values.TopicPartition``, shared by all packages.

All are frozen: the ControllerContext replaces values rather than mutating them, so a
value handed to a request builder or a ZooKeeper write never changes underneath it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from protocol.values import TopicPartition

#: The first leader epoch and the zkVersion a partition state znode has when created.
INITIAL_LEADER_EPOCH = 0
INITIAL_PARTITION_ZK_VERSION = 0
#: /controller_epoch holds 0 before any controller was elected; the first one makes it 1.
INITIAL_CONTROLLER_EPOCH = 0


@dataclass(frozen=True)
class LeaderAndIsr:
    """What a partition state znode stores, plus the znode's zkVersion.

    ``zk_version`` is the partition epoch: every change is written conditionally on it,
    so two writers (the controller and, later, a leader shrinking its ISR) never
    overwrite each other unseen.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int = INITIAL_PARTITION_ZK_VERSION

    def new_leader_and_isr(self, leader: int, isr: tuple[int, ...]) -> LeaderAndIsr:
        """The next state: a new leader epoch (brokers fence old leaders with it)."""
        return LeaderAndIsr(leader, self.leader_epoch + 1, tuple(isr), self.zk_version)

    def with_zk_version(self, zk_version: int) -> LeaderAndIsr:
        return LeaderAndIsr(self.leader, self.leader_epoch, self.isr, zk_version)


@dataclass(frozen=True)
class LeaderIsrAndControllerEpoch:
    """A partition's leadership and the epoch of the controller that wrote it."""

    leader_and_isr: LeaderAndIsr
    controller_epoch: int


@dataclass(frozen=True)
class EndPoint:
    """One listener of a broker: what the ``listeners`` key configures and what
    /brokers/ids/<id> registers. An empty host binds every interface."""

    host: str
    port: int
    listener_name: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"

    @property
    def connection_string(self) -> str:
        """``NAME://host:port``, an IPv6 host in brackets."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


@dataclass(frozen=True)
class BrokerInfo:
    """A live broker: its id, endpoints, rack and broker epoch.

    The broker epoch is the czxid of the broker's registration znode: it grows each time
    the broker registers again, so requests meant for an earlier incarnation are told apart.
    """

    id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None
    epoch: int = -1
    features: dict[str, object] = field(default_factory=dict, compare=False, hash=False)

    def endpoint(self, listener_name: str) -> EndPoint | None:
        for ep in self.endpoints:
            if ep.listener_name == listener_name:
                return ep
        return None


@dataclass(frozen=True)
class TopicAssignment:
    """A topic znode: its id and each partition's assigned replicas (AR), in order."""

    topic: str
    topic_id: uuid.UUID
    partitions: dict[int, tuple[int, ...]]
    adding_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)


#: per partition: the state as written (with its new zkVersion), or why it was not
WriteResults = dict[TopicPartition, LeaderAndIsr | Exception]
