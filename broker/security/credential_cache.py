"""ScramCredentialCache: every user's SCRAM credentials, as this broker authenticates them.

The SASL/SCRAM authenticator asks ``scram_credential(mechanism, username)`` for each
login, on the event loop, and must not wait on ZooKeeper for it: the cache answers from
memory. It holds user -> mechanism name -> ``ScramCredential`` (salt, stored key, server
key, iterations; never a password).

How it follows ZooKeeper (/config/users/<user>, ``zk.scram``):

- at startup, before the listeners open, the broker loads every user's credentials
  (``replace_all``), so the first connection can already log in;
- afterwards each change notification ``users/<sanitized user>`` under /config/changes
  makes the broker's config change listener (``broker.config_changes``) re-read that
  user's znode and hand its config to :meth:`apply_entity_config`; the listener also
  handles, at its start, every notification still there, so a change made between the
  load and the listener's start is not lost;
- the broker that wrote a change (AlterUserScramCredentials) applies what it wrote at
  once (:meth:`set_user`), before its own notification comes back.

A user whose credentials are all deleted leaves the cache (a later login fails as for an
unknown user). A malformed credential in ZooKeeper is left out with a warning naming the
user and the mechanism, never the stored values. Event-loop bound: one writer (the
loop), and each update replaces a user's whole entry, so a reader never sees half of one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import MappingProxyType

from protocol.sasl.scram import ScramCredential
from zk.scram_codec import credentials_from_config, desanitize_user

log = logging.getLogger(__name__)

_NONE: Mapping[str, ScramCredential] = MappingProxyType({})


class ScramCredentialCache:
    """user -> mechanism name (``SCRAM-SHA-256``, ``SCRAM-SHA-512``) -> credential."""

    def __init__(self) -> None:
        self._users: dict[str, Mapping[str, ScramCredential]] = {}

    def scram_credential(self, mechanism: str, username: str) -> ScramCredential | None:
        """The credential ``username`` logs in with under ``mechanism``; None when the
        user or that mechanism's credential is unknown."""
        return self._users.get(username, _NONE).get(mechanism)

    def credentials(self, username: str) -> Mapping[str, ScramCredential]:
        """Every credential of ``username`` by mechanism (empty when none)."""
        return self._users.get(username, _NONE)

    def users(self) -> list[str]:
        """The users with at least one credential, sorted."""
        return sorted(self._users)

    def replace_all(self, users: Mapping[str, Mapping[str, ScramCredential]]) -> None:
        """Take ``users`` as the whole content (the startup load)."""
        self._users = {
            user: MappingProxyType(dict(found)) for user, found in users.items() if found
        }

    def set_user(self, username: str, credentials: Mapping[str, ScramCredential]) -> None:
        """``username``'s credentials are now exactly ``credentials`` (none: forgotten)."""
        if credentials:
            self._users[username] = MappingProxyType(dict(credentials))
        else:
            self._users.pop(username, None)

    def apply_entity_config(self, entity: str, config: Mapping[str, str]) -> None:
        """The new config of /config/users/<entity> (``entity``: the sanitized user
        name, as notifications name it): its credentials replace the user's."""
        username = desanitize_user(entity)
        credentials, bad = credentials_from_config(config)
        for mechanism in bad:
            log.warning("ignoring the malformed %s credential of user %r", mechanism, username)
        before = self._users.get(username, _NONE)
        self.set_user(username, credentials)
        if dict(before) != credentials:
            log.info(
                "SCRAM credentials of user %r are now: %s",
                username,
                ", ".join(sorted(credentials)) or "none",
            )
