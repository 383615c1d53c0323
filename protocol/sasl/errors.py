"""The failures of a SASL exchange, as a server reports them to its client.

Kafka distinguishes two kinds, and so do we:

- ``SaslAuthenticationFailed`` carries a message meant for the client (a PLAIN
  authorization id that differs from the user name, say); the broker answers
  SASL_AUTHENTICATION_FAILED with that message.
- ``SaslInvalidCredentials`` is everything else (an unknown user, a wrong password or
  proof, a malformed message). Its text stays in the broker: the client only learns that
  the credentials were invalid for the mechanism, so that an unauthenticated peer cannot
  tell an unknown user from a wrong password by the message.
"""

from __future__ import annotations


class SaslError(Exception):
    """A SASL exchange failed; the exchange cannot continue."""


class SaslAuthenticationFailed(SaslError):
    """A failure whose message goes to the client as it is."""


class SaslInvalidCredentials(SaslError):
    """A failure whose details stay with the server (only logged at debug level)."""
