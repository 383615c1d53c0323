"""Authentication: who is at the other end of a connection.

- :mod:`.principal`  the principal a connection authenticated as (``User:alice``)
- :mod:`.credential_cache`  every user's SCRAM credentials, as this broker checks logins
  (``BrokerAssembly.credential_cache``)
- :mod:`.inter_broker`  the broker as a client of its peers: the ClientSecurity of the
  inter-broker (or control-plane) listener, with the broker's own SASL credentials

TLS contexts and the SASL state of each connection live here too; the network layer
(``broker.network``) drives them, the handlers only see the principal each request
carries.
"""
