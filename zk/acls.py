"""ACLs in ZooKeeper: one znode per resource pattern, and change notifications (blocking).

Layout and payloads: ``zk.acl_codec``. A change to a pattern's ACLs is one multi-op that
writes (or creates, or deletes when no ACL is left) the pattern's znode conditionally on
the version read, and creates the sequential notification naming the pattern. Two
writers changing one pattern at once both land: the loser of the version check re-reads
and retries, so an ACL added by one is never dropped by the other. Brokers follow the
notifications (``broker.auth.acl_watcher``) and re-read the named pattern.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import Final

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from protocol.acls import (
    STORED_PATTERN_TYPES,
    STORED_RESOURCE_TYPES,
    AccessControlEntry,
    PatternType,
    ResourcePattern,
)
from zk.acl_codec import (
    CHANGE_PREFIX,
    EXTENDED_CHANGES,
    LITERAL_CHANGES,
    acl_path,
    change_sequence,
    changes_root,
    decode_acls,
    decode_change,
    encode_acls,
    encode_change,
    root,
)
from zk.codec import ZkDataError
from zk.session import Watch, ZkSession
from zk.transactions import CreateOp, DeleteOp, Op, SetDataOp, commit, first_failure

log = logging.getLogger(__name__)

#: conditional writes lost to concurrent writers before giving up
WRITE_ATTEMPTS: Final = 10

Entries = frozenset[AccessControlEntry]
#: both notification roots, literal first
CHANGE_ROOTS: Final = (LITERAL_CHANGES, EXTENDED_CHANGES)


def ensure_acl_paths(session: ZkSession) -> None:
    """Create the ACL roots and both notification roots (as each broker does at startup):
    a children watch can only be set on a znode that exists."""
    for path in (root(PatternType.LITERAL), root(PatternType.PREFIXED), *CHANGE_ROOTS):
        session.kazoo.ensure_path(path)


def get_acls(session: ZkSession, pattern: ResourcePattern) -> tuple[Entries, int]:
    """The pattern's ACLs and its znode version (-1: no znode)."""
    path = acl_path(pattern)
    found = session.get(path)
    if found is None:
        return frozenset(), -1
    return decode_acls(path, found[0]), int(found[1].version)


def get_all_acls(session: ZkSession) -> dict[ResourcePattern, Entries]:
    """Every stored pattern with its ACLs (a malformed znode is left out, with a warning
    naming it)."""
    out: dict[ResourcePattern, Entries] = {}
    for pattern_type in STORED_PATTERN_TYPES:
        for resource_type in STORED_RESOURCE_TYPES:
            parent = f"{root(pattern_type)}/{resource_type.camel}"
            for name in session.children(parent):
                pattern = ResourcePattern(resource_type, name, pattern_type)
                try:
                    entries, _ = get_acls(session, pattern)
                except ZkDataError as exc:
                    log.warning("ignoring the ACLs of %s: %s", pattern, exc)
                    continue
                if entries:
                    out[pattern] = entries
    return out


def update_acls(
    session: ZkSession,
    pattern: ResourcePattern,
    change: Callable[[Entries], Entries],
) -> tuple[Entries, Entries]:
    """Replace the pattern's ACLs with ``change(current)`` and announce it, conditionally
    on the znode's version (a concurrent writer makes it re-read and retry; RuntimeError
    after ``WRITE_ATTEMPTS`` lost races). Returns (before, after); nothing is written when
    they are equal."""
    path = acl_path(pattern)
    session.kazoo.ensure_path(path.rsplit("/", 1)[0])
    notify_root = changes_root(pattern.pattern_type)
    session.kazoo.ensure_path(notify_root)
    notify = CreateOp(f"{notify_root}/{CHANGE_PREFIX}", encode_change(pattern), sequential=True)
    for _ in range(WRITE_ATTEMPTS):
        current, version = get_acls(session, pattern)
        wanted = change(current)
        if wanted == current:
            return current, current
        write: Op
        if version < 0:
            write = CreateOp(path, encode_acls(wanted))
        elif wanted:
            write = SetDataOp(path, encode_acls(wanted), version)
        else:
            write = DeleteOp(path, version)
        failure = first_failure(commit(session, [write, notify]))
        if failure is None:
            return current, wanted
        if not isinstance(failure, BadVersionError | NodeExistsError | NoNodeError):
            raise failure
    raise RuntimeError(f"{path}: lost {WRITE_ATTEMPTS} races with concurrent writers")


def add_acls(
    session: ZkSession, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]
) -> Entries:
    """Add ``entries`` to the pattern's ACLs (those already there stay); the ACLs after."""
    added = frozenset(entries)
    return update_acls(session, pattern, lambda current: current | added)[1]


def remove_acls(
    session: ZkSession, pattern: ResourcePattern, keep: Callable[[AccessControlEntry], bool]
) -> tuple[Entries, Entries]:
    """Remove the pattern's ACLs for which ``keep`` is false; (the ACLs removed, the ACLs
    left)."""
    before, after = update_acls(
        session, pattern, lambda current: frozenset(e for e in current if keep(e))
    )
    return before - after, after


# -- change notifications -----------------------------------------------------------------


def get_acl_changes(session: ZkSession, changes_path: str, watch: Watch | None = None) -> list[str]:
    """The notifications under ``changes_path`` (literal or extended), oldest first."""
    return [c for c in session.children(changes_path, watch) if change_sequence(c) >= 0]


def read_acl_change(
    session: ZkSession, changes_path: str, name: str
) -> tuple[ResourcePattern | ZkDataError, int] | None:
    """(pattern named, creation time in ms) of one notification; None when it is gone.
    A payload that cannot be read comes back as its ZkDataError, with the creation time
    still: the notification is skipped, and purged once it expires."""
    found = session.get(f"{changes_path}/{name}")
    if found is None:
        return None
    data, stat = found
    try:
        return decode_change(changes_path, data), int(stat.ctime)
    except ZkDataError as exc:
        return exc, int(stat.ctime)


def delete_acl_changes(session: ZkSession, changes_path: str, names: Iterable[str]) -> None:
    """Purge notifications; one deleted meanwhile (by another broker) is skipped."""
    for name in names:
        with contextlib.suppress(NoNodeError):
            session.kazoo.delete(f"{changes_path}/{name}")
