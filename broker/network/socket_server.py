"""SocketServer: the network side of a broker, assembled from its configuration.

    data plane     every listener except the control plane's: an Acceptor each, with
                   ``num.network.threads`` Processors each, all feeding one RequestChannel
                   (``queued.max.requests``) served by ``num.io.threads`` handler tasks
    control plane  the ``control.plane.listener.name`` listener: one Acceptor, one
                   Processor, a channel of 20 and a single handler, so controller requests
                   never queue behind client traffic

TLS (SSL and SASL_SSL listeners): each gets a ``ListenerTls`` built from its
``listener.name.<l>.ssl.*`` keys (``broker.security.tls``), shared by its Processors;
``reload_tls`` swaps its context for connections accepted from then on.

Dynamic sizes (``reconfigure``, after a dynamic broker config): ``num.io.threads``
resizes the data plane's handler pool (``RequestHandlerPool.resize``);
``num.network.threads`` adds Processors to every data-plane listener, or removes the
newest: a removed Processor takes no new connection, closes its idle ones at once and
each busy one once the responses it is owed are written (Kafka closes a removed
processor's connections; clients reconnect to a remaining one). The connection caps
(``max.connections*``) apply to the next connection accepted.

Lifecycle: ``await start()`` binds every listener and starts accepting;
``await stop()`` closes the listeners, lets requests already in the broker finish and
their responses go out (bounded by a timeout), then closes every connection.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from broker.config import BrokerConfig
from broker.config.keys import DYNAMIC_LISTENER_SSL_KEYS
from broker.config.listener_config import ListenerConfig, listener_prefix
from broker.metrics import BrokerMetrics
from broker.network.acceptor import Acceptor
from broker.network.codec import Codec
from broker.network.handler_pool import Handler, RequestHandlerPool
from broker.network.processor import Processor, ProcessorSettings
from broker.network.quotas import ConnectionQuotas
from broker.network.request_channel import RequestChannel
from broker.network.tls_transport import ListenerTls
from broker.security.principal_mapping import parse_rules
from broker.security.sasl_authenticator import SaslAuthenticator
from broker.security.tls import TLS_PROTOCOLS, listener_context
from config.errors import ConfigError
from zk.model import EndPoint

log = logging.getLogger(__name__)

CONTROL_PLANE_QUEUE_SIZE = 20

#: how long a Processor removed by a shrink waits for its busy connections' responses
#: before it closes them anyway
RETIRE_DRAIN_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class NetworkSettings:
    """The configuration keys the network reads, typed (see ``from_config``)."""

    data_listeners: tuple[EndPoint, ...]
    control_listener: EndPoint | None = None
    num_network_threads: int = 3
    num_io_threads: int = 8
    queued_max_requests: int = 500
    max_connections: int = 2**31 - 1
    max_connections_per_ip: int = 2**31 - 1
    max_connections_per_ip_overrides: tuple[tuple[str, int], ...] = ()
    listen_backlog: int = 50
    processor: ProcessorSettings = field(default_factory=ProcessorSettings)

    @staticmethod
    def from_config(config: BrokerConfig) -> NetworkSettings:
        return NetworkSettings(
            data_listeners=tuple(config.data_plane_listeners),
            control_listener=config.control_plane_listener,
            num_network_threads=config.get_int("num.network.threads"),
            num_io_threads=config.get_int("num.io.threads"),
            queued_max_requests=config.get_int("queued.max.requests"),
            max_connections=config.get_int("max.connections"),
            max_connections_per_ip=config.get_int("max.connections.per.ip"),
            max_connections_per_ip_overrides=tuple(config.max_connections_per_ip_overrides.items()),
            listen_backlog=config.get_int("socket.listen.backlog.size"),
            processor=ProcessorSettings(
                max_frame_size=config.get_int("socket.request.max.bytes"),
                idle_timeout_s=config.get_int("connections.max.idle.ms") / 1000,
                send_buffer=config.get_int("socket.send.buffer.bytes"),
                receive_buffer=config.get_int("socket.receive.buffer.bytes"),
                handshake_timeout_s=handshake_timeout_ms(config) / 1000,
            ),
        )


#: the longest a TLS handshake may take (Kafka clients give up on a connection setup
#: after socket.connection.setup.timeout.ms, 10 s by default)
MAX_HANDSHAKE_MS = 10_000


def handshake_timeout_ms(config: BrokerConfig) -> int:
    """How long a TLS connection may take to finish its handshake: the lesser of
    ``connections.max.idle.ms`` and ``MAX_HANDSHAKE_MS``."""
    return min(config.get_int("connections.max.idle.ms"), MAX_HANDSHAKE_MS)


def listener_tls(config: BrokerConfig) -> dict[str, ListenerTls]:
    """The TLS of every SSL and SASL_SSL listener: context and principal rules.
    ConfigError naming the key at fault."""
    tls: dict[str, ListenerTls] = {}
    for endpoint in config.listeners:
        if endpoint.security_protocol not in TLS_PROTOCOLS:
            continue
        listener = config.listener_config(endpoint.listener_name)
        key = "ssl.principal.mapping.rules"
        rules = parse_rules(listener.get(key) or "", listener.source_key(key))
        name = endpoint.listener_name
        tls[name] = ListenerTls(name, listener_context(listener), rules)
    return tls


def _stores(listener: ListenerConfig) -> tuple[object, ...]:
    return tuple(listener.get(key) for key in sorted(DYNAMIC_LISTENER_SSL_KEYS))


def _dynamic_stores(config: BrokerConfig, listener_name: str) -> bool:
    prefix = listener_prefix(listener_name)
    layers = (config.dynamic_default, config.dynamic_broker)
    return any(
        key.startswith(prefix) and key[len(prefix) :] in DYNAMIC_LISTENER_SSL_KEYS
        for layer in layers
        for key in layer
    )


class _Plane:
    """One request path: its listeners' acceptors and processors, channel and handlers."""

    def __init__(self, name: str, channel: RequestChannel, pool: RequestHandlerPool) -> None:
        self.name = name
        self.channel = channel
        self.pool = pool
        self.acceptors: list[Acceptor] = []
        self.processors: list[Processor] = []
        #: listener name -> its Processors (the list its Acceptor hands connections to)
        self.by_listener: dict[str, list[Processor]] = {}
        self.next_processor_id = 0


