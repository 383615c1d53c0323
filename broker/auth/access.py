"""AccessControl: the handlers' one entry to authorization, with its log line and metric.

Every handler family carries it (``BrokerBasics.access``). Without an authorizer
(``authorizer.class.name`` empty) every check allows at once and nothing is logged: the
broker behaves as it always did. With one, each check asks the authorizer for the
request's principal and client address, and a denial is

- logged on the ``kafka.authorizer.logger`` logger at INFO, as Kafka words it:
  ``Principal = User:bob is Denied Operation = Read from host = 127.0.0.1 on resource =
  Topic:LITERAL:payments for request = Fetch``;
- counted in ``minikafka_authorization_denials_total{api, resource_type}``.

Checks made only to filter what a response lists (Metadata's topics, ListGroups' groups,
the authorized-operations bit fields) pass ``quiet=True``: Kafka logs those at debug level
and does not count them as denials, since the client asked for nothing it was refused.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from broker.auth.authorizer import Authorizer
from broker.security.principal import ANONYMOUS, KafkaPrincipal
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.metrics import BrokerMetrics

authorizer_log = logging.getLogger("kafka.authorizer.logger")

#: the config resource type of a topic in DescribeConfigs and the AlterConfigs APIs (the
#: others, brokers and broker loggers, are the cluster's to authorize)
CONFIG_TOPIC = 2


def _caller(request: object) -> tuple[KafkaPrincipal, str]:
    """The principal and client address of a request as the network layer made it
    (``broker.network.Request``); a request built without them (a unit test's) is an
    anonymous one from nowhere."""
    principal = getattr(request, "principal", ANONYMOUS)
    return principal, str(getattr(request, "client_host", ""))


class AccessControl:
    __slots__ = ("_metrics", "authorizer")

    def __init__(self, authorizer: Authorizer | None, metrics: BrokerMetrics | None) -> None:
        self.authorizer = authorizer
        self._metrics = metrics

    @staticmethod
    def open() -> AccessControl:
        """No authorizer: everything allowed (``authorizer.class.name`` empty)."""
        return AccessControl(None, None)

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def authorize(
        self,
        request: object,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
        *,
        quiet: bool = False,
    ) -> bool:
        authorizer = self.authorizer
        if authorizer is None:
            return True
        principal, host = _caller(request)
        if authorizer.authorize(principal, host, operation, resource_type, name):
            return True
        if not quiet:
            self._denied(request, operation, resource_type, name)
        return False

    def authorize_any(
        self, request: object, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """``operation`` on at least one resource of the type (no log line: the caller
        reports its own refusal)."""
        authorizer = self.authorizer
        if authorizer is None:
            return True
        principal, host = _caller(request)
        return authorizer.authorize_any(principal, host, operation, resource_type)

    def allowed(
        self,
        request: object,
        operation: AclOperation,
        resource_type: ResourceType,
        names: Iterable[str],
        *,
        quiet: bool = False,
    ) -> set[str]:
        """The names among ``names`` the request may ``operation`` (each checked once)."""
        unique = set(names)
        if self.authorizer is None:
            return unique
        return {
            n for n in unique if self.authorize(request, operation, resource_type, n, quiet=quiet)
        }

    def authorized_operations(
        self,
        request: object,
        resource_type: ResourceType,
        name: str,
        operations: Iterable[AclOperation],
    ) -> int:
        """The bit field of the include_*_authorized_operations answers."""
        authorizer = self.authorizer
        if authorizer is None:
            bits = 0
            for operation in operations:
                bits |= 1 << operation.value
            return bits
        principal, host = _caller(request)
        return authorizer.authorized_operations(principal, host, resource_type, name, operations)

    def config_error(
        self, request: object, config_resource_type: int, name: str, operation: AclOperation
    ) -> int:
        """The error for a Describe/Alter/IncrementalAlterConfigs resource the request may
        not ``operation`` (DESCRIBE_CONFIGS or ALTER_CONFIGS), NONE when it may: a topic's
        on the topic (TOPIC_AUTHORIZATION_FAILED), a broker's or broker logger's on the
        cluster (CLUSTER_AUTHORIZATION_FAILED), as Kafka."""
        if self.authorizer is None:
            return ErrorCode.NONE
        if config_resource_type == CONFIG_TOPIC:
            allowed = self.authorize(request, operation, ResourceType.TOPIC, name)
            return ErrorCode.NONE if allowed else ErrorCode.TOPIC_AUTHORIZATION_FAILED
        allowed = self.authorize(request, operation, ResourceType.CLUSTER, CLUSTER_NAME)
        return ErrorCode.NONE if allowed else ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    def _denied(
        self, request: object, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> None:
        principal, host = _caller(request)
        api = str(getattr(request, "api_name", "Unknown"))
        authorizer_log.info(
            "Principal = %s is Denied Operation = %s from host = %s on resource = %s:LITERAL:%s"
            " for request = %s",
            principal,
            operation.camel,
            host,
            resource_type.camel,
            name,
            api,
        )
        if self._metrics is not None:
            self._metrics.authorization_denials.labels(
                api=api, resource_type=resource_type.name.lower()
            ).inc()
