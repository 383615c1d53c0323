"""Altering a resource's dynamic configuration: Kafka's ZooKeeper-mode flow, shared by
AlterConfigs and IncrementalAlterConfigs.

Read the resource's current dynamic set from its znode (not from this broker's cache: the
znode is the truth, and another broker may have written it), compute the new set (the
caller's pure ``change``), validate it with the key tables (``broker.config.alter``),
and, for this broker's own set with TLS store keys in it, load the key stores and trust
stores of its TLS listeners under it (a new key store that does not load is refused
before anything is written, as Kafka refuses it); a worker pool size may move at most
to half or double its current value on this broker (``broker.config.thread_counts``);
then, unless ``validate_only``, write
it and a ``/config/changes`` notification in one
multi-op. Every broker (this one included) applies it when it sees the notification; this
broker also applies it at once, so a DescribeConfigs right after the answer sees it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from broker.apis.services import ConfigAdmin
from broker.config.alter import (
    AlterRefused,
    ResourceType,
    listener_store_keys,
    refused_broker,
    validate_broker,
    validate_topic,
)
from broker.config.thread_counts import resize_problems
from config.errors import ConfigError
from protocol import ErrorCode
from zk import paths

#: the resource's current dynamic set -> its new one (may raise AlterRefused)
Change = Callable[[Mapping[str, str]], dict[str, str]]


def config_entity(ctx: ConfigAdmin, resource_type: int, name: str) -> tuple[str, str]:
    """The znode entity (type, name) of a ConfigResource, refused if it names nothing
    this cluster has: a topic must exist; a broker is an id or "" (the cluster default)."""
    if resource_type == ResourceType.TOPIC:
        if not ctx.metadata_cache.contains_topic(name):
            raise AlterRefused(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist."
            )
        return paths.TOPICS_ENTITY, name
    if resource_type == ResourceType.BROKER:
        if name == "":
            return paths.BROKERS_ENTITY, paths.DEFAULT_ENTITY
        if not name.isdigit():
            message = f"Broker id must be an integer, got {name}"
            raise AlterRefused(ErrorCode.INVALID_REQUEST, message)
        return paths.BROKERS_ENTITY, str(int(name))
    raise AlterRefused(ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource_type}")


async def alter_config(
    ctx: ConfigAdmin, resource_type: int, name: str, change: Change, validate_only: bool
) -> None:
    """Apply ``change`` to the resource's dynamic set; AlterRefused when it is refused."""
    zk = ctx.zk
    entity_type, entity = config_entity(ctx, resource_type, name)
    current = await zk.get_entity_config(entity_type, entity)
    updated = change(current)
    if resource_type == ResourceType.TOPIC:
        validate_topic(name, updated)
    else:
        validate_broker(name, updated)
        _check_tls_stores(ctx, name, entity, updated)
        _check_pool_sizes(ctx, name, entity, updated)
    if validate_only:
        return
    await zk.set_entity_config(entity_type, entity, updated)
    ctx.applier.apply(entity_type, entity, updated)


def _check_tls_stores(ctx: ConfigAdmin, name: str, entity: str, updated: Mapping[str, str]) -> None:
    """Load this broker's TLS listeners' stores under its new dynamic set, when it gives
    any (a change of other keys does not depend on the stores' files)."""
    config = ctx.applier.broker.config
    if entity != str(config.broker_id) or not listener_store_keys(updated):
        return  # another broker's files (it checks them as it applies them), or no store
    try:
        config.with_dynamic(default=False, config=updated).validate_tls()
    except ConfigError as exc:
        raise refused_broker(name, exc) from None


def _check_pool_sizes(ctx: ConfigAdmin, name: str, entity: str, updated: Mapping[str, str]) -> None:
    """Refuse a worker pool resized past half or double its size on this broker (the
    cluster default judged by what it would make of this broker's pools; another
    broker's own set is judged by that broker, which the admin clients ask)."""
    config = ctx.applier.broker.config
    default = entity == paths.DEFAULT_ENTITY
    if not default and entity != str(config.broker_id):
        return
    try:
        new = config.with_dynamic(default=default, config=updated)
    except ConfigError as exc:
        raise refused_broker(name, exc) from None
    problems = resize_problems(config, new)
    if problems:
        raise refused_broker(name, problems[0])


async def alter_outcome(
    ctx: ConfigAdmin, resource_type: int, name: str, change: Change, validate_only: bool
) -> tuple[int, str | None]:
    """:func:`alter_config` as a response entry needs it: (error code, message), NONE when
    the change was applied (or, with ``validate_only``, would be)."""
    try:
        await alter_config(ctx, resource_type, name, change, validate_only)
    except AlterRefused as exc:
        return exc.error_code, exc.message
    return ErrorCode.NONE, None
