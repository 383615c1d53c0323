"""The declared schemas (protocol.schema.specs) match Kafka's JSON message specs field by
field, and every declared message compiles at every one of its versions.

The JSON specs are reference data outside the repository (Kafka's
clients/src/main/resources/common/message, named by $KAFKA_MESSAGE_SPECS or kept in a
``shared/kafka-message-specs`` directory beside the checkout); the comparison is skipped when
they are absent. A declared message that directory lacks (the client quota APIs) is
checked against the copy of Kafka's specs that kafka-python bundles, from which it was
generated (``python -m protocol.schema.generate SPEC_DIR --add FILE ...``).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

from protocol.codec import MESSAGE_INFO
from protocol.schema.generate import OUTPUT, field_versions, load_messages, load_spec, render
from protocol.schema.model import F, M
from protocol.schema.specs import MESSAGES

#: Kafka's JSON message specs (clients/src/main/resources/common/message in a Kafka source
#: tree) are not part of the repository: KAFKA_MESSAGE_SPECS names them, else a copy beside
#: the checkout is used when there is one.
ROOT = Path(__file__).resolve().parents[3]
CANDIDATES = [
    Path(os.environ.get("KAFKA_MESSAGE_SPECS", "/nonexistent")),
    ROOT.parent / "shared" / "kafka-message-specs",
]
SPEC_DIR = next((p for p in CANDIDATES if p.is_dir()), None)
needs_specs = pytest.mark.skipif(SPEC_DIR is None, reason="Kafka's JSON message specs not found")

DECLARED = {m.name: m for m in MESSAGES}


def _bundled_specs() -> Path | None:
    """kafka-python's copy of Kafka's JSON specs (a test dependency), if installed."""
    found = importlib.util.find_spec("kafka")
    if found is None or found.origin is None:
        return None
    path = Path(found.origin).parent / "protocol" / "schemas" / "resources"
    return path if path.is_dir() else None


def _spec_files() -> list[Path]:
    return sorted(SPEC_DIR.glob("*.json")) if SPEC_DIR else []


def _added_spec_files() -> list[Path]:
    """For each declared message the spec directory lacks, its spec in kafka-python's copy."""
    bundled = _bundled_specs()
    if SPEC_DIR is None or bundled is None:
        return []
    have = {p.stem for p in _spec_files()}
    return [bundled / f"{name}.json" for name in sorted(DECLARED) if name not in have]


def _check_fields(where: str, declared: tuple[F, ...], raw: list[dict[str, Any]]) -> None:
    assert [f.name for f in declared] == [r["name"] for r in raw], where
    for f, r in zip(declared, raw):
        at = f"{where}.{f.name}"
        assert f.type == r["type"], at
        assert f.versions == field_versions(r), at
        assert f.nullable == r.get("nullableVersions"), at
        assert f.default == r.get("default"), at
        assert f.tag == r.get("tag"), at
        assert f.tagged == r.get("taggedVersions"), at
        assert f.flexible == r.get("flexibleVersions"), at
        assert f.ignorable == bool(r.get("ignorable", False)), at
        _check_fields(at, f.fields, r.get("fields", []))


@needs_specs
@pytest.mark.parametrize("path", _spec_files() + _added_spec_files(), ids=lambda p: p.stem)
def test_declared_schema_matches_the_json_spec(path: Path) -> None:
    raw = load_spec(path)
    declared: M = DECLARED[raw["name"]]
    assert declared.kind == raw["type"]
    assert declared.api_key == raw.get("apiKey")
    assert declared.valid == raw["validVersions"]
    assert declared.flexible == raw["flexibleVersions"]
    _check_fields(declared.name, declared.fields, raw["fields"])
    common = raw.get("commonStructs", [])
    assert [s.name for s in declared.common] == [c["name"] for c in common]
    for s, c in zip(declared.common, common):
        assert s.versions == c["versions"]
        _check_fields(f"{declared.name}/{s.name}", s.fields, c["fields"])


@needs_specs
def test_every_spec_is_declared_once() -> None:
    names = [load_spec(p)["name"] for p in _spec_files() + _added_spec_files()]
    assert sorted(names) == sorted(DECLARED)
    assert len(MESSAGES) == len(DECLARED)


@needs_specs
def test_committed_declarations_are_the_generators_output() -> None:
    assert SPEC_DIR is not None
    assert OUTPUT.read_text() == render(load_messages(SPEC_DIR, _added_spec_files()))


@pytest.mark.parametrize("name", sorted(MESSAGE_INFO))
def test_every_message_compiles_at_every_version(name: str) -> None:
    info = MESSAGE_INFO[name]
    for version in range(info.valid.lo, info.valid.hi + 1):
        for struct_info in [info.root, *info.structs.values()]:
            struct_info.decoder(version)
            struct_info.encoder(version)


def test_defaults_follow_the_spec() -> None:
    from protocol.messages import FetchResponse, JoinGroupRequest, MetadataResponse

    partition = FetchResponse.PartitionData()
    assert partition.last_stable_offset == -1
    assert partition.preferred_read_replica == -1
    assert partition.aborted_transactions == []
    assert partition.current_leader == FetchResponse.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
    assert MetadataResponse.MetadataResponseTopic().topic_authorized_operations == -(2**31)
    assert JoinGroupRequest().group_instance_id is None
    assert JoinGroupRequest().rebalance_timeout_ms == -1
