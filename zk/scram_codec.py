"""The SCRAM credentials of one user as /config/users/<user> holds them (pure).

A user's znode is an entity config like a topic's (``zk.codec``'s
``{"version":1,"config":{...}}``); each SCRAM mechanism the user has a credential for is
one key of it, named by the mechanism, whose value is the credential's text form
(``protocol.sasl.scram.ScramCredential.to_text``)::

  /config/users/alice  {"version":1,"config":{
      "SCRAM-SHA-256":"salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=8192"}}

The same znode may carry a user's quota keys (``producer_byte_rate`` ...): a change of
credentials rewrites only the mechanism keys and keeps every other key as it was, and a
reader of credentials ignores keys that name no SCRAM mechanism.

Names: the znode's last path element is the user name *sanitized* as Kafka does it, so
that any principal name makes one path element: URL encoding of the UTF-8 bytes where
only ASCII letters, digits and ``. - _ ~`` stay as they are (a space is ``%20``, ``*``
is ``%2A``, ``/`` is ``%2F``). Change notifications name the sanitized form too
(``users/<sanitized>``).

Nothing here ever sees a password: only salts, keys and iteration counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import quote, unquote

from protocol.sasl.scram import SCRAM_MECHANISMS, ScramCredential

#: the entity type of users in /config/<type>/<name> and in change notifications
USERS_ENTITY = "users"


def sanitize_user(user: str) -> str:
    """The user's name as a znode name (Kafka's Sanitizer)."""
    return quote(user, safe="")


def desanitize_user(name: str) -> str:
    """The user a znode name stands for."""
    return unquote(name)


def credentials_from_config(
    config: Mapping[str, str],
) -> tuple[dict[str, ScramCredential], dict[str, str]]:
    """The SCRAM credentials an entity config holds, by mechanism name, and the errors
    (mechanism -> why) of those whose text is malformed; other keys are ignored."""
    found: dict[str, ScramCredential] = {}
    bad: dict[str, str] = {}
    for key, text in config.items():
        if key not in SCRAM_MECHANISMS:
            continue
        try:
            found[key] = ScramCredential.from_text(text)
        except ValueError as exc:
            bad[key] = str(exc)
    return found, bad


def updated_config(
    config: Mapping[str, str],
    upserts: Mapping[str, ScramCredential],
    deletions: Iterable[str],
) -> dict[str, str]:
    """``config`` with the credentials of ``upserts`` set and the mechanisms of
    ``deletions`` removed; keys of other kinds stay. ValueError for a mechanism name that
    is not a SCRAM mechanism."""
    out = dict(config)
    for mechanism in deletions:
        _check_mechanism(mechanism)
        out.pop(mechanism, None)
    for mechanism, credential in upserts.items():
        _check_mechanism(mechanism)
        out[mechanism] = credential.to_text()
    return out


def _check_mechanism(name: str) -> None:
    if name not in SCRAM_MECHANISMS:
        raise ValueError(f"{name!r} is not a SCRAM mechanism ({', '.join(SCRAM_MECHANISMS)})")
