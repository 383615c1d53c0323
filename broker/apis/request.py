"""What a handler sees of its request: the header, the body typed as its API's request
message, and (for the handlers that answer per listener) the listener it came in on."""

from __future__ import annotations

import asyncio
from typing import Protocol, TypeVar

from broker.network.codec import ResponseParts
from protocol import Response
from protocol.messages import RequestHeader

Body_co = TypeVar("Body_co", covariant=True)

#: A response, or one the handler encoded itself (Fetch's answer to a follower).
Answer = Response | ResponseParts

#: What a handler returns: the response now, a Future of it (the handler's task is freed
#: while the response waits in a purgatory), or None for no response (Produce acks=0).
HandlerResult = Answer | asyncio.Future[Response] | asyncio.Future[Answer] | None


class ApiRequest(Protocol[Body_co]):
    """A decoded request: ``protocol.Request`` will do. ``body`` is the request message of
    the handler's API: KafkaApis dispatches on the header's API key, whose request class
    the codec decoded."""

    @property
    def header(self) -> RequestHeader: ...

    @property
    def body(self) -> Body_co: ...


class ListenerRequest(ApiRequest[Body_co], Protocol[Body_co]):
    """A request as the broker receives it (``broker.network.Request``): also the name of
    the listener it came in on, for the handlers that answer with that listener's
    endpoints (Metadata, DescribeCluster, the peers' probes of CreateTopics)."""

    @property
    def listener(self) -> str: ...