class SocketServer:
    """Listeners, processors, request channels and handler pools of one broker."""

    def __init__(
        self,
        settings: NetworkSettings | BrokerConfig,
        handle: Handler,
        *,
        control_handle: Handler | None = None,
        metrics: BrokerMetrics,
        codec: Codec | None = None,
        clock: Callable[[], float] | None = None,
        tls: Mapping[str, ListenerTls] | None = None,
        authenticators: Mapping[str, Callable[[], SaslAuthenticator]] | None = None,
    ) -> None:
        """``authenticators``: listener name -> the maker of each new connection's SASL
        state, for the SASL listeners (``broker.security.sasl_listener``)."""
        if isinstance(settings, BrokerConfig):
            if tls is None:
                tls = listener_tls(settings)
            settings = NetworkSettings.from_config(settings)
        #: listener name -> its TLS (TLS listeners only)
        self._tls: dict[str, ListenerTls] = dict(tls or {})
        self.settings = settings
        self._handle = handle
        self._control_handle = control_handle or handle
        self._codec = codec
        self.metrics = metrics
        self._clock = clock
        self._authenticators = dict(authenticators or {})
        self._quotas = ConnectionQuotas(
            settings.max_connections,
            settings.max_connections_per_ip,
            dict(settings.max_connections_per_ip_overrides),
        )
        self._planes: list[_Plane] = []
        self._started = False
        #: Processors removed by a shrink, closing their connections as they go idle
        self._retired: set[Processor] = set()
        self._retiring_tasks: set[asyncio.Task[None]] = set()
        self._codec_in_use: Codec | None = None
        self._clock_in_use: Callable[[], float] | None = None

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        clock = self._clock or loop.time
        codec = self._codec or Codec.default()
        self._codec_in_use, self._clock_in_use = codec, clock
        s = self.settings
        data = self._plane("data-plane", s.queued_max_requests, self._handle, s.num_io_threads)
        self._planes = [data]
        for endpoint in s.data_listeners:
            self._add_listener(data, endpoint, s.num_network_threads, codec, clock, False)
        if s.control_listener is not None:
            control = self._plane(
                "control-plane", CONTROL_PLANE_QUEUE_SIZE, self._control_handle, 1
            )
            self._planes.append(control)
            self._add_listener(control, s.control_listener, 1, codec, clock, True)
        try:
            for plane in self._planes:
                for acceptor in plane.acceptors:
                    acceptor.bind()
        except OSError:
            for plane in self._planes:
                for acceptor in plane.acceptors:
                    acceptor.close()
            raise
        for plane in self._planes:
            plane.pool.start()
            for processor in plane.processors:
                processor.start()
            for acceptor in plane.acceptors:
                acceptor.start()
                log.info(
                    "listening on %s (%s) port %d",
                    acceptor.endpoint.connection_string, plane.name, acceptor.port,
                )  # fmt: skip
        self._started = True

    async def stop(self, timeout_s: float = 30.0) -> None:
        """Graceful: stop accepting, finish in-flight requests, close every connection."""
        if not self._started:
            return
        self._started = False
        processors = [p for plane in self._planes for p in plane.processors]
        processors += self._retired
        for plane in self._planes:
            for acceptor in plane.acceptors:
                acceptor.close()
        for processor in processors:
            processor.begin_shutdown()
        try:
            await asyncio.wait_for(
                asyncio.gather(*(p.wait_drained() for p in processors)), timeout_s
            )
        except TimeoutError:
            log.warning("in-flight requests did not finish within %.1fs; closing anyway", timeout_s)
        for processor in processors:
            processor.close_all()
        for task in list(self._retiring_tasks):
            task.cancel()
        for plane in self._planes:
            await plane.pool.stop()

    # --- inspection -----------------------------------------------------------------------------

    def bound_port(self, listener_name: str) -> int:
        """The port a listener is bound to (the real one when configured as 0)."""
        for plane in self._planes:
            for acceptor in plane.acceptors:
                if acceptor.endpoint.listener_name == listener_name.upper():
                    return acceptor.port
        raise KeyError(listener_name)

    def reload_tls(self, listener_name: str, context: ssl.SSLContext) -> None:
        """New connections of ``listener_name`` handshake with ``context`` from now on
        (certificates reloaded); open connections keep the session they have."""
        self._tls[listener_name.upper()].context = context

    def tls_context(self, listener_name: str) -> ssl.SSLContext:
        """The context new connections of a TLS listener handshake with."""
        return self._tls[listener_name.upper()].context

    def reconfigure(self, old: BrokerConfig, new: BrokerConfig) -> None:
        """A new dynamic broker config: resize the data plane's handlers and processors
        and take the new connection caps (when started), and reload the stores of every
        TLS listener whose key store or trust store keys changed, or are given
        dynamically at all (the same path may name a renewed file). A store that no
        longer loads keeps the old context (AlterConfigs checked it on this broker
        before accepting it)."""
        if self._started:
            self.resize_handlers(new.get_int("num.io.threads"))
            self.resize_processors(new.get_int("num.network.threads"))
        self._quotas.reconfigure(
            new.get_int("max.connections"),
            new.get_int("max.connections.per.ip"),
            new.max_connections_per_ip_overrides,
        )
        self._reload_stores(old, new)

    def resize_handlers(self, size: int) -> None:
        """The data plane's request handler tasks (``num.io.threads``)."""
        pool = self._planes[0].pool
        if pool.size != size:
            pool.resize(size)

    def resize_processors(self, per_listener: int) -> None:
        """``per_listener`` Processors on every data-plane listener
        (``num.network.threads``); see the module doc for the ones removed."""
        if per_listener < 1:
            raise ValueError(f"a listener needs at least one processor, got {per_listener}")
        plane = self._planes[0]
        codec, clock = self._codec_in_use, self._clock_in_use
        assert codec is not None and clock is not None  # started
        for acceptor in plane.acceptors:
            endpoint = acceptor.endpoint
            own = plane.by_listener[endpoint.listener_name]
            if len(own) == per_listener:
                continue
            log.info(
                "listener %s: %d network processors (were %d)",
                endpoint.listener_name, per_listener, len(own),
            )  # fmt: skip
            while len(own) < per_listener:
                self._new_processor(plane, endpoint, own, acceptor, codec, clock).start()
            while len(own) > per_listener:
                self._retire(plane, own.pop())

    def _retire(self, plane: _Plane, processor: Processor) -> None:
        """Take ``processor`` out of service: no new connection, its connections closed
        once each has written the responses it is owed."""
        plane.processors.remove(processor)
        self._retired.add(processor)
        processor.begin_shutdown()

        async def close_when_drained() -> None:
            try:
                await asyncio.wait_for(processor.wait_drained(), RETIRE_DRAIN_TIMEOUT_S)
            except TimeoutError:
                log.warning(
                    "removed processor %s-%d: closing its connections still busy",
                    processor.listener, processor.id,
                )  # fmt: skip
            finally:
                processor.close_all()
                self._retired.discard(processor)

        task = asyncio.get_running_loop().create_task(close_when_drained())
        self._retiring_tasks.add(task)
        task.add_done_callback(self._retiring_tasks.discard)

    def _reload_stores(self, old: BrokerConfig, new: BrokerConfig) -> None:
        for name in self._tls:
            before, after = old.listener_config(name), new.listener_config(name)
            if _stores(before) == _stores(after) and not _dynamic_stores(new, name):
                continue
            try:
                context = listener_context(after)
            except ConfigError as exc:
                log.error("listener %s keeps its certificates: %s", name, exc)
                continue
            self.reload_tls(name, context)
            log.info("listener %s: key store and trust store reloaded", name)

    @property
    def data_channel(self) -> RequestChannel:
        return self._planes[0].channel

    @property
    def control_channel(self) -> RequestChannel | None:
        return self._planes[1].channel if len(self._planes) > 1 else None

    @property
    def handler_count(self) -> int:
        """The data plane's request handler tasks."""
        return self._planes[0].pool.size if self._planes else 0

    @property
    def processor_count(self) -> int:
        """The data plane's Processors, over every listener."""
        return len(self._planes[0].processors) if self._planes else 0

    @property
    def connection_count(self) -> int:
        return sum(p.connection_count for plane in self._planes for p in plane.processors)

    def principal_counts(self) -> dict[tuple[str, str], int]:
        """Open connections per (listener, principal), for the metrics."""
        counts: Counter[tuple[str, str]] = Counter()
        for plane in self._planes:
            for processor in plane.processors:
                counts.update(processor.principals())
        return dict(counts)

    def idle_seconds(self) -> list[tuple[str, str, float]]:
        """Idle seconds of every network processor (``processor``, LISTENER-ID) and of
        every plane's average request handler (``handler``, plane name), for metrics."""
        idle = [
            ("processor", f"{p.listener}-{p.id}", p.idle_seconds())
            for plane in self._planes
            for p in plane.processors
        ]
        idle += [("handler", plane.name, plane.pool.idle_seconds()) for plane in self._planes]
        return idle

    # --- assembly -------------------------------------------------------------------------------

    def _plane(self, name: str, queue_size: int, handle: Handler, handlers: int) -> _Plane:
        channel = RequestChannel(queue_size, name)
        self.metrics.watch_request_queue(name, channel.__len__)
        clock = self._clock or asyncio.get_running_loop().time
        pool = RequestHandlerPool(channel, handle, handlers, self.metrics, clock, name)
        return _Plane(name, channel, pool)

    def _add_listener(
        self,
        plane: _Plane,
        endpoint: EndPoint,
        processors: int,
        codec: Codec,
        clock: Callable[[], float],
        exempt: bool,
    ) -> None:
        if endpoint.security_protocol in TLS_PROTOCOLS and endpoint.listener_name not in self._tls:
            raise ValueError(f"listener {endpoint.listener_name} speaks TLS but has no context")
        own = plane.by_listener.setdefault(endpoint.listener_name, [])
        acceptor = Acceptor(
            endpoint,
            own,
            self._quotas,
            self.metrics,
            backlog=self.settings.listen_backlog,
            exempt_from_max_connections=exempt,
        )
        for _ in range(processors):
            self._new_processor(plane, endpoint, own, acceptor, codec, clock)
        plane.acceptors.append(acceptor)

    def _new_processor(
        self,
        plane: _Plane,
        endpoint: EndPoint,
        own: list[Processor],
        acceptor: Acceptor,
        codec: Codec,
        clock: Callable[[], float],
    ) -> Processor:
        """A new Processor of ``endpoint``'s listener, in its Acceptor's list (not started)."""
        processor = Processor(
            plane.next_processor_id,
            endpoint.listener_name,
            plane.channel,
            codec,
            self.metrics,
            self.settings.processor,
            clock,
            on_close=acceptor.release,
            tls=self._tls.get(endpoint.listener_name),
            authenticator=self._authenticators.get(endpoint.listener_name),
        )
        plane.next_processor_id += 1
        own.append(processor)
        plane.processors.append(processor)
        return processor
