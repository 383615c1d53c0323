"""Dynamic configs: /config/<type>/<name> and their /config/changes notifications (blocking).

An entity's config znode holds its dynamic overrides (``{"version":1,"config":{...}}``):
``topics/<t>``, ``brokers/<id>``, ``brokers/<default>``. Whoever changes one also creates
a sequential ``/config/changes/config_change_<10 digits>`` naming the entity, in the same
multi-op, so that no broker reads a notification before the config it points at. Each
broker follows the notifications (broker.config_changes) and purges the old ones.

SCRAM credentials (/config/users/<user>) are an entity type of this same layout; their
family is a module of its own beside this one (zk.scram), whose writes are conditional
on the znode's version and keep the keys that are not credentials.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence

from kazoo.exceptions import NoNodeError

from zk import codec, paths
from zk.session import Watch, ZkSession
from zk.transactions import CreateOp, Op, SetDataOp, commit, first_failure


def get_topic_config(session: ZkSession, topic: str) -> dict[str, str]:
    """The topic's overrides (/config/topics/<t>); empty when there are none."""
    found = session.get(paths.topic_config(topic))
    return {} if found is None else codec.decode_topic_config(topic, found[0])


def get_topic_configs(
    session: ZkSession, names: Sequence[str]
) -> dict[str, dict[str, str] | Exception]:
    """:func:`get_topic_config` for many topics, the reads in flight together (a
    LeaderAndIsr naming a hundred new topics): per topic its overrides, or the error
    that failed its read or decoding (the others are still answered)."""
    pending = [(t, session.kazoo.get_async(paths.topic_config(t))) for t in names]
    out: dict[str, dict[str, str] | Exception] = {}
    for topic, result in pending:
        try:
            data, _ = result.get()
        except NoNodeError:
            out[topic] = {}
            continue
        except Exception as exc:
            out[topic] = exc
            continue
        try:
            out[topic] = codec.decode_topic_config(topic, bytes(data or b""))
        except codec.ZkDataError as exc:
            out[topic] = exc
    return out


def get_entity_config(session: ZkSession, entity_type: str, name: str) -> dict[str, str]:
    """The dynamic config of /config/<type>/<name>; empty when there is none."""
    path = paths.entity_config(entity_type, name)
    found = session.get(path)
    return {} if found is None else codec.decode_entity_config(path, found[0])


def set_entity_config(
    session: ZkSession, entity_type: str, name: str, config: Mapping[str, str]
) -> str:
    """Replace the dynamic config of /config/<type>/<name> and announce it, in one
    multi-op. Returns the notification's name."""
    path = paths.entity_config(entity_type, name)
    session.kazoo.ensure_path(paths.CONFIG_CHANGES)
    session.kazoo.ensure_path(f"{paths.CONFIG}/{entity_type}")
    data = codec.encode_entity_config(dict(config))
    write: Op = (
        CreateOp(path, data) if session.kazoo.exists(path) is None else SetDataOp(path, data)
    )
    notify = CreateOp(
        f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}",
        codec.encode_config_change(f"{entity_type}/{name}"),
        sequential=True,
    )
    results = commit(session, [write, notify])
    failure = first_failure(results)
    if failure is not None:
        raise failure
    return str(results[-1]).rsplit("/", 1)[-1]


def get_config_changes(session: ZkSession, watch: Watch | None = None) -> list[str]:
    """The config change notifications, oldest first (names sort by sequence)."""
    return [
        c
        for c in session.children(paths.CONFIG_CHANGES, watch)
        if paths.config_change_sequence(c) >= 0
    ]


def read_config_change(
    session: ZkSession, name: str
) -> tuple[tuple[str, str] | codec.ZkDataError, int] | None:
    """((entity type, entity name), creation time in ms) of one notification; None when
    it is gone (purged meanwhile). A payload that cannot be read comes back as its
    ZkDataError, with the creation time still: skipped, and purged once it expires."""
    found = session.get(f"{paths.CONFIG_CHANGES}/{name}")
    if found is None:
        return None
    data, stat = found
    try:
        return codec.decode_config_change(data), int(stat.ctime)
    except codec.ZkDataError as exc:
        return exc, int(stat.ctime)


def delete_config_changes(session: ZkSession, names: Iterable[str]) -> None:
    """Purge notifications; one deleted meanwhile (by another broker) is skipped."""
    for name in names:
        with contextlib.suppress(NoNodeError):
            session.kazoo.delete(f"{paths.CONFIG_CHANGES}/{name}")
