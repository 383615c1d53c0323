"""minikafka timer: the hierarchical timing wheel, delayed operations and the scheduler.

Standard library only. Everything runs on the asyncio event loop's thread and reads time
through an injected Clock (MockClock in tests).

- ``SystemTimer``: timing wheel + delay queue of buckets, driven on the event loop.
- ``DelayedOperation`` / ``DelayedOperationPurgatory``: requests that wait for a
  condition or a timeout (produce acks=all, fetch min_bytes, create/delete topics,
  group joins and heartbeats).
- ``Scheduler``: named one-shot and periodic background tasks (KafkaScheduler).
- ``ExponentialBackoff`` (``timer.backoff``): the wait before each retry, with jitter.
"""

from timer.clock import Clock, MockClock, SystemClock
from timer.delay_queue import DelayQueue
from timer.delayed_operation import DelayedOperation
from timer.purgatory import DelayedOperationPurgatory
from timer.scheduler import ScheduledTask, Scheduler
from timer.system_timer import SystemTimer
from timer.timer_task import TimerTask, TimerTaskEntry
from timer.timer_task_list import TimerTaskList
from timer.timing_wheel import TimingWheel

__all__ = [
    "Clock",
    "DelayQueue",
    "DelayedOperation",
    "DelayedOperationPurgatory",
    "MockClock",
    "ScheduledTask",
    "Scheduler",
    "SystemClock",
    "SystemTimer",
    "TimerTask",
    "TimerTaskEntry",
    "TimerTaskList",
    "TimingWheel",
]
