"""Which partitions should move back to their preferred leader (pure).

The preferred replica is the first one in the assignment: topic creation spreads those
evenly over the brokers, so leading from it spreads the load. After failovers leadership
piles up on the survivors; Kafka's auto leader rebalance (``auto.leader.rebalance.enable``)
checks every ``leader.imbalance.check.interval.seconds`` and, for each broker whose share
of not-preferred-led partitions exceeds ``leader.imbalance.per.broker.percentage``, moves
those partitions back, where the preferred replica is alive and in the ISR.
"""

from __future__ import annotations

from controller.context import ControllerContext
from controller.states import PartitionState
from protocol.values import TopicPartition


def imbalance_ratios(ctx: ControllerContext) -> dict[int, float]:
    """For each live broker that is some partition's preferred replica: the fraction of
    those partitions it does not lead."""
    preferred: dict[int, list[TopicPartition]] = {}
    for tp in ctx.all_partitions():
        replicas = ctx.partition_replicas(tp)
        if replicas and replicas[0] in ctx.live_brokers:
            preferred.setdefault(replicas[0], []).append(tp)
    ratios = {}
    for broker, tps in preferred.items():
        not_led = [
            tp
            for tp in tps
            if (st := ctx.leadership.get(tp)) is None or st.leader_and_isr.leader != broker
        ]
        ratios[broker] = len(not_led) / len(tps)
    return ratios


def preferred_candidates(ctx: ControllerContext, tps: list[TopicPartition]) -> list[TopicPartition]:
    """Those of ``tps`` whose preferred replica could lead now and does not."""
    out = []
    for tp in tps:
        replicas = ctx.partition_replicas(tp)
        st = ctx.leadership.get(tp)
        if not replicas or st is None:
            continue
        preferred = replicas[0]
        if (
            st.leader_and_isr.leader != preferred
            and ctx.is_replica_online(preferred)
            and preferred in st.leader_and_isr.isr
            and ctx.partition_state(tp) is PartitionState.ONLINE
            and not ctx.is_topic_queued_for_deletion(tp.topic)
        ):
            out.append(tp)
    return out


def partitions_to_rebalance(ctx: ControllerContext, threshold_percent: int) -> list[TopicPartition]:
    """Partitions to move back, for every broker whose imbalance exceeds the threshold."""
    ratios = imbalance_ratios(ctx)
    unbalanced = {b for b, r in ratios.items() if r * 100 > threshold_percent}
    tps = [
        tp
        for tp in ctx.all_partitions()
        if (r := ctx.partition_replicas(tp)) and r[0] in unbalanced
    ]
    return preferred_candidates(ctx, tps)
