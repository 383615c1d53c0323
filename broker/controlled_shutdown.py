"""Controlled shutdown, the stopping broker's side (the controller's is
controller.controlled_shutdown).

A broker that is asked to stop (SIGTERM) first asks the controller to move its
leaderships away (Kafka's ``controlled.shutdown.enable``), so clients switch leaders
without errors: ``request_controlled_shutdown`` sends ControlledShutdown to whichever
broker is controller and retries until the controller reports no partitions left (or
the attempts run out). The controller answers through ``KafkaController.controlled_shutdown``;
``controlled_shutdown_response`` turns its result into the response body.

What each answer leads to is ``next_step``: done when nothing is left; stop asking at
once when the controller says no other broker could ever take what is left
(ELIGIBLE_LEADERS_NOT_AVAILABLE: the rest of the cluster is stopping too, so a retry would
only wait out the backoff); otherwise try again after the backoff, while attempts last.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from typing import Any

from client.connection import request_once
from controller.controlled_shutdown import ControlledShutdownResult
from controller.tcp_channel import ChannelConfig, control_endpoint
from protocol import ApiKey, ErrorCode
from protocol.messages import ControlledShutdownRequest, ControlledShutdownResponse
from protocol.values import TopicPartition
from timer.backoff import ExponentialBackoff
from zk.facade import ZkFacade

log = logging.getLogger(__name__)

CONTROLLED_SHUTDOWN_VERSION = 3  # v2+ carries the broker epoch; v3 is flexible


def controlled_shutdown_response(result: ControlledShutdownResult) -> Any:
    return ControlledShutdownResponse(
        error_code=result.error_code,
        remaining_partitions=[
            ControlledShutdownResponse.RemainingPartition(
                topic_name=tp.topic, partition_index=tp.partition
            )
            for tp in result.remaining
        ],
    )


class Step(enum.Enum):
    DONE = "done"
    RETRY = "retry"
    GIVE_UP = "give up"


def next_step(error_code: int, remaining: int) -> Step:
    """What a stopping broker does after the controller's answer (``remaining``: how many
    partitions it still leads)."""
    if error_code == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE:
        return Step.GIVE_UP
    if error_code == ErrorCode.NONE and remaining == 0:
        return Step.DONE
    return Step.RETRY


async def request_controlled_shutdown(
    zk: ZkFacade,
    broker_id: int,
    broker_epoch: int,
    *,
    config: ChannelConfig,
    attempts: int = 3,
    retry_backoff_s: float = 5.0,
) -> list[TopicPartition] | None:
    """Ask the controller to move this broker's leaderships away.

    Returns the partitions still led by this broker after the last attempt (empty: done),
    or None if no controller could be reached. Kafka's defaults: 3 attempts
    (controlled.shutdown.max.retries), 5 s apart (controlled.shutdown.retry.backoff.ms).
    """
    # Kafka waits the same backoff between every two attempts: no growth, no jitter
    backoff = ExponentialBackoff(retry_backoff_s, retry_backoff_s, multiplier=1, jitter=0)
    remaining: list[TopicPartition] | None = None
    for attempt in range(1, attempts + 1):
        try:
            controller_id = await zk.get_controller_id()
            info = await zk.get_broker(controller_id) if controller_id is not None else None
            if info is None:
                raise OSError("no controller is registered")
            endpoint = control_endpoint(info, config.listener_name)
            body = ControlledShutdownRequest(broker_id=broker_id, broker_epoch=broker_epoch)
            response = await request_once(
                endpoint.host,
                endpoint.port,
                ApiKey.CONTROLLED_SHUTDOWN,
                CONTROLLED_SHUTDOWN_VERSION,
                body,
                config.connection_config(f"broker-{broker_id}"),
            )
            remaining = [
                TopicPartition(p.topic_name, p.partition_index)
                for p in response.remaining_partitions
            ]
            step = next_step(response.error_code, len(remaining))
            if step is Step.DONE:
                return []
            if step is Step.GIVE_UP:
                log.warning(
                    "controlled shutdown: no other broker can lead the %d partitions left "
                    "(the rest of the cluster is stopping or down); not asking again",
                    len(remaining),
                )
                return remaining
            log.info(
                "controlled shutdown attempt %s: error %s, %s partitions left",
                attempt,
                response.error_code,
                len(remaining),
            )
        except Exception as exc:
            # any failure here only costs an attempt: shutdown proceeds regardless
            log.warning("controlled shutdown attempt %s failed: %s", attempt, exc)
        if attempt < attempts:
            await asyncio.sleep(backoff.delay_s(attempt))
    return remaining
