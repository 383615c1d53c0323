"""Message schemas as data: the model (``model``), the declarations (``specs``, generated
from Kafka's JSON message specs by ``python -m protocol.schema.generate``)."""

from protocol.schema.model import F, M, S, Versions, parse_versions

__all__ = ["F", "M", "S", "Versions", "parse_versions"]
