"""``python -m protocol.describe``: a message's classes and fields as a reading aid."""

from __future__ import annotations

import pytest

from protocol.describe import describe, main


def test_lists_nested_classes_and_fields_with_versions() -> None:
    text = describe("FetchResponse", 12)
    assert "FetchResponse.PartitionData:" in text
    assert "current_leader: LeaderIdAndEpoch  (v12+, tag 1 v12+)" in text
    assert "records: records  (v0+, nullable v0+, default None)" in text
    assert "topic_id" not in text  # v13+ only


def test_without_a_version_lists_every_field() -> None:
    assert "topic_id: uuid" in describe("FetchResponse")


def test_unknown_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["NoSuchRequest"]) == 2
    assert "ProduceRequest" in capsys.readouterr().out
