"""Fencing of controller requests addressed to an earlier registration of this broker."""

from __future__ import annotations

from broker.context import BrokerContext


def is_stale_broker_epoch(ctx: BrokerContext, broker_epoch: int) -> bool:
    """A controller request addressed to an earlier registration of this broker (Kafka's
    isBrokerEpochStale): -1 means the version carries no epoch and is never stale. The
    current epoch is the controller's, which re-registers after a lost session."""
    current = ctx.controller.broker_epoch if ctx.controller is not None else -1
    if current < 0:
        current = ctx.broker_epoch
    return broker_epoch != -1 and broker_epoch < current
