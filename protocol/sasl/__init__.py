"""SASL mechanisms, sans-IO: the bytes each side of an exchange sends and checks.

- :mod:`.scram`           SCRAM-SHA-256/512 (RFC 5802, RFC 7677): credentials and their formulas
- :mod:`.scram_exchange`  the SCRAM messages, and the server's and client's state machines
- :mod:`.plain`           PLAIN (RFC 4616): the one token and the server's check
- :mod:`.errors`          how an exchange fails, and which messages reach the client

Both the broker (``broker.security``) and the client (``client``) run these exchanges; the
Kafka frames that carry the tokens (SaslHandshake, SaslAuthenticate) are ordinary messages
of the protocol package.
"""
