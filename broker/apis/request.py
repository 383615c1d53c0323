"""What a handler sees of its request: the header, the body typed as its API's request
message, and the listener it came in on."""

from __future__ import annotations

import asyncio
from typing import Protocol, TypeVar

from protocol import Response
from protocol.messages import RequestHeader

Body_co = TypeVar("Body_co", covariant=True)

#: What a handler returns: the response now, a Future of it (the handler's task is freed
#: while the response waits in a purgatory), or None for no response (Produce acks=0).
HandlerResult = Response | asyncio.Future[Response] | None

#: The listener assumed for a request that does not say (protocol.Request, as unit tests
#: and in-process callers build it, knows nothing of listeners).
DEFAULT_LISTENER = "PLAINTEXT"


class ApiRequest(Protocol[Body_co]):
    """A decoded request: ``broker.network.Request`` in the broker, ``protocol.Request``
    in unit tests. ``body`` is the request message of the handler's API: KafkaApis
    dispatches on the header's API key, whose request class the codec decoded."""

    @property
    def header(self) -> RequestHeader: ...

    @property
    def body(self) -> Body_co: ...


def listener_of(request: object) -> str:
    """The name of the listener the request came in on (DEFAULT_LISTENER when unknown)."""
    listener = getattr(request, "listener", None)
    return listener if isinstance(listener, str) and listener else DEFAULT_LISTENER
