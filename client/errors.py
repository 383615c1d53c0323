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


class AuthenticationFailed(KafkaError):
    """SASL authentication failed: the broker refused it (SASL_AUTHENTICATION_FAILED with
    its message, UNSUPPORTED_SASL_MECHANISM naming the mechanisms it enables,
    ILLEGAL_SASL_STATE), or the broker's answers did not check out (a forged SCRAM
    signature), which is reported as SASL_AUTHENTICATION_FAILED. Not retriable: the same
    credentials fail the same way."""

    retriable = False

    def __init__(self, error_code: int, message: str | None = None) -> None:
        super().__init__(error_code, message)
        self.retriable = False
