"""The Prometheus endpoint of a broker: its own registry, served on 127.0.0.1."""

from __future__ import annotations

import asyncio

import pytest

from broker.metrics import BrokerMetrics, EventLoopLagMonitor, MetricsHttpServer
from broker.network import run
from tests.polling import until

pytestmark = pytest.mark.timeout(30)


async def _get(port: int, path: str) -> tuple[bytes, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    data = await asyncio.wait_for(reader.read(), 10)  # the server closes after answering
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body


@pytest.mark.parametrize("kind", ["uvloop", "asyncio"])
def test_metrics_endpoint_serves_this_brokers_registry_only(kind: str) -> None:
    async def test() -> None:
        first, second = BrokerMetrics(), BrokerMetrics()
        first.requests.labels(api="Produce", listener="PLAINTEXT").inc(3)
        first.watch_purgatory("Produce", lambda: 7)
        first.controller_active.set(1)
        server = MetricsHttpServer(first, port=0)
        await server.start()
        try:
            head, body = await _get(server.port, "/metrics")
            assert head.startswith(b"HTTP/1.1 200")
            text = body.decode()
            assert 'minikafka_requests_total{api="Produce",listener="PLAINTEXT"} 3.0' in text
            assert 'minikafka_purgatory_size{purgatory="Produce"} 7.0' in text
            assert "minikafka_controller_active 1.0" in text
            labels = {"api": "Produce", "listener": "PLAINTEXT"}
            assert second.registry.get_sample_value("minikafka_requests_total", labels) is None
            missing, _ = await _get(server.port, "/nothing")
            assert missing.startswith(b"HTTP/1.1 404")
        finally:
            await server.stop()

    run(asyncio.wait_for(test(), 20), kind)


def test_event_loop_lag_is_recorded() -> None:
    async def test() -> None:
        metrics = BrokerMetrics()
        monitor = EventLoopLagMonitor(metrics, interval_s=0.01)
        monitor.start()
        try:
            count = "minikafka_event_loop_lag_distribution_seconds_count"
            await until(
                lambda: (metrics.registry.get_sample_value(count) or 0) >= 2, 10, "two lag probes"
            )
        finally:
            await monitor.stop()

    run(asyncio.wait_for(test(), 20), "asyncio")
