"""Fixtures shared by every integration module.

Declared here once so that the session-scoped ZooKeeper is started once per test run,
not once per module that imports it (a fixture imported into a module is that module's
own definition).
"""

from tests.integration.cluster import cluster3
from tests.integration.zk_fixtures import kazoo_client, zk_connect, zookeeper

__all__ = ["cluster3", "kazoo_client", "zk_connect", "zookeeper"]
