"""Producer-id blocks: /latest_producer_id_block (blocking).

The znode holds the last block of producer ids handed out (zk.codec). A broker claims the
next one by reading it and writing its successor conditionally on the znode's version:
of two brokers racing, one write fails with BadVersion and that broker reads again, so no
id is ever handed out twice.
"""

from __future__ import annotations

from kazoo.exceptions import BadVersionError

from zk import codec, paths
from zk.session import ZkSession


def allocate_producer_id_block(
    session: ZkSession,
    broker_id: int,
    size: int = codec.PRODUCER_ID_BLOCK_SIZE,
    attempts: int = 100,
) -> codec.ProducerIdBlock:
    """Claim the next block of ``size`` producer ids for ``broker_id``."""
    session.kazoo.ensure_path(paths.LATEST_PRODUCER_ID_BLOCK)
    for _ in range(attempts):
        data, stat = session.kazoo.get(paths.LATEST_PRODUCER_ID_BLOCK)
        previous = codec.decode_producer_id_block(bytes(data)) if data else None
        block = codec.next_producer_id_block(previous, broker_id, size)
        try:
            session.kazoo.set(
                paths.LATEST_PRODUCER_ID_BLOCK,
                codec.encode_producer_id_block(block),
                version=stat.version,
            )
            return block
        except BadVersionError:
            continue
    raise RuntimeError(f"could not allocate a producer id block in {attempts} attempts")
