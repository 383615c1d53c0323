"""ControllerEventManager: one queue, one consumer, in order, survives failing handlers."""

from __future__ import annotations

import asyncio
import threading

from controller import events as ev


async def test_events_are_handled_in_order_one_at_a_time() -> None:
    seen: list[str] = []
    running = 0

    async def handler(event: ev.ControllerEvent) -> None:
        nonlocal running
        running += 1
        assert running == 1  # never two handlers at once
        await asyncio.sleep(0)
        assert isinstance(event, ev.PartitionModifications)
        seen.append(event.topic)
        running -= 1

    mgr = ev.ControllerEventManager(handler)
    mgr.start()
    for t in "abcde":
        mgr.put(ev.PartitionModifications(t))

    async def all_handled() -> None:
        while len(seen) < 5:
            await asyncio.sleep(0.001)

    await asyncio.wait_for(all_handled(), 5)
    await asyncio.wait_for(mgr.shutdown(), 5)
    assert seen == list("abcde")


async def test_a_failing_handler_does_not_stop_the_loop() -> None:
    seen: list[ev.ControllerEvent] = []

    async def handler(event: ev.ControllerEvent) -> None:
        if isinstance(event, ev.BrokerChange):
            raise RuntimeError("boom")
        seen.append(event)

    mgr = ev.ControllerEventManager(handler)
    mgr.start()
    mgr.put(ev.BrokerChange())
    mgr.put(ev.TopicChange())

    async def both_processed() -> None:
        while mgr.processed < 2:
            await asyncio.sleep(0.001)

    await asyncio.wait_for(both_processed(), 5)
    await asyncio.wait_for(mgr.shutdown(), 5)
    assert seen == [ev.TopicChange()]
    assert mgr.processed == 2


async def test_put_threadsafe_from_another_thread() -> None:
    got: asyncio.Queue[ev.ControllerEvent] = asyncio.Queue()

    async def handler(event: ev.ControllerEvent) -> None:
        await got.put(event)

    mgr = ev.ControllerEventManager(handler)
    mgr.start()
    t = threading.Thread(target=mgr.put_threadsafe, args=(ev.IsrChangeNotification(),))
    t.start()
    t.join(5)
    assert await asyncio.wait_for(got.get(), 5) == ev.IsrChangeNotification()
    await asyncio.wait_for(mgr.shutdown(), 5)


def test_put_threadsafe_before_start_is_dropped() -> None:
    async def handler(event: ev.ControllerEvent) -> None:
        raise AssertionError("not called")

    mgr = ev.ControllerEventManager(handler)
    mgr.put_threadsafe(ev.TopicChange())  # no loop yet: nothing happens, nothing raises
    assert mgr.queue_size() == 0


async def test_transient_zookeeper_errors_are_retried_for_retriable_events() -> None:
    from kazoo.exceptions import ConnectionLoss

    attempts: list[ev.ControllerEvent] = []
    done = asyncio.Event()

    async def handler(event: ev.ControllerEvent) -> None:
        attempts.append(event)
        if len(attempts) == 1:
            raise ConnectionLoss()
        done.set()

    mgr = ev.ControllerEventManager(handler)
    mgr.retry_delay_s = 0.01
    mgr.start()
    mgr.put(ev.BrokerChange())
    await asyncio.wait_for(done.wait(), 5)
    assert attempts == [ev.BrokerChange(), ev.BrokerChange()]
    await asyncio.wait_for(mgr.shutdown(), 5)


async def test_shutdown_discards_queued_events_and_answers_waiters() -> None:
    started = asyncio.Event()
    release = asyncio.Event()
    handled: list[ev.ControllerEvent] = []

    async def handler(event: ev.ControllerEvent) -> None:
        handled.append(event)
        started.set()
        await release.wait()

    mgr = ev.ControllerEventManager(handler)
    mgr.start()
    mgr.put(ev.TopicChange())
    await asyncio.wait_for(started.wait(), 5)
    reply: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    mgr.put(ev.ControlledShutdown(2, 7, reply))
    stopping = asyncio.create_task(mgr.shutdown())
    await asyncio.sleep(0)  # let shutdown drain the queue before the handler finishes
    release.set()
    await asyncio.wait_for(stopping, 5)
    assert handled == [ev.TopicChange()]
    assert reply.done() and reply.result() is None


def test_every_event_has_a_handler_in_the_controllers_table() -> None:

    from controller.controller import ControllerConfig, KafkaController
    from tests.fakes.controller import InMemoryPartitionStateStore, RecordingChannelManager
    from tests.fakes.zk import FakeZk
    from timer.clock import MockClock
    from zk.model import BrokerInfo, EndPoint

    zk = FakeZk()  # never used: the table is built without ZooKeeper
    controller = KafkaController(
        zk,
        BrokerInfo(1, (EndPoint("127.0.0.1", 9092),)),
        RecordingChannelManager(),
        MockClock(),
        ControllerConfig(),
        store=InMemoryPartitionStateStore(),
        scheduler=None,
    )
    # Stop never reaches the controller: the event manager ends on it
    handled = {cls for cls in ev.ControllerEvent.__subclasses__() if cls is not ev.Stop}
    assert set(controller.event_handlers()) == handled


async def test_the_observer_learns_each_events_queue_time_and_handling_time() -> None:
    now = [100.0]
    observed: list[tuple[str, float, float]] = []

    async def handler(event: ev.ControllerEvent) -> None:
        now[0] += 0.25  # handling takes a quarter of a second on the injected clock

    mgr = ev.ControllerEventManager(handler, clock=lambda: now[0])
    mgr.observer = lambda name, queued, handled: observed.append((name, queued, handled))
    mgr.put(ev.BrokerChange())
    now[0] += 1.0  # waited a second before the consumer started
    mgr.start()

    async def handled() -> None:
        while not observed:
            await asyncio.sleep(0.001)

    await asyncio.wait_for(handled(), 5)
    await asyncio.wait_for(mgr.shutdown(), 5)
    assert observed == [("BrokerChange", 1.0, 0.25)]
