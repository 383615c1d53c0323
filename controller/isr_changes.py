"""ISR change notifications: leaders tell the controller that an ISR changed.

A partition leader that shrinks or expands its ISR writes the new state to the
partition's state znode itself, then adds a sequential entry under
/isr_change_notification naming the partitions it changed (the codec is zk's). The
controller, watching the children, reads every entry, re-reads those partitions' states
into its context, sends UpdateMetadata for them to every live broker (so Metadata shows
the new ISR), tells the reassigner (a reassignment waits for its new replicas to join
the ISR), and deletes the entries it handled, fenced by the controller epoch. Entries
name partitions the controller may not know (a topic deleted meanwhile): those are
skipped.

Runs on the controller's event task only, except ``watch`` (kazoo's thread; it only
enqueues).
"""

from __future__ import annotations

from kazoo.protocol.states import EventType, WatchedEvent

from controller import events as ev
from controller.parts import ControllerHandler, ControllerParts
from controller.reassigner import PartitionReassigner
from controller.request_batch import ControllerRequestBatch
from protocol.values import TopicPartition


class IsrChanges(ControllerHandler):
    """The controller's handler of /isr_change_notification."""

    def __init__(self, parts: ControllerParts, reassigner: PartitionReassigner) -> None:
        super().__init__(parts)
        self.reassigner = reassigner

    def watch(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:
            self.events.put_threadsafe(ev.IsrChangeNotification())

    async def arm_watch(self) -> None:
        """Watch /isr_change_notification (a new controller, before it loads its context)."""
        await self.zk.get_isr_change_notifications(self.watch)

    async def on_isr_change(self) -> None:
        """The IsrChangeNotification event (and a new controller's first look)."""
        names = await self.zk.get_isr_change_notifications(self.watch)
        if not names:
            return
        changed: set[TopicPartition] = set()
        for name in names:
            changed |= set(await self.zk.read_isr_change_notification(name))
        known = sorted(tp for tp in changed if tp in self.ctx.leadership)
        for tp, st in (await self.zk.get_partition_states(known)).items():
            self.ctx.put_leadership(tp, st)
        batch = ControllerRequestBatch()
        batch.add_update_metadata(set(self.ctx.live_brokers), set(known))
        self.send(batch)
        await self.reassigner.on_isr_change(known)
        await self.zk.delete_isr_change_notifications(names, self.ctx.epoch_zk_version)
