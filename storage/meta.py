"""meta.properties: which broker and cluster a log directory belongs to (Kafka's format).

Format (Java properties, as Kafka writes it in ZooKeeper mode; read and written with
``config.properties``)::

    #Written by minikafka
    version=0
    broker.id=1
    cluster.id=WjKzx3cbQ2Kmw5ASHcD_Hg

Rules, checked before any log is loaded:

- every directory that has the file must name the same broker.id and cluster.id,
  otherwise the broker refuses to start, naming both directories and values;
- a ``broker.id`` in the configuration must equal the one on disk; without one in the
  configuration the disk's is used; with neither, the broker generates one (ZooKeeper's
  ``/brokers/seqid``) and writes it;
- the cluster id from ZooKeeper must equal the one on disk;
- directories without the file get one written.

:func:`resolve_broker_id` and :func:`check_cluster_id` are the pure decisions; reading
and writing the files is separate.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from config.errors import ConfigError
from config.properties import format_properties, parse_properties
from storage.checkpoint import write_atomically
from storage.errors import InconsistentMetadataError, StorageError

META_PROPERTIES = "meta.properties"


@dataclass(frozen=True, slots=True)
class MetaProperties:
    broker_id: int
    cluster_id: str | None
    version: int = 0


def parse_meta_properties(text: str, source: str) -> MetaProperties:
    try:
        fields = {k: v.strip() for k, v in parse_properties(text).items()}
    except ConfigError as exc:
        raise InconsistentMetadataError(f"{source}: {exc}") from None
    try:
        version = int(fields.get("version", "0"))
        broker_id = int(fields["broker.id"])
    except (KeyError, ValueError):
        raise InconsistentMetadataError(f"{source}: no valid broker.id and version") from None
    if version != 0:
        raise InconsistentMetadataError(f"{source}: unsupported version {version}")
    return MetaProperties(broker_id, fields.get("cluster.id") or None, version)


def format_meta_properties(meta: MetaProperties) -> bytes:
    fields = {"version": str(meta.version), "broker.id": str(meta.broker_id)}
    if meta.cluster_id is not None:
        fields["cluster.id"] = meta.cluster_id
    return ("#Written by minikafka\n" + format_properties(fields)).encode()


def read_meta_properties(log_dirs: Iterable[str]) -> dict[str, MetaProperties | None]:
    """Each directory's meta.properties (None where there is none)."""
    found: dict[str, MetaProperties | None] = {}
    for d in log_dirs:
        path = os.path.join(d, META_PROPERTIES)
        try:
            with open(path, encoding="utf-8") as f:
                found[d] = parse_meta_properties(f.read(), path)
        except FileNotFoundError:
            found[d] = None
        except (OSError, UnicodeDecodeError) as exc:
            raise StorageError(f"reading {path}: {exc}") from exc
    return found


def resolve_broker_id(
    found: Mapping[str, MetaProperties | None], configured: int | None
) -> int | None:
    """The broker id to use, or None when it must be generated. Raises
    :class:`InconsistentMetadataError` naming both sides of a disagreement."""
    on_disk = [(d, m) for d, m in found.items() if m is not None]
    for (d1, m1), (d2, m2) in itertools.pairwise(on_disk):
        if m1.broker_id != m2.broker_id:
            raise InconsistentMetadataError(
                f"log directories disagree on broker.id: {d1} has {m1.broker_id}, "
                f"{d2} has {m2.broker_id}"
            )
        if m1.cluster_id and m2.cluster_id and m1.cluster_id != m2.cluster_id:
            raise InconsistentMetadataError(
                f"log directories disagree on cluster.id: {d1} has {m1.cluster_id}, "
                f"{d2} has {m2.cluster_id}"
            )
    if on_disk:
        d, m = on_disk[0]
        if configured is not None and configured >= 0 and configured != m.broker_id:
            raise InconsistentMetadataError(
                f"configured broker.id {configured} does not match broker.id {m.broker_id} "
                f"in {os.path.join(d, META_PROPERTIES)}"
            )
        return m.broker_id
    return configured if configured is not None and configured >= 0 else None


def check_cluster_id(found: Mapping[str, MetaProperties | None], cluster_id: str) -> None:
    """Refuse a cluster id that differs from one a directory already records."""
    for d, m in found.items():
        if m is not None and m.cluster_id is not None and m.cluster_id != cluster_id:
            raise InconsistentMetadataError(
                f"the cluster id {cluster_id} does not match cluster.id {m.cluster_id} in "
                f"{os.path.join(d, META_PROPERTIES)}: is this directory from another cluster?"
            )


def write_meta_properties(
    log_dirs: Iterable[str],
    broker_id: int,
    cluster_id: str,
    found: Mapping[str, MetaProperties | None] | None = None,
) -> None:
    """Write meta.properties where it is missing or lacks the cluster id."""
    meta = MetaProperties(broker_id, cluster_id)
    for d in log_dirs:
        existing = None if found is None else found.get(d)
        if existing is not None and existing.cluster_id == cluster_id:
            continue
        try:
            os.makedirs(d, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"creating log directory {d}: {exc}") from exc
        write_atomically(os.path.join(d, META_PROPERTIES), format_meta_properties(meta))


def ensure_meta_properties(
    log_dirs: Iterable[str],
    configured_broker_id: int | None,
    cluster_id: str,
    generate_broker_id: Callable[[], int],
) -> int:
    """The whole startup rule in one call: read every directory's meta.properties,
    refuse disagreements (:class:`InconsistentMetadataError`), take the broker id from
    the configuration or the disk or else ``generate_broker_id()`` (ZooKeeper's
    /brokers/seqid), and write the file where it is missing. Returns the broker id."""
    dirs = list(log_dirs)
    found = read_meta_properties(dirs)
    broker_id = resolve_broker_id(found, configured_broker_id)
    check_cluster_id(found, cluster_id)
    if broker_id is None:
        broker_id = generate_broker_id()
    write_meta_properties(dirs, broker_id, cluster_id, found)
    return broker_id
