"""Authorizer benchmark: what a request's authorization costs, with 1,000 ACLs (100 of them
prefixed) beside none at all, in one run.

    .venv/bin/python tests/bench/bench_authorizer.py [--checks 200000]

A check is what a handler asks per resource (``Authorizer.authorize``: the principal, the
client's address, an operation, a topic). Figures, each in checks per second:

- ``no ACLs``: the cache is empty (allow.everyone.if.no.acl.found decides);
- ``1,000 ACLs``: 900 literal topic ACLs for 300 principals and 100 prefixed ones, the
  topic asked covered by a literal and a prefixed ACL of the principal;
- ``1,000 ACLs, a miss``: a topic no ACL names (the prefixed lookups run, find nothing).

The ratio to ``no ACLs`` shows the check stays a handful of dictionary lookups whatever
the number of ACLs (a scan would be ~1,000 times slower). For the produce and fetch
throughput with the authorizer on, run tests/bench/bench_broker.py against a broker with
``authorizer.class.name`` set.
"""

from __future__ import annotations

import argparse
import time

from broker.auth.acl_cache import AclCache
from broker.auth.authorizer import Authorizer, AuthorizerSettings
from broker.security.principal import KafkaPrincipal
from protocol.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)


def populated() -> AclCache:
    cache = AclCache()
    for i in range(900):
        cache.set(
            ResourcePattern(ResourceType.TOPIC, f"topic-{i}", PatternType.LITERAL),
            [
                AccessControlEntry(
                    f"User:u{i % 300}", "*", AclOperation.WRITE, AclPermissionType.ALLOW
                )
            ],
        )
    for i in range(100):
        cache.set(
            ResourcePattern(ResourceType.TOPIC, f"team-{i}-" + "x" * (i % 7), PatternType.PREFIXED),
            [AccessControlEntry(f"User:u{i}", "*", AclOperation.READ, AclPermissionType.ALLOW)],
        )
    cache.set(
        ResourcePattern(ResourceType.TOPIC, "topic-", PatternType.PREFIXED),
        [AccessControlEntry("User:u1", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW)],
    )
    return cache


def rate(authorizer: Authorizer, topic: str, checks: int) -> float:
    principal = KafkaPrincipal.user("u1")
    start = time.perf_counter()
    for _ in range(checks):
        authorizer.authorize(principal, "10.0.0.1", AclOperation.WRITE, ResourceType.TOPIC, topic)
    return checks / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checks", type=int, default=200_000)
    checks = parser.parse_args().checks
    settings = AuthorizerSettings(frozenset(), allow_everyone_if_no_acl_found=True)
    empty = Authorizer(AclCache(), settings)
    full = Authorizer(populated(), settings)
    assert len(full.cache) == 1001
    base = rate(empty, "topic-301", checks)
    rows = [
        ("no ACLs", base),
        ("1,000 ACLs", rate(full, "topic-301", checks)),
        ("1,000 ACLs, a miss", rate(full, "elsewhere", checks)),
    ]
    for name, value in rows:
        print(f"{name:<22} {value:>12,.0f} checks/s  {value / base:5.2f}x")


if __name__ == "__main__":
    main()
