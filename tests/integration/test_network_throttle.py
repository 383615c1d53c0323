"""A client quota's throttle in the network layer (KIP-219): the throttled response goes
out at once, then the connection reads nothing for the throttle time -- the request
behind it reaches the handler only after that -- while other connections are served.
A request with no response (acks=0) mutes its connection all the same. On the stub
server of tests.integration.network_stub, both event loops."""

from __future__ import annotations

import time
from typing import Any

import pytest

from broker.network import Request
from tests.integration.network_stub import LOOPS, Client, answer, in_loop, serving
from tests.polling import until

pytestmark = pytest.mark.timeout(60)

THROTTLE_MS = 400


class Throttling:
    """ApiVersions "throttle" answers with a throttle; "throttle-none" answers nothing,
    throttled; anything else answers at once. Records when each request was handled."""

    def __init__(self) -> None:
        self.handled: list[tuple[str, str, float]] = []

    async def __call__(self, request: Request) -> Any:
        command = request.body.client_software_name if request.body else ""
        self.handled.append((request.connection_id, command, time.monotonic()))
        if command.startswith("throttle"):
            request.throttle_ms = THROTTLE_MS
        if command == "throttle-none":
            return None
        return answer(request.header)

    def when(self, command: str) -> float:
        return next(t for _, c, t in self.handled if c == command)


@pytest.mark.parametrize("kind", LOOPS)
def test_a_throttled_connection_reads_nothing_for_the_throttle_time(kind: str) -> None:
    async def test() -> None:
        handler = Throttling()
        async with serving(handler) as server:
            port = server.bound_port("PLAINTEXT")
            throttled, other = await Client.connect(port), await Client.connect(port)
            first = throttled.request("throttle")
            behind = throttled.request("behind")
            assert (await throttled.response()).header.correlation_id == first
            answered = time.monotonic()
            # another connection is served meanwhile
            cid = other.request("other")
            assert (await other.response()).header.correlation_id == cid
            assert all(c != "behind" for _, c, _ in handler.handled)
            assert (await throttled.response()).header.correlation_id == behind
            # handled only once the throttle was over (a little slack for the clocks)
            waited = handler.when("behind") - handler.when("throttle")
            assert waited >= THROTTLE_MS / 1000 * 0.9, waited
            assert handler.when("other") < handler.when("behind")
            assert handler.when("other") - answered < THROTTLE_MS / 1000
            throttled.close()
            other.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_a_throttled_request_without_response_mutes_too(kind: str) -> None:
    async def test() -> None:
        handler = Throttling()
        async with serving(handler) as server:
            client = await Client.connect(server.bound_port("PLAINTEXT"))
            client.request("throttle-none")
            behind = client.request("behind")
            await until(lambda: handler.handled, what="the throttled request")
            assert (await client.response()).header.correlation_id == behind
            waited = handler.when("behind") - handler.when("throttle-none")
            assert waited >= THROTTLE_MS / 1000 * 0.9, waited
            client.close()

    in_loop(kind, test)
