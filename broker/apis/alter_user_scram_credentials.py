"""AlterUserScramCredentials (51), v0: add, replace and delete users' SCRAM credentials.

As in Kafka's ZooKeeper mode, only the active controller serves it: elsewhere every user
of the request answers NOT_CONTROLLER, with Kafka's message (one result per distinct
user, sorted), and the admin client asks the controller it finds next. The controller
checks the request (``broker.admin.scram_credentials``), derives each stored credential
from the salt and salted password the client sent, and writes each valid user's change
in one conditional ZooKeeper multi-op with its change notification (``zk.scram``), from
which every broker's ScramCredentialCache follows; its own cache takes the change at once.

Per user, all or nothing: a user whose deletion names a credential it does not have
gets RESOURCE_NOT_FOUND and nothing of its change is written. Nothing here logs the
request: it carries salted passwords.
"""

from __future__ import annotations

import logging

from broker.admin.scram_credentials import (
    DELETE_MISSING,
    Deletion,
    Failure,
    Upsertion,
    plan_alterations,
)
from broker.apis.request import ApiRequest
from broker.apis.services import ScramAdmin
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.messages import AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse
from zk.errors import ScramCredentialNotFoundError

log = logging.getLogger(__name__)

Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult

#: Kafka's message for NOT_CONTROLLER, which it sets in each user's result (some clients
#: tell errors from successes by the message alone)
NOT_CONTROLLER = "This is not the correct controller for this cluster."


def not_controller(body: AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse:
    users = sorted({d.name for d in body.deletions} | {u.name for u in body.upsertions})
    return AlterUserScramCredentialsResponse(
        throttle_time_ms=0,
        results=[
            Result(user=u, error_code=ErrorCode.NOT_CONTROLLER, error_message=NOT_CONTROLLER)
            for u in users
        ],
    )


def _result(user: str, failure: Failure | None) -> Result:
    if failure is None:
        return Result(user=user, error_code=ErrorCode.NONE, error_message=None)
    return Result(user=user, error_code=failure[0], error_message=failure[1])


async def handle(
    ctx: ScramAdmin, request: ApiRequest[AlterUserScramCredentialsRequest]
) -> Response:
    body = request.body
    if not ctx.broker.access.authorize(
        request, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME
    ):
        # as Kafka: ALTER on the cluster, else every user refused
        users = sorted({d.name for d in body.deletions} | {u.name for u in body.upsertions})
        refused = AlterUserScramCredentialsResponse(
            throttle_time_ms=0,
            results=[
                Result(
                    user=u, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None
                )
                for u in users
            ],
        )
        return make_response(request.header, refused)
    if ctx.controller.active() is None:
        return make_response(request.header, not_controller(body))
    users, failed, changes = plan_alterations(
        [Deletion(d.name, d.mechanism) for d in body.deletions],
        [
            Upsertion(u.name, u.mechanism, u.iterations, u.salt, u.salted_password)
            for u in body.upsertions
        ],
    )
    outcomes: dict[str, Failure | None] = dict(failed)
    for user, change in changes.items():
        try:
            written = await ctx.zk.alter_user_credentials(user, change.upserts, change.deletions)
        except ScramCredentialNotFoundError:
            outcomes[user] = (ErrorCode.RESOURCE_NOT_FOUND, DELETE_MISSING)
            continue
        except Exception as exc:  # ZooKeeper trouble: this user fails, the others go on
            log.warning("writing the SCRAM credentials of user %r failed: %r", user, exc)
            outcomes[user] = (ErrorCode.UNKNOWN_SERVER_ERROR, "writing to ZooKeeper failed")
            continue
        ctx.cache.set_user(user, written)
        outcomes[user] = None
        log.info(
            "SCRAM credentials of user %r altered: set %s, deleted %s",
            user,
            sorted(change.upserts) or "none",
            change.deletions or "none",
        )
    results = [_result(user, outcomes[user]) for user in users]
    return make_response(
        request.header, AlterUserScramCredentialsResponse(throttle_time_ms=0, results=results)
    )
