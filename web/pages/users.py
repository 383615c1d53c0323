"""The users page: SCRAM credentials (``/users``: each user with its mechanisms and their
iteration counts), giving a user a credential or replacing one (``POST /users``: user,
mechanism, iterations, password), a user's own page (``/users/<u>``) and deleting one of
its credentials (``POST /users/<u>/delete``: the mechanism, confirmed by typing the
user's name).

Everything goes through DescribeUserScramCredentials and AlterUserScramCredentials
(``client.scram_admin``), so the brokers check the console's principal: without a super
user or ALTER / DESCRIBE on the cluster, the answer is CLUSTER_AUTHORIZATION_FAILED,
shown as such.

The password is the one secret a view here receives. It is used once, to salt the
credential in the client (the password itself never goes on the wire), and it is never
in an answer: not in the JSON, not in the redirect, not in an error's detail (input
errors name the field, not its value), and the page's form does not fill it back in.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from client.errors import KafkaError
from client.scram_admin import (
    DEFAULT_ITERATIONS,
    ScramCredentialInfo,
    ScramDeletion,
    ScramUpsertion,
    alter_user_scram_credentials,
    describe_user_scram_credentials,
)
from protocol import ErrorCode
from protocol.sasl.scram import MAX_ITERATIONS, MIN_ITERATIONS, SCRAM_MECHANISMS
from web.context import Console
from web.errors import InputError, NotFound
from web.views import Page, Params, View

MECHANISMS = tuple(sorted(SCRAM_MECHANISMS))


def user_url(user: str) -> str:
    return f"/users/{quote(user, safe='')}"


def _credentials(infos: list[ScramCredentialInfo]) -> list[dict[str, Any]]:
    return [
        {"mechanism": i.mechanism, "iterations": i.iterations}
        for i in sorted(infos, key=lambda i: i.mechanism)
    ]


def _mechanism(params: Params) -> str:
    mechanism = params.required("mechanism").upper()
    if mechanism not in SCRAM_MECHANISMS:
        raise InputError(f"mechanism must be one of {', '.join(MECHANISMS)}")
    return mechanism


def _form() -> dict[str, Any]:
    """What the pages' forms offer."""
    return {
        "mechanisms": list(MECHANISMS),
        "default_iterations": DEFAULT_ITERATIONS,
        "min_iterations": MIN_ITERATIONS,
        "max_iterations": MAX_ITERATIONS,
    }


async def list_users(console: Console, params: Params) -> dict[str, Any]:
    described = await describe_user_scram_credentials(console.client)
    rows = []
    for user, result in sorted(described.items()):
        if isinstance(result, KafkaError):
            if result.error_code == ErrorCode.RESOURCE_NOT_FOUND:
                continue  # a user whose last credential went while it was listed
            raise result
        rows.append({"user": user, "credentials": _credentials(result)})
    return {"title": "Users (SCRAM credentials)", "users": rows, **_form()}


async def describe(console: Console, params: Params) -> dict[str, Any]:
    user = params.path["user"]
    result = (await describe_user_scram_credentials(console.client, [user])).get(user)
    if result is None or (
        isinstance(result, KafkaError) and result.error_code == ErrorCode.RESOURCE_NOT_FOUND
    ):
        raise NotFound(f"User '{user}' has no SCRAM credentials.")
    if isinstance(result, KafkaError):
        raise result
    return {"title": f"User {user}", "user": user, "credentials": _credentials(result), **_form()}


async def upsert(console: Console, params: Params) -> dict[str, Any]:
    user = params.required("user")
    mechanism = _mechanism(params)
    iterations = params.integer("iterations", DEFAULT_ITERATIONS, MIN_ITERATIONS, MAX_ITERATIONS)
    password = params.text("password")
    if not password:
        raise InputError("password is required")
    change = ScramUpsertion(user, mechanism, password, iterations)
    error = (await alter_user_scram_credentials(console.client, [change])).get(user)
    if error is not None:
        raise error
    return {
        "user": user,
        "mechanism": mechanism,
        "iterations": iterations,
        "redirect": user_url(user),
    }


async def delete(console: Console, params: Params) -> dict[str, Any]:
    user = params.path["user"]
    mechanism = _mechanism(params)
    if params.text("confirm").strip() != user:
        raise InputError(
            f"To delete the {mechanism} credential of '{user}', type the user's name in the "
            f"confirmation field."
        )
    change = ScramDeletion(user, mechanism)
    error = (await alter_user_scram_credentials(console.client, [change])).get(user)
    if error is not None:
        raise error
    return {"user": user, "deleted": mechanism, "redirect": "/users"}


PAGE = Page(
    "users",
    "Users",
    "/users",
    (
        View("/users", "users.html", list_users),
        View("/users", "users.html", upsert, write=True),
        # ``path``: a user name may hold any character, "/" included
        View("/users/{user:path}", "user.html", describe),
        View("/users/{user:path}/delete", "user.html", delete, write=True),
    ),
)
