"""What the network needs from the wire codec, as one injectable bundle.

The Processor decodes each frame into a request (header and body) and encodes each
response into pieces; it never looks inside bodies. ``Codec.default()`` binds the
functions of the ``protocol`` package; tests and benchmarks may pass their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import protocol
from protocol.api import api_name
from protocol.messages import ApiVersionsResponse, RequestHeader


@dataclass(frozen=True, slots=True)
class ResponseParts:
    """A response already encoded by the handler: body pieces (bytes or file regions),
    without the 4-byte size prefix -- the same shape ``encode_response_parts`` returns."""

    parts: Sequence[object]


#: (request header, error code) -> a Response carrying that error, or None to close instead.
#: Typed loosely, as the whole bundle is: the network passes headers and responses along
#: without looking at them, and tests and benchmarks plug in codecs of their own.
ErrorResponder = Callable[[Any, int], Any]


def _no_error_response(header: Any, error_code: int) -> None:
    return None


def api_versions_error_response(header: RequestHeader, error_code: int) -> protocol.Response | None:
    """The default error builder: answers ApiVersions (its error body needs nothing from
    the request), and nothing else -- other APIs' error bodies echo the request's topics
    and partitions, which KafkaApis' builder knows how to do."""
    if header.api_key != protocol.ApiKey.API_VERSIONS:
        return None
    low, high = protocol.SUPPORTED_VERSIONS[protocol.ApiKey.API_VERSIONS]
    if not low <= header.api_version <= high:
        return protocol.api_versions_fallback_response(header)
    return protocol.make_response(header, ApiVersionsResponse(error_code=error_code, api_keys=[]))


@dataclass(frozen=True, slots=True)
class Codec:
    decode_request: Callable[[bytes | memoryview], Any]
    encode_response_parts: Callable[[Any], Sequence[object]]
    #: builds the error response for a request whose body could not be used (or whose
    #: handler failed); KafkaApis plugs in its own. Returning None closes the connection.
    error_response: ErrorResponder = _no_error_response
    #: the API's name for metrics and logs (Kafka's spelling: ``ApiVersions``)
    api_name: Callable[[int], str] = api_name

    @staticmethod
    def default(error_response: ErrorResponder | None = None) -> Codec:
        """The ``protocol`` package's codec."""
        return Codec(
            decode_request=protocol.decode_request,
            encode_response_parts=protocol.encode_response_parts,
            error_response=error_response or api_versions_error_response,
        )

    def encode(self, response: Any) -> Sequence[object]:
        if isinstance(response, ResponseParts):
            return response.parts
        return self.encode_response_parts(response)
