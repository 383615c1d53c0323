"""ElectLeaders: answered by the active controller only; all-partitions requests leave
out the partitions that needed no election; a controller too slow is a timeout."""

from __future__ import annotations

from typing import Any

from broker.apis import elect_leaders
from broker.apis.services import ClusterAdmin
from controller.elect_leaders import ElectionOutcome, ElectionType
from protocol import ApiKey, ErrorCode, make_request
from protocol.messages import ElectLeadersRequest
from protocol.values import TopicPartition
from tests.unit.broker.handler_services import handler_services
from tests.unit.controller_double import ControllerDouble, controller_double

T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


def make_ctx(controller: ControllerDouble) -> ClusterAdmin:
    return handler_services(controller=controller).cluster


class Req:
    def __init__(self, version: int, body: Any) -> None:
        self.header = make_request(ApiKey.ELECT_LEADERS, version, 1, "c", body).header
        self.body = body


def request(
    partitions: dict[str, list[int]] | None, election_type: int = 0, timeout_ms: int = 5000
) -> ElectLeadersRequest:
    listed = (
        None
        if partitions is None
        else [
            ElectLeadersRequest.TopicPartitions(topic=t, partitions=ps)
            for t, ps in partitions.items()
        ]
    )
    return ElectLeadersRequest(
        election_type=election_type, topic_partitions=listed, timeout_ms=timeout_ms
    )


def results(body: Any) -> list[tuple[str, int, int]]:
    return [
        (t.topic, r.partition_id, r.error_code)
        for t in body.replica_election_results
        for r in t.partition_result
    ]


async def test_listed_partitions_get_every_outcome_in_request_order() -> None:
    controller = controller_double(
        True,
        elections={
            T0: ElectionOutcome(ErrorCode.NONE, leader=2),
            T1: ElectionOutcome(ErrorCode.ELECTION_NOT_NEEDED, leader=1),
            U0: ElectionOutcome(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "not in the ISR"),
        },
    )
    body = request({"u": [0], "t": [1, 0, 1]}, election_type=1)
    response = await elect_leaders.handle(make_ctx(controller), Req(2, body))
    assert response.body.error_code == ErrorCode.NONE
    assert results(response.body) == [
        ("u", 0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE),
        ("t", 1, ErrorCode.ELECTION_NOT_NEEDED),
        ("t", 0, ErrorCode.NONE),
    ]
    assert controller.elections_asked == [([U0, T1, T0], ElectionType.UNCLEAN)]


async def test_all_partitions_leaves_out_those_not_needing_an_election() -> None:
    controller = controller_double(
        True,
        elections={
            T0: ElectionOutcome(ErrorCode.NONE, leader=2),
            T1: ElectionOutcome(ErrorCode.ELECTION_NOT_NEEDED, leader=1),
        },
    )
    response = await elect_leaders.handle(make_ctx(controller), Req(1, request(None)))
    assert results(response.body) == [("t", 0, ErrorCode.NONE)]
    assert controller.elections_asked == [(None, ElectionType.PREFERRED)]


async def test_version_0_means_preferred() -> None:
    controller = controller_double(True, elections={T0: ElectionOutcome(ErrorCode.NONE, leader=2)})
    await elect_leaders.handle(make_ctx(controller), Req(0, request({"t": [0]}, 1)))
    assert controller.elections_asked == [([T0], ElectionType.PREFERRED)]


async def test_other_brokers_answer_not_controller() -> None:
    controller = controller_double(False)
    response = await elect_leaders.handle(make_ctx(controller), Req(2, request({"t": [0, 1]})))
    assert response.body.error_code == ErrorCode.NOT_CONTROLLER
    assert results(response.body) == [
        ("t", 0, ErrorCode.NOT_CONTROLLER),
        ("t", 1, ErrorCode.NOT_CONTROLLER),
    ]
    assert controller.elections_asked == []


async def test_a_controller_that_stopped_meanwhile_is_not_controller() -> None:
    controller = controller_double(True, elections=None)
    response = await elect_leaders.handle(make_ctx(controller), Req(2, request({"t": [0]})))
    assert results(response.body) == [("t", 0, ErrorCode.NOT_CONTROLLER)]


async def test_no_answer_within_the_timeout_is_request_timed_out() -> None:
    controller = controller_double(True)
    controller.hang = True
    response = await elect_leaders.handle(
        make_ctx(controller), Req(2, request({"t": [0]}, timeout_ms=10))
    )
    assert results(response.body) == [("t", 0, ErrorCode.REQUEST_TIMED_OUT)]


async def test_an_unknown_election_type_is_an_invalid_request() -> None:
    controller = controller_double(True)
    response = await elect_leaders.handle(make_ctx(controller), Req(2, request({"t": [0]}, 7)))
    assert response.body.error_code == ErrorCode.INVALID_REQUEST
    assert controller.elections_asked == []
