"""The four partition leader election strategies as pure functions (Kafka's
PartitionLeaderElectionAlgorithms).

Each takes what the controller knows (the assigned replicas in order, the ISR, the live
brokers, the brokers shutting down) and returns an ``Election``: the chosen leader, or
None when nobody qualifies, and the ISR to write with it. The rule they share: the leader
is the first replica in assignment (AR) order that is alive and in the ISR. Only the
offline strategy may, when allowed, fall back to an out-of-sync replica (unclean
election), at the price of losing what the ISR had acknowledged.

Whether it may is ``unclean_leader_election_enabled``: Kafka's
``unclean.leader.election.enable``, the topic's override over the broker's value (its
dynamic layers over its static one), worked out by ``config.effective`` as everywhere
else. The offline strategy is first run clean; only a partition with no live ISR member
has its topic's setting looked up.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from config.effective import ConfigLayers, effective_value


class ElectionStrategy(enum.Enum):
    OFFLINE = "OfflinePartitionLeaderElection"
    REASSIGN = "ReassignPartitionLeaderElection"
    PREFERRED_REPLICA = "PreferredReplicaPartitionLeaderElection"
    CONTROLLED_SHUTDOWN = "ControlledShutdownPartitionLeaderElection"


@dataclass(frozen=True)
class Election:
    leader: int | None
    isr: tuple[int, ...]
    unclean: bool = False


def _first_live_in_isr(
    candidates: Sequence[int], isr: Collection[int], live: Collection[int]
) -> int | None:
    for replica in candidates:
        if replica in live and replica in isr:
            return replica
    return None


def offline_partition_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    unclean_enabled: bool = False,
) -> Election:
    """The leader went away (or the partition is new): first live ISR member in AR order.

    The new ISR is the live part of the old one. With ``unclean_enabled`` and no live ISR
    member, the first live assigned replica leads alone.
    """
    leader = _first_live_in_isr(assignment, isr, live)
    if leader is not None:
        return Election(leader, tuple(r for r in isr if r in live))
    if unclean_enabled:
        for replica in assignment:
            if replica in live:
                return Election(replica, (replica,), unclean=True)
    return Election(None, tuple(isr))


def reassign_partition_leader(
    reassignment: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> Election:
    """A reassignment moved the replicas: first live ISR member of the *target* replicas."""
    return Election(_first_live_in_isr(reassignment, isr, live), tuple(isr))


def preferred_replica_leader(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> Election:
    """Move leadership back to the preferred replica (the first in AR) if it qualifies."""
    if assignment and assignment[0] in live and assignment[0] in isr:
        return Election(assignment[0], tuple(isr))
    return Election(None, tuple(isr))


def controlled_shutdown_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    shutting_down: Collection[int],
) -> Election:
    """A broker is shutting down cleanly: first live ISR member not shutting down.

    Brokers shutting down also leave the ISR, so they cannot be chosen again before they
    have gone and come back.
    """
    candidates = [r for r in assignment if r not in shutting_down]
    leader = _first_live_in_isr(candidates, isr, live)
    return Election(leader, tuple(r for r in isr if r not in shutting_down))


UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"


def unclean_leader_election_enabled(layers: ConfigLayers) -> bool:
    """The effective ``unclean.leader.election.enable`` over ``layers`` (``config.effective``:
    the topic's override, this broker's dynamic config, the cluster default, the static
    configuration, the default). A value that is not a boolean is skipped, as if unset (a
    broker refuses it when it is written)."""
    return bool(effective_value(UNCLEAN_LEADER_ELECTION_ENABLE, layers))
