"""Fixtures and the marker shared by every integration module.

Every test under tests/integration is marked ``integration`` here, whether it starts
ZooKeeper, brokers or client processes or a network server on the loop, so ``make unit``
(``-m 'not integration'``) can never pick one up by a module forgetting its mark.

The fixtures are declared here once so that the session-scoped ZooKeeper is started once
per test run, not once per module that imports it (a fixture imported into a module is that
module's own definition).
"""

from pathlib import Path

import pytest

from tests.integration.cluster import cluster3
from tests.integration.zk_fixtures import kazoo_client, zk_connect, zookeeper

__all__ = ["cluster3", "kazoo_client", "zk_connect", "zookeeper"]

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(_HERE):
            item.add_marker(pytest.mark.integration)
