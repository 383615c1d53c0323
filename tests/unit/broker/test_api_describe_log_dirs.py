"""DescribeLogDirs against real logs in two directories: each directory lists the partitions
it holds with their sizes, a topic filter keeps only the asked-for partitions, an offline
directory answers KAFKA_STORAGE_ERROR, and v4 carries the volume's sizes."""

from __future__ import annotations

from pathlib import Path

from broker.apis import describe_log_dirs
from broker.apis.services import ClusterAdmin
from protocol import ApiKey, ErrorCode
from protocol.messages import DescribeLogDirsRequest, DescribeLogDirsResponse
from protocol.values import TopicPartition
from storage import LogManager, LogManagerConfig
from tests.records import record_batch
from tests.unit.broker.broker_helpers import HandlerRequest
from tests.unit.broker.handler_services import handler_services
from timer.clock import MockClock

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
Topic = DescribeLogDirsRequest.DescribableLogDirTopic


def batch(n: int) -> bytes:
    return record_batch(n, value=b"v" * 100)


def context(dirs: list[Path]) -> ClusterAdmin:
    manager = LogManager(LogManagerConfig(log_dirs=tuple(map(str, dirs))), MockClock())
    manager.load_logs()
    for tp, n in ((A0, 3), (A1, 1), (B0, 2)):
        manager.get_or_create_log(tp, None).append(batch(n), leader_epoch=0)
    return handler_services(cluster_id="c", log_manager=manager).cluster


async def ask(
    ctx: ClusterAdmin, topics: list[Topic] | None, version: int = 4
) -> DescribeLogDirsResponse:
    body = DescribeLogDirsRequest(topics=topics)
    request = HandlerRequest(ApiKey.DESCRIBE_LOG_DIRS, version, body)
    response = await describe_log_dirs.handle(ctx, request)
    assert isinstance(response.body, DescribeLogDirsResponse)
    return response.body


def listed(body: DescribeLogDirsResponse) -> dict[TopicPartition, tuple[str, int]]:
    """partition -> (its directory, its size) over every result."""
    return {
        TopicPartition(t.name, p.partition_index): (r.log_dir, p.partition_size)
        for r in body.results
        for t in r.topics
        for p in t.partitions
    }


async def test_every_partition_is_listed_once_in_its_directory_with_its_size(
    tmp_path: Path,
) -> None:
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    ctx = context(dirs)
    body = await ask(ctx, None)
    assert body.error_code == ErrorCode.NONE
    assert [r.log_dir for r in body.results] == [str(d) for d in dirs]
    assert all(r.error_code == ErrorCode.NONE for r in body.results)
    found = listed(body)
    assert set(found) == {A0, A1, B0}
    for tp, (log_dir, size) in found.items():
        lg = ctx.log_manager.get_log(tp)
        assert lg is not None
        assert log_dir == str(Path(lg.directory).parent)
        assert size == lg.size_in_bytes > 0
    assert all(r.total_bytes > 0 and 0 <= r.usable_bytes <= r.total_bytes for r in body.results)


async def test_a_topic_filter_keeps_only_the_named_partitions_held_here(tmp_path: Path) -> None:
    ctx = context([tmp_path / "d0", tmp_path / "d1"])
    body = await ask(ctx, [Topic(topic="a", partitions=[1, 7]), Topic(topic="zz", partitions=[0])])
    assert set(listed(body)) == {A1}


async def test_an_offline_directory_answers_a_storage_error_and_no_partitions(
    tmp_path: Path,
) -> None:
    ctx = context([tmp_path / "d0", tmp_path / "d1"])
    ctx.log_manager.offline_dirs[str(tmp_path / "d1")] = "disk gone"
    body = await ask(ctx, None)
    offline = [r for r in body.results if r.log_dir == str(tmp_path / "d1")]
    assert [(r.error_code, r.topics) for r in offline] == [(ErrorCode.KAFKA_STORAGE_ERROR, [])]
