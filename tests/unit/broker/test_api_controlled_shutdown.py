"""ControlledShutdown: answered by the active controller only."""

from __future__ import annotations

from typing import Any

from broker.apis import controlled_shutdown
from broker.apis.services import ClusterAdmin
from controller.controller import ControlledShutdownResult
from protocol import ApiKey, ErrorCode, make_request
from protocol.messages import ControlledShutdownRequest
from protocol.values import TopicPartition
from tests.unit.broker.handler_services import handler_services
from tests.unit.controller_double import ControllerDouble, controller_double


def make_ctx(controller: ControllerDouble) -> ClusterAdmin:
    return handler_services(controller=controller).cluster


class Req:
    def __init__(self, version: int, body: Any) -> None:
        self.header = make_request(ApiKey.CONTROLLED_SHUTDOWN, version, 1, "b", body).header
        self.body = body


async def test_the_controller_answers_with_the_partitions_left() -> None:
    controller = controller_double(
        True, shutdown=ControlledShutdownResult(ErrorCode.NONE, [TopicPartition("t", 3)])
    )
    ctx = make_ctx(controller)
    body = ControlledShutdownRequest(broker_id=2, broker_epoch=77)
    response = await controlled_shutdown.handle(ctx, Req(3, body))
    assert response.body.error_code == ErrorCode.NONE
    assert [(p.topic_name, p.partition_index) for p in response.body.remaining_partitions] == [
        ("t", 3)
    ]
    assert controller.shutdowns_asked == [(2, 77)]


async def test_other_brokers_answer_not_controller() -> None:
    ctx = make_ctx(controller_double(False))
    response = await controlled_shutdown.handle(ctx, Req(1, ControlledShutdownRequest(broker_id=2)))
    assert response.body.error_code == ErrorCode.NOT_CONTROLLER
