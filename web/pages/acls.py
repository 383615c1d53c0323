"""The ACLs page: the bindings a filter selects (``/acls``), creating one
(``POST /acls``) and deleting what a filter selects (``POST /acls/delete``: a preview of
the matching bindings unless ``execute`` is set).

Filter parameters (all optional; the page's form and every row's delete button send
them): ``resource_type`` (ANY, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID,
DELEGATION_TOKEN), ``name`` (blank: any name), ``pattern_type`` (ANY: any pattern of
that exact name; MATCH: every pattern that applies to a resource of that name, wildcards
and prefixes included; LITERAL; PREFIXED), ``principal`` and ``host`` (blank: any),
``operation`` and ``permission`` (ANY by default). A binding to create names a resource
type, name, pattern type (LITERAL or PREFIXED), principal (``User:alice``), host (``*``
by default), operation and permission (ALLOW or DENY). Enum values are accepted in any
case and in either of Kafka's spellings (``transactional-id``, ``TransactionalId``).

A delete is shown before it is done: its preview is DescribeAcls with the same filter,
which selects exactly what DeleteAcls with that filter removes (``protocol.acls``); the
execution answers with the bindings the broker removed. The brokers check the console's
principal (ALTER / DESCRIBE on the cluster); a cluster without an authorizer answers
SECURITY_DISABLED; both are shown by name (``web.errors``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, Final, TypeVar

from client.acls import create_acls, delete_acls, describe_acls
from client.errors import KafkaError
from protocol.acls import (
    STORED_PATTERN_TYPES,
    STORED_RESOURCE_TYPES,
    WILDCARD,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    validate_binding,
)
from web.context import Console
from web.errors import InputError
from web.views import Page, Params, View

E = TypeVar("E", bound=enum.IntEnum)

#: the operations and permissions a binding may name (UNKNOWN and ANY are never stored)
OPERATIONS: Final = tuple(
    o for o in AclOperation if o not in (AclOperation.UNKNOWN, AclOperation.ANY)
)
PERMISSIONS: Final = (AclPermissionType.ALLOW, AclPermissionType.DENY)
#: the filter fields, in the order the page shows them
FILTER_FIELDS: Final = (
    "resource_type",
    "name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission",
)


def _key(text: str) -> str:
    return text.strip().replace("-", "").replace("_", "").lower()


def _choice(params: Params, field: str, allowed: Sequence[E], default: E) -> E:
    """The member of ``allowed`` the field names (either spelling, any case)."""
    raw = params.text(field)
    if not raw.strip():
        return default
    for member in allowed:
        if _key(member.name) == _key(raw):
            return member
    raise InputError(f"{field} must be one of {', '.join(a.name for a in allowed)}")


def _optional(params: Params, field: str) -> str | None:
    """The field as given (a row's delete sends names exactly), None when blank."""
    raw = params.text(field)
    return raw if raw.strip() else None


def binding_filter(params: Params) -> AclBindingFilter:
    """The filter the request's parameters describe (blank fields select everything)."""
    resource_type = _choice(
        params, "resource_type", (ResourceType.ANY, *STORED_RESOURCE_TYPES), ResourceType.ANY
    )
    pattern_type = _choice(
        params,
        "pattern_type",
        (PatternType.ANY, PatternType.MATCH, *STORED_PATTERN_TYPES),
        PatternType.ANY,
    )
    operation = _choice(params, "operation", (AclOperation.ANY, *OPERATIONS), AclOperation.ANY)
    permission = _choice(
        params, "permission", (AclPermissionType.ANY, *PERMISSIONS), AclPermissionType.ANY
    )
    return AclBindingFilter(
        ResourcePatternFilter(resource_type, _optional(params, "name"), pattern_type),
        AccessControlEntryFilter(
            _optional(params, "principal"), _optional(params, "host"), operation, permission
        ),
    )


def filter_json(f: AclBindingFilter) -> dict[str, str]:
    """A filter as the form fields that give it back (blank: any)."""
    return {
        "resource_type": f.pattern.resource_type.name,
        "name": f.pattern.name or "",
        "pattern_type": f.pattern.pattern_type.name,
        "principal": f.entry.principal or "",
        "host": f.entry.host or "",
        "operation": f.entry.operation.name,
        "permission": f.entry.permission.name,
    }


def binding_json(b: AclBinding) -> dict[str, str]:
    """A binding; also the exact filter that selects it alone (same field names)."""
    return {
        "resource_type": b.pattern.resource_type.name,
        "name": b.pattern.name,
        "pattern_type": b.pattern.pattern_type.name,
        "principal": b.entry.principal,
        "host": b.entry.host,
        "operation": b.entry.operation.name,
        "permission": b.entry.permission.name,
    }


def _rows(bindings: list[AclBinding]) -> list[dict[str, str]]:
    rows = [binding_json(b) for b in bindings]
    rows.sort(key=lambda r: tuple(r[k] for k in FILTER_FIELDS))
    return rows


def _form() -> dict[str, Any]:
    """What the page's forms offer."""
    return {
        "resource_types": [t.name for t in STORED_RESOURCE_TYPES],
        "pattern_types": [p.name for p in STORED_PATTERN_TYPES],
        "filter_pattern_types": ["ANY", "MATCH", *(p.name for p in STORED_PATTERN_TYPES)],
        "operations": [o.name for o in OPERATIONS],
        "permissions": [p.name for p in PERMISSIONS],
    }


async def list_acls(console: Console, params: Params) -> dict[str, Any]:
    f = binding_filter(params)
    found = await describe_acls(console.client, f)
    return {"title": "ACLs", "filter": filter_json(f), "acls": _rows(found), **_form()}


def new_binding(params: Params) -> AclBinding:
    resource_type = _choice(params, "resource_type", STORED_RESOURCE_TYPES, ResourceType.TOPIC)
    pattern_type = _choice(params, "pattern_type", STORED_PATTERN_TYPES, PatternType.LITERAL)
    params.required("operation")
    operation = _choice(params, "operation", OPERATIONS, AclOperation.ALL)
    permission = _choice(params, "permission", PERMISSIONS, AclPermissionType.ALLOW)
    binding = AclBinding(
        ResourcePattern(resource_type, params.required("name"), pattern_type),
        AccessControlEntry(
            params.required("principal"),
            params.text("host").strip() or WILDCARD,
            operation,
            permission,
        ),
    )
    try:
        validate_binding(binding)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return binding


async def create(console: Console, params: Params) -> dict[str, Any]:
    binding = new_binding(params)
    error = (await create_acls(console.client, [binding]))[0]
    if error is not None:
        raise error
    return {"created": binding_json(binding), "redirect": "/acls"}


async def delete(console: Console, params: Params) -> dict[str, Any]:
    f = binding_filter(params)
    execute = params.flag("execute")
    if execute:
        result = (await delete_acls(console.client, [f]))[0]
        if isinstance(result, KafkaError):
            raise result
        matching = result
    else:
        matching = await describe_acls(console.client, f)
    data: dict[str, Any] = {
        "title": "Delete ACLs",
        "filter": filter_json(f),
        "executed": execute,
        "acls": _rows(matching),
    }
    if execute:
        data["redirect"] = "/acls"
    return data


PAGE = Page(
    "acls",
    "ACLs",
    "/acls",
    (
        View("/acls", "acls.html", list_acls),
        View("/acls", "acls.html", create, write=True),
        View("/acls/delete", "acls_delete.html", delete, write=True),
    ),
)
