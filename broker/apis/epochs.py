"""Fencing of controller requests addressed to an earlier registration of this broker."""

from __future__ import annotations

from broker.apis.services import ReplicaAccess


def is_stale_broker_epoch(ctx: ReplicaAccess, broker_epoch: int) -> bool:
    """A controller request addressed to an earlier registration of this broker (Kafka's
    isBrokerEpochStale): -1 means the version carries no epoch and is never stale. The
    current epoch is our registration's (-1 before the first), which the controller
    renews after a lost session."""
    return broker_epoch != -1 and broker_epoch < ctx.controller.broker_epoch
