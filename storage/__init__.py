"""minikafka storage: segment logs on disk, their recovery and their housekeeping.

Modules, one concept each:

- :mod:`.segment`        LogSegment: a .log with its .index, .timeindex and .txnindex
- :mod:`.index`          the mmap'd sparse offset and time indexes
- :mod:`.log`            Log: a partition's offsets, leader epochs and producer state
- :mod:`.local_log`      LocalLog: the segments and the file work (roll, read, cut, flush)
- :mod:`.timestamp_search` ListOffsets: which offset a timestamp points at
- :mod:`.append`         the append steps: size limit, offset assignment, sequences
- :mod:`.recovery`       loading a log directory after a crash
- :mod:`.reader`         read-only batch iteration for tools and jobs
- :mod:`.log_manager`    LogManager: directories, loading, checkpoints, scheduled tasks
- :mod:`.retention`      pure roll and retention decisions
- :mod:`.cleaner`        the log cleaner's pass: compaction of one log and its swap
- :mod:`.cleaner_manager` LogCleaner: which log to clean, the threads, the checkpoint
- :mod:`.offset_map`     the cleaner's map of key digest to last offset
- :mod:`.producer_state` producers' sequences, open transactions, and their snapshots
- :mod:`.transactions`   markers, the last stable offset, read_committed reads
- :mod:`.txn_index`      the aborted transaction index (.txnindex) of a segment
- :mod:`.cleaner_txns`   which transactional data and markers the cleaner removes
- :mod:`.leader_epoch`   the leader-epoch cache and its checkpoint
- :mod:`.checkpoint`     Kafka's checkpoint text formats, written atomically
- :mod:`.meta`           meta.properties rules
- :mod:`.names`          topic-name rules and file names
- :mod:`.file_region`    FileRegion, what reads return for sendfile
- :mod:`.config`         LogConfig (topic-level) and LogManagerConfig, built from the key
                         tables and layers of the top-level ``config`` package
- :mod:`.topic_configs`  TopicConfigs: the per-topic overrides the broker knows
- :mod:`.errors`         StorageError and the refused-input errors with Kafka error codes
"""

from storage.append import AppendInfo
from storage.config import LogConfig, LogManagerConfig
from storage.errors import RecordError, RecordValidationError, StorageError
from storage.file_region import FileRegion
from storage.log import Log
from storage.log_manager import LogManager, TaskSpec
from storage.names import validate_topic_name
from storage.producer_state import SequenceCheck, check_batch
from storage.segment import LogSegment
from storage.timestamp_search import TimestampOffset
from storage.topic_configs import TopicConfigs

__all__ = [
    "AppendInfo",
    "FileRegion",
    "Log",
    "LogConfig",
    "LogManager",
    "LogManagerConfig",
    "LogSegment",
    "RecordError",
    "RecordValidationError",
    "SequenceCheck",
    "StorageError",
    "TaskSpec",
    "TimestampOffset",
    "TopicConfigs",
    "check_batch",
    "validate_topic_name",
]
