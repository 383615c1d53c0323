"""ControlledShutdown (7), v0-3: a broker asks the controller to move its leaderships.

Served by the active controller only (NOT_CONTROLLER elsewhere; the stopping broker then
asks again, wherever /controller points). The work -- electing new leaders for the
partitions the broker leads and taking it out of ISRs -- is the controller's
(``KafkaController.controlled_shutdown``); the answer lists the partitions it still leads.
"""

from __future__ import annotations

from broker.apis.request import ApiRequest
from broker.apis.services import ClusterAdmin
from broker.controlled_shutdown import controlled_shutdown_response
from protocol import ErrorCode, Response, make_response
from protocol.messages import ControlledShutdownRequest, ControlledShutdownResponse


async def handle(ctx: ClusterAdmin, request: ApiRequest[ControlledShutdownRequest]) -> Response:
    body = request.body
    controller = ctx.controller.active()
    if controller is None:
        return make_response(
            request.header, ControlledShutdownResponse(error_code=ErrorCode.NOT_CONTROLLER)
        )
    result = await controller.controlled_shutdown(body.broker_id, body.broker_epoch)
    return make_response(request.header, controlled_shutdown_response(result))
