"""A TLS listener's server context, built from the listener's ``ssl.*`` keys.

Every key is read through ``ListenerConfig.get``, so ``listener.name.<l>.ssl.*`` beats
the plain key, and errors name the key that was given (``ListenerConfig.source_key``).

Two steps, so that what can be checked without touching the disk is checked first:

    tls_settings(listener)    pure: the keys turned into ``TlsSettings``; ConfigError for
                              a store type other than PEM, a missing key store, an
                              unknown cipher suite, a bad protocol range
    server_context(settings)  reads the key store and trust store into an SSLContext;
                              ConfigError naming the key whose file or text is unusable

Key stores are PEM only. Kafka's default ``ssl.keystore.type`` is JKS, a Java format
Python cannot read (nor PKCS12 through ``ssl``), so a TLS listener left at the default
type is refused at startup with a message that says to use PEM. A PEM key store is
either one file (``ssl.keystore.location``: private key and certificate chain together)
or two inline texts (``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``). OpenSSL
loads a chain only from a file, so inline texts are written to a file only this process
can read, loaded, and removed at once; they are never logged.

Cipher suites: Kafka names them by their IANA names, OpenSSL by its own; ``CIPHER_NAMES``
maps the TLS 1.2 suites in common use. TLS 1.3 suites (``TLS_AES_128_GCM_SHA256`` ...)
cannot be restricted through Python's ssl module (OpenSSL's TLS 1.3 list is not exposed):
they are accepted in the list and the broker warns at startup that all of them stay on.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from broker.config.listener_config import ListenerConfig
from config.errors import ConfigError

log = logging.getLogger(__name__)

#: security protocols whose listeners speak TLS
TLS_PROTOCOLS: Final = frozenset({"SSL", "SASL_SSL"})

#: IANA name -> OpenSSL name, TLS 1.2 suites
CIPHER_NAMES: Final[dict[str, str]] = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "DHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256": "DHE-RSA-AES128-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256": "DHE-RSA-AES256-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA256": "AES256-SHA256",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
}

#: TLS 1.3 suites: valid in ``ssl.cipher.suites``, but always all enabled
TLS13_SUITES: Final = frozenset(
    {
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_AES_128_CCM_SHA256",
        "TLS_AES_128_CCM_8_SHA256",
    }
)

_VERSIONS: Final = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}

_CLIENT_AUTH: Final = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}

#: key store and trust store types this broker can read
_PEM: Final = "PEM"


@dataclass(frozen=True)
class TlsSettings:
    """A TLS listener's settings, checked but not yet loaded. ``*_key`` fields name the
    configuration key each value came from, for error messages."""

    listener_name: str
    #: a PEM file with key and chain, or None with ``inline_chain``/``inline_key``
    keystore_location: str | None
    keystore_key: str  # the key that gave the key store (for errors)
    inline_chain: str | None
    inline_key: str | None
    key_password: str | None
    #: the trust store: a PEM file, or inline PEM certificates, or neither
    truststore_location: str | None
    truststore_certificates: str | None
    truststore_key: str
    verify_mode: ssl.VerifyMode
    minimum_version: ssl.TLSVersion
    maximum_version: ssl.TLSVersion
    #: OpenSSL cipher string for TLS 1.2 (None keeps OpenSSL's defaults)
    ciphers: str | None
    ciphers_key: str
    #: TLS 1.3 suites named in ``ssl.cipher.suites`` (they cannot be restricted)
    tls13_suites: tuple[str, ...]

    def __repr__(self) -> str:  # never print key material
        return f"TlsSettings({self.listener_name}, keystore={self.keystore_key})"


def tls_settings(listener: ListenerConfig) -> TlsSettings:
    """The TLS settings of ``listener`` (SSL or SASL_SSL), checked. ConfigError names the
    key at fault."""
    source = listener.source_key
    store_type = _text(listener.get("ssl.keystore.type")).upper()
    if store_type != _PEM:
        raise ConfigError(
            source("ssl.keystore.type"),
            f"key store type {store_type or '(empty)'} is not supported on listener "
            f"{listener.listener_name}: minikafka reads PEM key stores only; set "
            "ssl.keystore.type=PEM with ssl.keystore.location (key and certificate chain "
            "in one PEM file) or ssl.keystore.certificate.chain and ssl.keystore.key",
        )
    location = listener.get("ssl.keystore.location") or None
    chain = listener.get("ssl.keystore.certificate.chain") or None
    key = listener.get("ssl.keystore.key") or None
    if location is not None:
        if chain is not None or key is not None:
            raise ConfigError(
                source("ssl.keystore.location"),
                "give either a key store file or ssl.keystore.certificate.chain and "
                "ssl.keystore.key, not both",
            )
        keystore_key = source("ssl.keystore.location")
    elif chain is not None and key is not None:
        keystore_key = source("ssl.keystore.certificate.chain")
    else:
        missing = "ssl.keystore.key" if chain is not None else "ssl.keystore.location"
        raise ConfigError(
            source(missing),
            f"listener {listener.listener_name} speaks TLS and needs a key store: "
            "ssl.keystore.location, or ssl.keystore.certificate.chain with ssl.keystore.key",
        )
    for store in ("keystore", "truststore"):  # PEM has no store password (Kafka's rule)
        if listener.get(f"ssl.{store}.password"):
            hint = (
                " (an encrypted key's password is ssl.key.password)" if store == "keystore" else ""
            )
            raise ConfigError(
                source(f"ssl.{store}.password"),
                f"a PEM {store.replace('store', ' store')} has no password{hint}",
            )
    trust_location = listener.get("ssl.truststore.location") or None
    trust_certificates = listener.get("ssl.truststore.certificates") or None
    if trust_location is not None or trust_certificates is not None:
        trust_type = _text(listener.get("ssl.truststore.type")).upper()
        if trust_type != _PEM:
            raise ConfigError(
                source("ssl.truststore.type"),
                f"trust store type {trust_type or '(empty)'} is not supported on listener "
                f"{listener.listener_name}: minikafka reads PEM trust stores only; set "
                "ssl.truststore.type=PEM with ssl.truststore.location or "
                "ssl.truststore.certificates",
            )
    if trust_location is not None and trust_certificates is not None:
        raise ConfigError(
            source("ssl.truststore.location"),
            "give either a trust store file or ssl.truststore.certificates, not both",
        )
    truststore_key = source(
        "ssl.truststore.certificates" if trust_certificates else "ssl.truststore.location"
    )
    client_auth = _text(listener.get("ssl.client.auth")).lower()
    if client_auth not in _CLIENT_AUTH:
        raise ConfigError(
            source("ssl.client.auth"), f"{client_auth!r} is not none, requested or required"
        )
    minimum, maximum = protocol_range(
        source("ssl.enabled.protocols"), listener.get("ssl.enabled.protocols")
    )
    ciphers_key = source("ssl.cipher.suites")
    ciphers, tls13 = cipher_string(ciphers_key, listener.get("ssl.cipher.suites") or [])
    return TlsSettings(
        listener_name=listener.listener_name,
        keystore_location=location,
        keystore_key=keystore_key,
        inline_chain=chain,
        inline_key=key,
        key_password=listener.get("ssl.key.password") or None,
        truststore_location=trust_location,
        truststore_certificates=trust_certificates,
        truststore_key=truststore_key,
        verify_mode=_CLIENT_AUTH[client_auth],
        minimum_version=minimum,
        maximum_version=maximum,
        ciphers=ciphers,
        ciphers_key=ciphers_key,
        tls13_suites=tls13,
    )


def protocol_range(key: str, protocols: Sequence[str]) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    """The (minimum, maximum) TLS versions of ``ssl.enabled.protocols``. OpenSSL takes a
    range, not a set: TLSv1.2 and TLSv1.3 are adjacent, so any non-empty subset is one."""
    versions = []
    for name in protocols:
        if name not in _VERSIONS:
            raise ConfigError(key, f"{name!r} is not one of {sorted(_VERSIONS)}")
        versions.append(_VERSIONS[name])
    if not versions:
        raise ConfigError(key, "no TLS protocol enabled")
    return min(versions), max(versions)


def cipher_string(key: str, suites: Sequence[str]) -> tuple[str | None, tuple[str, ...]]:
    """(OpenSSL cipher string of the TLS 1.2 suites or None, TLS 1.3 suites named)."""
    openssl: list[str] = []
    tls13: list[str] = []
    for suite in (s.strip() for s in suites if s.strip()):
        if suite in TLS13_SUITES:
            tls13.append(suite)
        elif suite in CIPHER_NAMES:
            openssl.append(CIPHER_NAMES[suite])
        else:
            raise ConfigError(key, f"unknown cipher suite {suite!r} (give IANA names)")
    return (":".join(openssl) or None), tuple(tls13)


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """The SSLContext of a listener: its key store and trust store loaded. ConfigError
    naming the key when a file or text cannot be used."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = settings.minimum_version
    context.maximum_version = settings.maximum_version
    context.options |= ssl.OP_NO_RENEGOTIATION | ssl.OP_NO_COMPRESSION
    if settings.ciphers is not None:
        try:
            context.set_ciphers(settings.ciphers)
        except ssl.SSLError as exc:
            raise ConfigError(
                settings.ciphers_key, f"OpenSSL accepts none of them: {exc}"
            ) from None
    _load_keystore(context, settings)
    context.verify_mode = settings.verify_mode
    try:
        if settings.truststore_location is not None:
            context.load_verify_locations(cafile=settings.truststore_location)
        elif settings.truststore_certificates is not None:
            context.load_verify_locations(cadata=settings.truststore_certificates)
        elif settings.verify_mode is not ssl.CERT_NONE:
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    except (OSError, ValueError) as exc:
        raise ConfigError(settings.truststore_key, f"cannot load the trust store: {exc}") from None
    return context


