"""ClientQuotas: the quota table of one broker and the rates it measures against it.

The table (entity -> quota key -> bytes per second) is loaded from ZooKeeper at startup
and follows /config/changes (``users/...``, ``clients/...`` notifications, applied by
``apply_entity_config``); AlterClientQuotas applies its own writes at once too. Each
quota type -- ``produce`` (``producer_byte_rate``) and ``fetch`` (``consumer_byte_rate``)
-- keeps one ``SampledRate`` per quota tags (``zk.quota_entities.resolve``): a request is recorded
under the tags of the entity that gives it its quota, and answered with the throttle time
that record costs (0 within the quota). A client no quota applies to is not measured.

A rate whose client went quiet for the whole span is forgotten once ``MAX_RATES`` are
kept (``_sweep``), so the rates kept stay bounded by the clients active lately. A quota
changed or removed keeps the rates measured so far (they are re-resolved per request).
Event-loop bound; time is injected (``now_ms``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final, Protocol

from broker.client_quotas.rate import SampledRate, throttle_ms
from zk.quota_entities import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    EntityKey,
    entity_path,
    parse_entity_path,
    quotas_from_config,
    resolve,
)

log = logging.getLogger(__name__)

#: rates kept per quota type before the quiet ones are swept
MAX_RATES: Final = 10_000

#: quota type -> the quota key it enforces
QUOTA_TYPES: Final[Mapping[str, str]] = {"produce": PRODUCER_BYTE_RATE, "fetch": CONSUMER_BYTE_RATE}


class QuotaObserver(Protocol):
    """Where the measurements go (the broker's metrics; a recorder in tests)."""

    def rate(self, quota_type: str, tags: tuple[str, str], value: float) -> None: ...

    def throttled(self, quota_type: str, throttle_ms: int) -> None: ...


class ClientQuotas:
    """The quota table and the rates of ``QUOTA_TYPES``."""

    def __init__(self, num_samples: int, window_ms: int, observer: QuotaObserver) -> None:
        self.num_samples = num_samples
        self.window_ms = window_ms
        #: the longest throttle: the whole span the rate is measured over
        self.max_throttle_ms = num_samples * window_ms
        self._observer = observer
        self._table: dict[EntityKey, dict[str, float]] = {}
        self._rates: dict[str, dict[tuple[str, str], SampledRate]] = {t: {} for t in QUOTA_TYPES}

    # -- the table -----------------------------------------------------------------------

    def table(self) -> Mapping[EntityKey, Mapping[str, float]]:
        return self._table

    def set_entity(self, entity: EntityKey, quotas: Mapping[str, float]) -> None:
        """``entity``'s quotas are now exactly ``quotas`` (none: forgotten)."""
        before = self._table.get(entity, {})
        if quotas:
            self._table[entity] = dict(quotas)
        else:
            self._table.pop(entity, None)
        if dict(before) != dict(quotas):
            log.info("client quotas of %s are now %s", entity_path(entity), dict(quotas) or "none")

    def replace_all(self, table: Mapping[EntityKey, Mapping[str, float]]) -> None:
        """Take ``table`` as the whole content (the startup load)."""
        self._table = {e: dict(q) for e, q in table.items() if q}

    def apply_entity_config(self, entity_type: str, name: str, config: Mapping[str, str]) -> None:
        """The new dynamic config of /config/<entity_type>/<name> (a notification's
        entity); paths naming no quota entity are ignored."""
        entity = parse_entity_path(entity_type, name)
        if entity is not None:
            self.set_entity(entity, quotas_from_config(config))

    # -- measuring -----------------------------------------------------------------------

    def quota_for(self, quota_type: str, user: str, client_id: str) -> float | None:
        found = resolve(self._table, QUOTA_TYPES[quota_type], user, client_id)
        return None if found is None else found[0]

    def max_bytes_in_window(self, quota_type: str, user: str, client_id: str) -> int | None:
        """The most bytes one request should carry: what the quota allows over all but
        one window of the span (Kafka caps a consumer's fetch size by it, so that one
        answer never costs more than the span); None when no quota applies."""
        quota = self.quota_for(quota_type, user, client_id)
        if quota is None:
            return None
        windows = max(self.num_samples - 1, 1)
        return max(int(quota * windows * self.window_ms / 1000), 1)

    def record(self, quota_type: str, user: str, client_id: str, size: int, now_ms: float) -> int:
        """Count ``size`` bytes of ``user`` / ``client_id``; the throttle time (ms) the
        response must carry, 0 within the quota or when no quota applies."""
        if not self._table:
            return 0
        found = resolve(self._table, QUOTA_TYPES[quota_type], user, client_id)
        if found is None:
            return 0
        quota, tags = found
        rates = self._rates[quota_type]
        rate = rates.get(tags)
        if rate is None:
            if len(rates) >= MAX_RATES:
                self._sweep(rates, now_ms)
            rate = rates[tags] = SampledRate(self.num_samples, self.window_ms)
        rate.record(size, now_ms)
        measured = rate.measure(now_ms)
        self._observer.rate(quota_type, tags, measured)
        delay = throttle_ms(measured, quota, rate.span_ms(now_ms), self.max_throttle_ms)
        if delay:
            self._observer.throttled(quota_type, delay)
        return delay

    def unrecord(
        self, quota_type: str, user: str, client_id: str, size: int, now_ms: float
    ) -> None:
        """Take back ``size`` bytes just recorded (a throttled fetch answers no records)."""
        found = resolve(self._table, QUOTA_TYPES[quota_type], user, client_id)
        if found is None:
            return
        rate = self._rates[quota_type].get(found[1])
        if rate is not None:
            rate.record(-size, now_ms)

    def _sweep(self, rates: dict[tuple[str, str], SampledRate], now_ms: float) -> None:
        """Forget the rates of clients quiet for the whole span (a fresh rate measures
        them the same: zero)."""
        for tags in [t for t, r in rates.items() if r.measure(now_ms) <= 0]:
            del rates[tags]
