"""What goes wrong, said so that a person can act on it; never a traceback in a page.

Each failure maps to an HTTP status and a ``Problem`` (a short title and a detail):

- bad input (``InputError``): 400, the detail names the field;
- a write in read-only mode or without a valid CSRF token (``Forbidden``): 403;
- a topic or group that is not there (``NotFound``, or a broker answering
  UNKNOWN_TOPIC_OR_PARTITION, e.g. for a topic deleted while it was being viewed): 404;
- a broker refusing an operation (``KafkaError``): 409 with the error's Kafka name and
  the broker's message, e.g. ``POLICY_VIOLATION: ...``, and for the refusals a person
  meets on a secured cluster (``HINTS``: no authorizer, the console's principal not
  allowed) a sentence on what it means;
- the cluster out of reach (``ConnectionLost``, ``RequestTimedOut``): 503, naming the
  bootstrap servers tried;
- the console's own credentials refused (SASL authentication failed): 502, pointing at
  ``--command-config``;
- an API the brokers do not serve: 501;
- anything else: 500, "internal error", the traceback only in the console's log.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

from client.errors import (
    AuthenticationFailed,
    ClientError,
    ConnectionLost,
    KafkaError,
    RequestTimedOut,
    UnsupportedApi,
)
from protocol import ErrorCode

log = logging.getLogger("minikafka.console")

#: what some Kafka errors mean for the person at the console (brokers often send none)
HINTS: Final[dict[int, str]] = {
    ErrorCode.SECURITY_DISABLED: "The cluster has no authorizer (its brokers set no "
    "authorizer.class.name), so it keeps no ACLs.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "The principal the console connects as "
    "(--command-config) is not allowed this operation on the cluster: it needs to be a "
    "super user or to hold an ACL on the cluster resource (ALTER to change, DESCRIBE to "
    "read).",
}


class InputError(ValueError):
    """A parameter the console cannot use (the message names it)."""


class NotFound(LookupError):
    """A topic, group or page that does not exist."""


class Forbidden(PermissionError):
    """A write refused by the console itself (read-only mode, a missing CSRF token)."""


@dataclass(frozen=True)
class Problem:
    status: int
    title: str
    detail: str
    #: the Kafka error name when a broker gave one
    kafka_error: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "error": {
                "status": self.status,
                "title": self.title,
                "detail": self.detail,
                "kafka_error": self.kafka_error,
            }
        }


def problem_of(exc: BaseException, bootstrap: str) -> Problem:
    if isinstance(exc, InputError):
        return Problem(400, "Bad request", str(exc))
    if isinstance(exc, Forbidden):
        return Problem(403, "Forbidden", str(exc))
    if isinstance(exc, NotFound):
        return Problem(404, "Not found", str(exc))
    if isinstance(exc, AuthenticationFailed):
        return Problem(
            502,
            "The cluster refused the console's credentials",
            f"Authentication with {bootstrap} failed (check --command-config): {exc}",
            exc.name,
        )
    if isinstance(exc, KafkaError):
        if exc.error_code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID):
            return Problem(
                404,
                "Not found",
                f"The cluster does not know this topic or partition (it may have been "
                f"deleted): {exc}",
                exc.name,
            )
        hint = HINTS.get(exc.error_code)
        detail = str(exc) if hint is None else f"{exc}. {hint}"
        return Problem(409, "The cluster refused the operation", detail, exc.name)
    if isinstance(exc, ConnectionLost | RequestTimedOut):
        return Problem(
            503,
            "The cluster is unreachable",
            f"No broker at {bootstrap} answered: {exc}",
        )
    if isinstance(exc, UnsupportedApi):
        return Problem(501, "Not supported by the brokers", str(exc))
    if isinstance(exc, ClientError):
        return Problem(502, "The cluster's answer could not be used", str(exc))
    log.error("internal error", exc_info=exc)
    return Problem(500, "Internal error", "The console failed; its log has the details.")
