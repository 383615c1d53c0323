"""The message classes: one msgspec Struct per message, for all of its versions.

``from protocol.messages import ProduceResponse`` gives the class of that message; its
nested structs are attributes named as in the spec (``ProduceResponse.TopicProduceResponse``,
``ProduceResponse.PartitionProduceResponse``, ...), each a Struct too. Fields are the
spec's names in snake_case (``ThrottleTimeMs`` -> ``throttle_time_ms``), in spec order, with
the spec's defaults, so ``ProduceResponse(responses=[...])`` fills in the rest. Messages
with flexible versions carry ``unknown_tags`` (tagged fields we do not know, kept so that
re-encoding is byte-exact). Data records (OffsetCommitKey, ConsumerProtocolSubscription,
...) and the headers (RequestHeader, ResponseHeader) are here as well.

``python -m protocol.describe <Message> [--version N]`` prints a message's classes and
fields with their versions and defaults. Type checkers read ``messages.pyi`` instead of
this module (the classes are made at import): ``python -m protocol.codec.stubs`` writes it.
"""

from __future__ import annotations

from protocol.codec import MESSAGE_INFO

globals().update({name: info.root.cls for name, info in MESSAGE_INFO.items()})

__all__ = sorted(MESSAGE_INFO)
