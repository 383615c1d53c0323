"""The client's exceptions: one base class, a Kafka error code when the broker gave one."""

from __future__ import annotations

from protocol.errors import ErrorCode


class ClientError(Exception):
    """Anything the client could not do. ``retriable`` says whether trying again (after a
    metadata refresh) may succeed."""

    retriable: bool = False


class KafkaError(ClientError):
    """A broker answered with an error code."""

    def __init__(self, error_code: int, message: str | None = None) -> None:
        self.error_code = int(error_code)
        try:
            self.name = ErrorCode(self.error_code).name
            self.retriable = ErrorCode(self.error_code).retriable
        except ValueError:
            self.name = f"ERROR_{self.error_code}"
            self.retriable = False
        text = self.name if not message else f"{self.name}: {message}"
        super().__init__(text)


class ConnectionLost(ClientError):
    """The connection failed or closed with requests in flight (they are lost with it)."""

    retriable = True


class RequestTimedOut(ClientError):
    """No response within the request timeout; the connection is closed, since the
    correlation of later responses can no longer be trusted."""

    retriable = True


class UnsupportedApi(ClientError):
    """The broker does not serve an API, or no version both sides speak."""
