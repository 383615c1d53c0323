"""The consumer groups pages: the list (``/groups``: state, members, total lag), a group
(``/groups/<g>``: members and their assignments; committed offset, log end and lag per
partition and per topic; a chart of its total lag over the minutes the console has
watched it, ``web.lag_history``), resetting its offsets (``POST /groups/<g>/reset``: a
preview unless ``execute`` is set; refused while the group has active members, as Kafka's
tool refuses it) and deleting it (``POST /groups/<g>/delete``, confirmed by typing its id).

Lag is the log end offset (ListOffsets latest) minus the committed offset, per partition
the group has committed or a member is assigned; a partition without a commit has no lag.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from client.client import KafkaClient
from client.errors import KafkaError
from client.fetch import list_offsets
from client.group_admin import (
    DEAD,
    GroupDescription,
    alter_group_offsets,
    delete_groups,
    describe_groups,
    list_group_offsets,
    list_groups,
)
from client.offset_reset import ResetError, plan
from protocol import ErrorCode
from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, TopicPartition
from web.context import Console
from web.errors import Forbidden, InputError, NotFound
from web.reset import KINDS, parse_spec
from web.views import Page, Params, View


async def offsets_at(
    client: KafkaClient, partitions: Iterable[TopicPartition], timestamp: int
) -> dict[TopicPartition, int]:
    """ListOffsets at ``timestamp`` of ``partitions``; those of topics that no longer exist
    are left out."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return {}
    view = await client.refresh_metadata(sorted(by_topic))
    out: dict[TopicPartition, int] = {}
    for topic, parts in sorted(by_topic.items()):
        info = view.topics.get(topic)
        if info is None or info.error_code != ErrorCode.NONE:
            continue
        known = [p for p in parts if p in info.partitions]
        found = await list_offsets(client, topic, dict.fromkeys(known, timestamp))
        out.update({TopicPartition(topic, p): o for p, o in found.items()})
    return out


def assigned(group: GroupDescription) -> dict[TopicPartition, str]:
    return {
        TopicPartition(t, p): m.member_id
        for m in group.members
        for t, ps in m.assignment.partitions.items()
        for p in ps
    }


async def lag_rows(client: KafkaClient, group: GroupDescription) -> list[dict[str, Any]]:
    committed = await list_group_offsets(client, group.group_id)
    owners = assigned(group)
    partitions = sorted(set(committed) | set(owners))
    ends = await offsets_at(client, partitions, LATEST_TIMESTAMP)
    rows = []
    for tp in partitions:
        current, end = committed.get(tp), ends.get(tp)
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "committed_offset": current,
                "log_end_offset": end,
                "lag": None if current is None or end is None else max(0, end - current),
                "member": owners.get(tp),
            }
        )
    return rows


def total_lag(rows: list[dict[str, Any]]) -> int:
    return sum(r["lag"] or 0 for r in rows)


def lag_by_topic(rows: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r["topic"]] = out.get(r["topic"], 0) + (r["lag"] or 0)
    return dict(sorted(out.items()))


def remember(console: Console, group_id: str, rows: list[dict[str, Any]]) -> None:
    console.lag_history.record(group_id, console.clock.time_ms(), lag_by_topic(rows))


async def list_all(console: Console, params: Params) -> dict[str, Any]:
    client = console.client
    listed = await list_groups(client)
    described = await describe_groups(client, list(listed))
    lags = await asyncio.gather(*(lag_rows(client, g) for g in described.values()))
    for g, rows in zip(described.values(), lags, strict=True):
        remember(console, g.group_id, rows)
    return {
        "title": "Consumer groups",
        "groups": [
            {
                "group": g.group_id,
                "state": g.state,
                "protocol_type": g.protocol_type,
                "members": len(g.members),
                "coordinator": None if g.coordinator is None else g.coordinator.node_id,
                "total_lag": total_lag(rows),
            }
            for g, rows in zip(described.values(), lags, strict=True)
        ],
    }


async def _group(console: Console, group_id: str) -> GroupDescription:
    group = (await describe_groups(console.client, [group_id]))[group_id]
    if group.state == DEAD:
        raise NotFound(f"Consumer group '{group_id}' does not exist.")
    return group


