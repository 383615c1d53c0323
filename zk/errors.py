"""The errors of the ZooKeeper layer, raised by zk.facade and caught by its callers."""

from __future__ import annotations


class ControllerMovedError(Exception):
    """A write was fenced: /controller_epoch changed under us, or our session is gone.

    Whoever catches it makes this broker resign as controller at once: another broker
    has (or is about to have) the job, and everything we know may be stale.
    """


class BrokerIdInUseError(Exception):
    """Another live session has registered the broker id we want."""


class StateConflictError(Exception):
    """A conditional write of a partition state found a newer zkVersion."""


class ZooKeeperUnavailableError(Exception):
    """No ZooKeeper answered at the configured address."""


class TopicExistsError(Exception):
    """/brokers/topics/<t> exists already: the topic was not created again."""


class TopicNotFoundError(Exception):
    """The topic has no /brokers/topics znode."""


class TopicAlreadyMarkedForDeletionError(Exception):
    """/admin/delete_topics/<t> exists already: the topic's deletion is pending."""


class ScramCredentialNotFoundError(Exception):
    """A deletion named a SCRAM credential the user does not have: nothing was written."""
