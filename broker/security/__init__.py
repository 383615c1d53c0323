"""Authentication: who is at the other end of a connection.

- :mod:`.principal`           the principal a connection authenticated as (``User:alice``)
- :mod:`.jaas`                Kafka's inline JAAS configuration (``sasl.jaas.config``), parsed
- :mod:`.sasl_states`         the SASL states of a connection, and the table of what each serves
- :mod:`.sasl_authenticator`  one connection's SASL, sans-IO: frames in, decisions out
- :mod:`.sasl_listener`       a SASL listener's mechanisms, users and limits, from its keys
- :mod:`.credential_cache`    every user's SCRAM credentials, as this broker checks logins
  (``BrokerAssembly.credential_cache``)
- :mod:`.inter_broker`        the broker as a client of its peers: the ClientSecurity of the
  inter-broker (or control-plane) listener, with the broker's own SASL credentials

TLS contexts live here too; the network layer
(``broker.network``) drives them, the handlers only see the principal each request
carries.
"""
