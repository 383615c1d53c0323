"""Which synonyms DescribeConfigs lists for a key, and in which order: Kafka's rule.

A broker key's value may come from several layers (strongest first: this broker's
dynamic config, the cluster's dynamic default, server.properties, the key's default) and
from several names: a key given in another unit (``log.retention.ms`` / ``.minutes`` /
``.hours``, ``log.roll.ms`` / ``.hours``) or one that falls back to another
(``log.flush.interval.ms`` to ``log.flush.scheduler.interval.ms``). Kafka lists the
synonyms of key ``name`` whose synonym names are ``keys`` (``name`` first) thus:

1. layer by layer, strongest first, and within a layer in the order of ``keys``, every
   name the layer sets (a default layer sets only the keys whose default is not null);
2. then drops everything before the first synonym named ``name`` itself: a list in which
   ``name`` never appears is empty.

So ``log.retention.ms`` unset everywhere, with ``log.retention.hours`` at its default
168, lists nothing: the hours synonym precedes any ``log.retention.ms`` (there is none),
and a topic's ``retention.ms`` (whose broker synonym is ``log.retention.ms``) lists only
its own override, if any, and answers DEFAULT_CONFIG as its source. A topic key's list is
its override (DYNAMIC_TOPIC_CONFIG) first, when it has one, then its broker key's list;
the entry's source is the first synonym's, DEFAULT_CONFIG for an empty list.

Which names a broker key has (``synonym_keys``): a key in a group of units names the
whole group (``log.retention.hours`` too, though its list then starts at its own first
appearance); a key with a fallback names itself and the fallback; the fallback key alone
only itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from config.log_keys import SYNONYM_FALLBACKS

#: where a layer's values come from (broker.config.describe.ConfigSource)
Source = TypeVar("Source", bound=int)


def synonym_keys(name: str) -> tuple[str, ...]:
    """The broker keys whose settings are synonyms of broker key ``name``, in Kafka's
    order (``name``'s group first to last)."""
    for head, members in SYNONYM_FALLBACKS.items():
        names = tuple(key for key, _ in members)
        if name == head:
            return names
        units = all(factor != 1 for _, factor in members[1:])
        if units and name in names:
            return names
    return (name,)


def listed_synonyms(
    name: str, keys: Sequence[str], layers: Sequence[tuple[Mapping[str, str], Source]]
) -> list[tuple[str, str | None, Source]]:
    """Kafka's synonyms of ``name`` (rule above) as (key, value, source): ``layers`` are
    (text values by key, their source), strongest first, the defaults' layer last."""
    found: list[tuple[str, str | None, Source]] = [
        (key, layer[key], source)
        for layer, source in layers
        for key in keys
        if layer.get(key) is not None
    ]
    for i, (key, _, _) in enumerate(found):
        if key == name:
            return found[i:]
    return []
