"""DescribeConfigs (32), v0-4: topic and broker configuration with sources and synonyms.

Resources: TOPIC (2) -- the topic's overrides from /config/topics/<t> (the broker's
TopicConfigs, shared with LeaderAndIsr and the LogManager) over the broker's defaults;
BROKER (4) -- this broker's static configuration (name "" or our id); BROKER_LOGGER (8)
-- not offered. ``configuration_keys`` null means every key.
Sensitive values (passwords) are never returned. v0 has no sources or synonyms: each
entry says only whether it is a default (``is_default``).
"""

from __future__ import annotations

import logging

from broker.apis.request import ApiRequest
from broker.apis.services import ConfigAdmin
from broker.config import ConfigEntry, ConfigSource, describe_topic_config
from broker.topic_overrides import topic_overrides
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation
from protocol.messages import DescribeConfigsRequest, DescribeConfigsResponse

log = logging.getLogger(__name__)

TOPIC = 2
BROKER = 4

Result = DescribeConfigsResponse.DescribeConfigsResult
Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


async def handle(ctx: ConfigAdmin, request: ApiRequest[DescribeConfigsRequest]) -> Response:
    body = request.body
    version = request.header.api_version
    results = []
    access = ctx.broker.access
    for resource in body.resources:
        denied = access.config_error(
            request, resource.resource_type, resource.resource_name, AclOperation.DESCRIBE_CONFIGS
        )
        if denied:
            results.append(
                Result(
                    error_code=denied,
                    error_message=None,
                    resource_type=resource.resource_type,
                    resource_name=resource.resource_name,
                    configs=[],
                )
            )
            continue
        try:
            entries = await _entries(
                ctx, resource.resource_type, resource.resource_name, resource.configuration_keys
            )
        except _Refused as exc:
            results.append(
                Result(
                    error_code=exc.error_code,
                    error_message=exc.message,
                    resource_type=resource.resource_type,
                    resource_name=resource.resource_name,
                    configs=[],
                )
            )
            continue
        results.append(
            Result(
                error_code=ErrorCode.NONE,
                error_message=None,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=[
                    _entry(e, version, body.include_synonyms, body.include_documentation)
                    for e in entries
                ],
            )
        )
    response = DescribeConfigsResponse(throttle_time_ms=0, results=results)
    return make_response(request.header, response)


class _Refused(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


async def _entries(
    ctx: ConfigAdmin, resource_type: int, name: str, keys: list[str] | None
) -> list[ConfigEntry]:
    if resource_type == TOPIC:
        if not ctx.metadata_cache.contains_topic(name):
            raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        overrides = await topic_overrides(ctx.zk, ctx.topic_configs, name)
        return describe_topic_config(ctx.config, overrides, keys)
    if resource_type == BROKER:
        if name not in ("", str(ctx.broker_id)):
            raise _Refused(
                ErrorCode.INVALID_REQUEST,
                f"Unexpected broker id, expected {ctx.broker_id} or empty string, "
                f"but received {name}",
            )
        return ctx.config.describe(keys)
    raise _Refused(ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource_type}")


def _entry(e: ConfigEntry, version: int, synonyms: bool, documentation: bool) -> Entry:
    entry = Entry(
        name=e.name,
        value=e.value,
        read_only=e.read_only,
        is_sensitive=e.is_sensitive,
        synonyms=[],
    )
    if version == 0:
        entry.is_default = e.source == ConfigSource.DEFAULT_CONFIG
    else:
        entry.config_source = int(e.source)
        if synonyms:
            entry.synonyms = [Synonym(name=n, value=v, source=int(s)) for n, v, s in e.synonyms]
    if version >= 3:
        entry.config_type = int(e.type)
        entry.documentation = e.documentation if documentation else None
    return entry
