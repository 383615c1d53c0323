"""The InitProducerId handler (v0-4): fresh ids at epoch 0 (also for a KIP-360 bump),
transactional ids refused, half-given producer id/epoch invalid, claim failures
answered with a retriable error."""

from __future__ import annotations

from typing import Any

import pytest

import protocol
from broker.apis import init_producer_id
from broker.apis.services import ProducerIds
from broker.producer_id_manager import ProducerIdManager
from protocol import ApiKey, ErrorCode
from protocol.messages import InitProducerIdRequest
from tests.unit.broker.handler_services import handler_services


class FakeProducerIds(ProducerIdManager):
    """Stands in for the manager (a subclass without its set-up, so typed as one)."""

    def __init__(self) -> None:
        self.next = 4000
        self.fail = False

    async def generate_producer_id(self) -> int:
        if self.fail:
            raise ConnectionError("ZooKeeper is away")
        self.next += 1
        return self.next - 1


@pytest.fixture
def ctx() -> ProducerIds:
    return handler_services(producer_ids=FakeProducerIds()).producer_ids


async def init(ctx: ProducerIds, version: int, **fields: Any) -> Any:
    fields.setdefault("transactional_id", None)  # what idempotent clients send
    body = InitProducerIdRequest(transaction_timeout_ms=60_000, **fields)
    req = protocol.make_request(ApiKey.INIT_PRODUCER_ID, version, 1, "p", body)
    response = await init_producer_id.handle(
        ctx, protocol.decode_request(protocol.encode_request(req))
    )
    frame = protocol.encode_response(response)
    return protocol.decode_response(frame, ApiKey.INIT_PRODUCER_ID, version).body


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
async def test_idempotent_producer_gets_fresh_id_at_epoch_0(ctx: ProducerIds, version: int) -> None:
    first = await init(ctx, version)
    second = await init(ctx, version)
    assert (first.error_code, first.producer_id, first.producer_epoch) == (0, 4000, 0)
    assert second.producer_id == 4001


async def test_kip360_bump_gets_a_new_id(ctx: ProducerIds) -> None:
    answer = await init(ctx, 4, producer_id=4000, producer_epoch=3)
    assert (answer.error_code, answer.producer_id, answer.producer_epoch) == (0, 4000, 0)
    again = await init(ctx, 4, producer_id=4000, producer_epoch=0)
    assert again.producer_id == 4001


@pytest.mark.parametrize("version", [0, 4])
async def test_transactional_id_is_refused_while_transactions_are_off(version: int) -> None:
    off = {"minikafka.transactions.enable": "false"}
    ctx = handler_services(props=off, producer_ids=FakeProducerIds()).producer_ids
    answer = await init(ctx, version, transactional_id="tx-1")
    assert answer.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert (answer.producer_id, answer.producer_epoch) == (-1, -1)


@pytest.mark.parametrize(("pid", "epoch"), [(5, -1), (-1, 2)])
async def test_half_given_identity_is_invalid(ctx: ProducerIds, pid: int, epoch: int) -> None:
    answer = await init(ctx, 3, producer_id=pid, producer_epoch=epoch)
    assert answer.error_code == ErrorCode.INVALID_REQUEST


async def test_claim_failure_is_retriable(ctx: ProducerIds) -> None:
    assert isinstance(ctx.manager, FakeProducerIds)
    ctx.manager.fail = True
    answer = await init(ctx, 4)
    assert answer.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert ErrorCode(answer.error_code).retriable
