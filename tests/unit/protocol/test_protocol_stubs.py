"""protocol/messages.pyi: the checked-in declarations match the classes the codec makes."""

from __future__ import annotations

import msgspec

from protocol.codec import MESSAGE_INFO
from protocol.codec.stubs import OUTPUT, field_type, render


def test_checked_in_stubs_are_regenerated_unchanged() -> None:
    assert OUTPUT.read_text() == render(), "run: python -m protocol.codec.stubs"


def test_every_runtime_field_is_declared_in_order() -> None:
    text = OUTPUT.read_text()
    for message in MESSAGE_INFO.values():
        for info in [message.root, *message.structs.values()]:
            runtime = [f.name for f in msgspec.structs.fields(info.cls)]
            declared = [fi.attr for fi in info.fields]
            assert runtime[: len(declared)] == declared
            for fi in info.fields:
                assert f"{fi.attr}: {field_type(fi)} = ..." in text


def test_nullable_and_struct_types() -> None:
    produce = MESSAGE_INFO["ProduceRequest"]
    by_attr = {fi.attr: fi for fi in produce.root.fields}
    assert field_type(by_attr["transactional_id"]) == "str | None"
    assert field_type(by_attr["topic_data"]) == "list[ProduceRequest.TopicProduceData]"
    records = produce.structs["PartitionProduceData"].fields[1]
    assert field_type(records) == "Records | None"