async def describe(console: Console, params: Params) -> dict[str, Any]:
    group_id = params.path["group"]
    group = await _group(console, group_id)
    rows = await lag_rows(console.client, group)
    remember(console, group_id, rows)
    history = console.lag_history.points(group_id, console.clock.time_ms())
    return {
        "title": f"Group {group_id}",
        "group": group_id,
        "state": group.state,
        "protocol_type": group.protocol_type,
        "assignor": group.protocol,
        "coordinator": None if group.coordinator is None else group.coordinator.node_id,
        "active": group.is_active,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "host": m.host,
                "assignment": {t: sorted(ps) for t, ps in sorted(m.assignment.partitions.items())},
            }
            for m in sorted(group.members, key=lambda m: m.member_id)
        ],
        "offsets": rows,
        "lag_by_topic": lag_by_topic(rows),
        "total_lag": total_lag(rows),
        "lag_history": [{"time_ms": p.time_ms, "lag": dict(p.lag)} for p in history],
        "reset_kinds": list(KINDS),
    }


async def reset(console: Console, params: Params) -> dict[str, Any]:
    group_id = params.path["group"]
    client = console.client
    try:
        spec = parse_spec(params.text("kind", "earliest"), params.text("value"))
    except ResetError as exc:
        raise InputError(str(exc)) from None
    execute = params.flag("execute")
    group = (await describe_groups(client, [group_id]))[group_id]
    if group.is_active:
        raise Forbidden(
            f"Offsets of group '{group_id}' can only be reset while it has no active "
            f"members; it is {group.state} with {len(group.members)} member(s)."
        )
    committed = await list_group_offsets(client, group_id)
    topic = params.text("topic").strip()
    if topic:
        view = await client.refresh_metadata([topic])
        info = view.topics.get(topic)
        if info is None or info.error_code != ErrorCode.NONE:
            raise NotFound(f"Topic '{topic}' does not exist.")
        partitions = [TopicPartition(topic, p) for p in sorted(info.partitions)]
    else:
        partitions = sorted(committed)
    if not partitions:
        raise InputError(f"Group '{group_id}' has no committed offsets: name a topic.")
    earliest = await offsets_at(client, partitions, EARLIEST_TIMESTAMP)
    latest = await offsets_at(client, partitions, LATEST_TIMESTAMP)
    partitions = [tp for tp in partitions if tp in latest]
    by_time = await offsets_at(client, partitions, spec.value) if spec.kind == "timestamp" else None
    try:
        new = plan(
            spec, partitions, earliest=earliest, latest=latest, committed=committed, by_time=by_time
        )
    except ResetError as exc:
        raise InputError(str(exc)) from None
    if execute and new:
        await alter_group_offsets(client, group_id, new)
    data: dict[str, Any] = {
        "title": f"Reset offsets of {group_id}",
        "group": group_id,
        "kind": spec.kind,
        "value": params.text("value"),
        "topic": topic,
        "executed": execute,
        "offsets": [
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "committed_offset": committed.get(tp),
                "new_offset": o,
            }
            for tp, o in new.items()
        ],
    }
    if execute:
        data["redirect"] = f"/groups/{quote(group_id, safe='')}"
    return data


async def delete(console: Console, params: Params) -> dict[str, Any]:
    group_id = params.path["group"]
    if params.text("confirm").strip() != group_id:
        raise InputError(f"To delete group '{group_id}', type its id in the confirmation field.")
    code = (await delete_groups(console.client, [group_id]))[group_id]
    if code != ErrorCode.NONE:
        raise KafkaError(code, f"delete group '{group_id}'")
    console.lag_history.forget(group_id)
    return {"deleted": group_id, "redirect": "/groups"}


PAGE = Page(
    "groups",
    "Consumer groups",
    "/groups",
    (
        View("/groups", "groups.html", list_all),
        # ``path``: a group id may hold any character, "/" included
        View("/groups/{group:path}", "group.html", describe),
        View("/groups/{group:path}/reset", "reset.html", reset, write=True),
        View("/groups/{group:path}/delete", "group.html", delete, write=True),
    ),
)
