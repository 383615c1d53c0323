"""An authorizer for handler tests: on, allowing only the grants a test names.

A HandlerRequest carries no principal, so the handlers see it as ``User:ANONYMOUS``;
the grants are that principal's, from any host.
"""

from __future__ import annotations

from broker.auth.access import AccessControl
from broker.auth.acl_cache import AclCache
from broker.auth.authorizer import Authorizer, AuthorizerSettings
from protocol.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)


def allowing(*grants: tuple[ResourceType, str, AclOperation]) -> AccessControl:
    """Access control allowing each (resource type, literal name, operation) of
    ``grants`` and nothing else (no super users)."""
    cache = AclCache()
    for rtype, name in {(r, n) for r, n, _ in grants}:
        cache.set(
            ResourcePattern(rtype, name, PatternType.LITERAL),
            [
                AccessControlEntry("User:ANONYMOUS", "*", op, AclPermissionType.ALLOW)
                for r, n, op in grants
                if (r, n) == (rtype, name)
            ],
        )
    return AccessControl(Authorizer(cache, AuthorizerSettings(frozenset(), False)), None)