def listener_context(listener: ListenerConfig) -> ssl.SSLContext:
    """``server_context(tls_settings(listener))``, warning when TLS 1.3 suites are named."""
    settings = tls_settings(listener)
    if settings.tls13_suites:
        log.warning(
            "listener %s: %s names TLS 1.3 cipher suites (%s); Python's ssl module cannot "
            "restrict TLS 1.3 suites, so every TLS 1.3 suite OpenSSL offers stays enabled",
            settings.listener_name,
            settings.ciphers_key,
            ", ".join(settings.tls13_suites),
        )
    return server_context(settings)


def _load_keystore(context: ssl.SSLContext, settings: TlsSettings) -> None:
    # always a callback: without one OpenSSL would prompt on the terminal for the
    # password of an encrypted key; with it, a missing password fails the load
    secret = settings.key_password or ""

    def password() -> str:
        return secret

    try:
        if settings.keystore_location is not None:
            context.load_cert_chain(settings.keystore_location, password=password)
            return
        assert settings.inline_chain is not None and settings.inline_key is not None
        # OpenSSL reads a chain from a file only: a private one, removed once loaded
        fd, path = tempfile.mkstemp(prefix="minikafka-keystore-", suffix=".pem")
        try:
            with os.fdopen(fd, "w") as file:
                file.write(settings.inline_key.strip() + "\n")
                file.write(settings.inline_chain.strip() + "\n")
            context.load_cert_chain(path, password=password)
        finally:
            os.unlink(path)
    except ssl.SSLError as exc:
        raise ConfigError(
            settings.keystore_key,
            f"cannot load the key store ({exc}): not a PEM private key with its certificate "
            "chain, or an encrypted key without the right ssl.key.password",
        ) from None
    except OSError as exc:
        raise ConfigError(settings.keystore_key, f"cannot load the key store: {exc}") from None


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""
