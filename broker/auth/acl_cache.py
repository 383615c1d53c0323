"""AclCache: the ACLs of every resource pattern, indexed for the per-request check.

A request's authorization must not scan every ACL. The cache keeps:

- ``literal``: (resource type, name) -> the ACLs of that literal pattern; the wildcard
  pattern ``*`` of a type is the key (type, ``"*"``);
- ``prefixed``: resource type -> prefix -> the ACLs of that prefixed pattern, plus the
  sorted distinct prefix lengths of the type. The prefixed patterns that apply to a name
  are found by looking up ``name[:n]`` for each distinct length ``n`` no longer than the
  name: as many lookups as there are distinct prefix lengths, not prefixes.

So the ACLs that apply to one resource are at most ``2 + distinct lengths`` lookups
away. Each pattern's ACLs are an immutable frozenset replaced whole on change; one
writer (the event loop), so a reader never sees half an update.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from protocol.acls import (
    WILDCARD,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    PatternType,
    ResourcePattern,
    ResourceType,
)

_NONE: frozenset[AccessControlEntry] = frozenset()


class AclCache:
    def __init__(self) -> None:
        self._literal: dict[tuple[ResourceType, str], frozenset[AccessControlEntry]] = {}
        self._prefixed: dict[ResourceType, dict[str, frozenset[AccessControlEntry]]] = {}
        self._lengths: dict[ResourceType, tuple[int, ...]] = {}

    # -- reads --------------------------------------------------------------------------

    def matching(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        """Every ACL that applies to the resource ``name`` of ``resource_type``: its literal
        pattern, the type's wildcard, and the prefixed patterns ``name`` starts with."""
        found: list[AccessControlEntry] = []
        literal = self._literal
        found.extend(literal.get((resource_type, name), _NONE))
        if name != WILDCARD:
            found.extend(literal.get((resource_type, WILDCARD), _NONE))
        prefixes = self._prefixed.get(resource_type)
        if prefixes:
            size = len(name)
            for length in self._lengths[resource_type]:
                if length > size:
                    break
                entries = prefixes.get(name[:length])
                if entries:
                    found.extend(entries)
        return found

    def get(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        """The ACLs stored on exactly ``pattern``."""
        if pattern.pattern_type is PatternType.LITERAL:
            return self._literal.get((pattern.resource_type, pattern.name), _NONE)
        return self._prefixed.get(pattern.resource_type, {}).get(pattern.name, _NONE)

    def patterns(self) -> Iterator[ResourcePattern]:
        for resource_type, name in self._literal:
            yield ResourcePattern(resource_type, name, PatternType.LITERAL)
        for resource_type, prefixes in self._prefixed.items():
            for name in prefixes:
                yield ResourcePattern(resource_type, name, PatternType.PREFIXED)

    def bindings(self, binding_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """Every stored ACL, or those ``binding_filter`` selects (a scan: for the admin
        APIs, never for a request's authorization)."""
        out: list[AclBinding] = []
        for pattern in self.patterns():
            if binding_filter is not None and not binding_filter.pattern.matches(pattern):
                continue
            for entry in self.get(pattern):
                if binding_filter is None or binding_filter.entry.matches(entry):
                    out.append(AclBinding(pattern, entry))
        return out

    def __len__(self) -> int:
        return sum(len(v) for v in self._literal.values()) + sum(
            len(v) for prefixes in self._prefixed.values() for v in prefixes.values()
        )

    # -- writes -------------------------------------------------------------------------

    def set(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """``pattern``'s ACLs are now exactly ``entries`` (none: the pattern is forgotten)."""
        acls = frozenset(entries)
        resource_type = pattern.resource_type
        if pattern.pattern_type is PatternType.LITERAL:
            key = (resource_type, pattern.name)
            if acls:
                self._literal[key] = acls
            else:
                self._literal.pop(key, None)
            return
        prefixes = self._prefixed.setdefault(resource_type, {})
        if acls:
            prefixes[pattern.name] = acls
        else:
            prefixes.pop(pattern.name, None)
        if prefixes:
            self._lengths[resource_type] = tuple(sorted({len(p) for p in prefixes}))
        else:
            del self._prefixed[resource_type]
            self._lengths.pop(resource_type, None)

    def replace_all(self, acls: Mapping[ResourcePattern, Iterable[AccessControlEntry]]) -> None:
        """Take ``acls`` as the whole content (the startup load)."""
        self._literal.clear()
        self._prefixed.clear()
        self._lengths.clear()
        for pattern, entries in acls.items():
            self.set(pattern, entries)
