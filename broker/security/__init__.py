"""Authentication: who is at the other end of a connection.

- :mod:`.principal`  the principal a connection authenticated as (``User:alice``)

TLS contexts, the SASL state of each connection and the SCRAM credential cache live here
too; the network layer (``broker.network``) drives them, the handlers only see the
principal each request carries.
"""
