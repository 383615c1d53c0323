"""ControlledShutdown: answered by the active controller only."""

from __future__ import annotations

from typing import Any

from broker.apis import controlled_shutdown
from broker.config import BrokerConfig
from broker.context import BrokerContext
from broker.metadata_cache import MetadataCache
from broker.metrics import BrokerMetrics
from controller.controller import ControlledShutdownResult
from protocol import ApiKey, ErrorCode, make_request
from protocol.messages import ControlledShutdownRequest
from protocol.values import TopicPartition
from tests.unit.controller_double import ControllerDouble, controller_double
from timer.clock import MockClock


def make_ctx(active: bool) -> BrokerContext:
    return BrokerContext(
        broker_id=0,
        cluster_id="c",
        config=BrokerConfig.from_properties({"zookeeper.connect": "z:1"}),
        clock=MockClock(),
        metrics=BrokerMetrics(),
        metadata_cache=MetadataCache(0),
        controller=controller_double(
            active, shutdown=ControlledShutdownResult(ErrorCode.NONE, [TopicPartition("t", 3)])
        ),
    )


class Req:
    def __init__(self, version: int, body: Any) -> None:
        self.header = make_request(ApiKey.CONTROLLED_SHUTDOWN, version, 1, "b", body).header
        self.body = body


async def test_the_controller_answers_with_the_partitions_left() -> None:
    ctx = make_ctx(active=True)
    body = ControlledShutdownRequest(broker_id=2, broker_epoch=77)
    response = await controlled_shutdown.handle(ctx, Req(3, body))
    assert response.body.error_code == ErrorCode.NONE
    assert [(p.topic_name, p.partition_index) for p in response.body.remaining_partitions] == [
        ("t", 3)
    ]
    assert isinstance(ctx.controller, ControllerDouble)
    assert ctx.controller.shutdowns_asked == [(2, 77)]


async def test_other_brokers_answer_not_controller() -> None:
    ctx = make_ctx(active=False)
    response = await controlled_shutdown.handle(ctx, Req(1, ControlledShutdownRequest(broker_id=2)))
    assert response.body.error_code == ErrorCode.NOT_CONTROLLER
