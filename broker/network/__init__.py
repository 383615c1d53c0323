"""The broker's network server on asyncio, without streams (docs/architecture.md).

    Acceptor --round robin--> Processor --RequestChannel--> RequestHandlerPool --> handle()
                                 ^                                                   |
                                 +------------- respond() (response queue) <---------+

Plug the request handler (KafkaApis) in with ``SocketServer(config, handle)``; see
``handler_pool`` for what ``handle`` may return, ``send`` for zero-copy file regions, and
``pipeline`` for how a waiting Produce lets its connection read on (responses still in
request order), and ``tls_transport`` for TLS on SSL and SASL_SSL listeners.
"""

from broker.network.codec import Codec, ResponseParts
from broker.network.handler_pool import Handler, RequestHandlerPool
from broker.network.loop import new_event_loop, run
from broker.network.request_channel import Request, RequestChannel
from broker.network.send import FileRegion, ResponseSend
from broker.network.socket_server import NetworkSettings, SocketServer

__all__ = [
    "Codec",
    "FileRegion",
    "Handler",
    "NetworkSettings",
    "Request",
    "RequestChannel",
    "RequestHandlerPool",
    "ResponseParts",
    "ResponseSend",
    "SocketServer",
    "new_event_loop",
    "run",
]
