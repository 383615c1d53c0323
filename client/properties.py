"""Kafka's client properties turned into a ``ClientSecurity``: what a properties file
given to a tool (``--command-config``, ``--producer.config``) says about security.

Keys read, under both spellings users copy around:

- ``security.protocol``: PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL, any case.
- SASL: ``sasl.mechanism`` (librdkafka also says ``sasl.mechanisms``): PLAIN,
  SCRAM-SHA-256 or SCRAM-SHA-512; the user and password from ``sasl.jaas.config``
  (Java clients) or ``sasl.username`` + ``sasl.password`` (librdkafka).
- TLS trust: ``ssl.truststore.location`` or ``ssl.truststore.certificates`` (inline),
  librdkafka's ``ssl.ca.location`` (a file or a directory); with none of them the
  system's default CAs are trusted.
- TLS client certificate (mTLS): ``ssl.keystore.location`` (one PEM file with the key and
  the chain), ``ssl.keystore.certificate.chain`` + ``ssl.keystore.key`` (inline), or
  librdkafka's ``ssl.certificate.location`` + ``ssl.key.location``; ``ssl.key.password``
  decrypts the key.
- ``ssl.endpoint.identification.algorithm``: ``https`` (default) checks the broker's
  certificate names its host; empty (or librdkafka's ``none``) does not.
  librdkafka's ``enable.ssl.certificate.verification=false`` trusts any certificate.

Only PEM stores are read: ``ssl.truststore.type`` / ``ssl.keystore.type`` JKS or PKCS12
are refused naming the key (Java's default type is JKS; a store whose type is not given is
accepted when its content is PEM). Every refusal is a ``ClientPropertyError`` naming the
key, so a tool can say which line of the file to fix.

The JAAS text is read by a small parser of its own (one login module entry: class, control
flag, ``key=value`` options, ``;``; no comments), enough for the PlainLoginModule and
ScramLoginModule lines clients use; the client package cannot import the broker's parser.
Its errors name the key and a position, never the text, which holds a password.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from client.security import SECURITY_PROTOCOLS, ClientSecurity, SaslCredentials

#: SASL mechanisms the client speaks
CLIENT_SASL_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

#: the login module each mechanism's JAAS line names (the last part of the class name);
#: both carry the same username/password options
_LOGIN_MODULES: Final = {
    "PLAIN": "PlainLoginModule",
    "SCRAM-SHA-256": "ScramLoginModule",
    "SCRAM-SHA-512": "ScramLoginModule",
}
_CONTROL_FLAGS: Final = frozenset({"required", "requisite", "sufficient", "optional"})
_PEM_STORE_TYPES: Final = ("PEM",)


class ClientPropertyError(ValueError):
    """A client property that cannot be used; ``key`` names it."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"invalid client property {key}: {message}")
        self.key = key
        self.reason = message


# -- JAAS ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class JaasEntry:
    """One login module line of a JAAS configuration."""

    login_module: str
    control_flag: str
    options: Mapping[str, str]

    def __repr__(self) -> str:  # options hold passwords
        return f"JaasEntry({self.login_module}, {self.control_flag}, {sorted(self.options)})"


#: a double-quoted string (backslash escapes), a bare word, ``=`` or ``;``
_JAAS_TOKEN = re.compile(r'\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<word>[^\s=;"]+)|(?P<op>[=;]))')


def _jaas_tokens(text: str, key: str) -> list[tuple[str, str]]:
    """(kind, text) tokens: kind is ``str`` (a word or a quoted string) or ``op``."""
    tokens: list[tuple[str, str]] = []
    pos, end = 0, len(text.rstrip())
    while pos < end:
        match = _JAAS_TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            # the position, not the text: it may hold a password
            raise ClientPropertyError(key, f"cannot read the JAAS text at character {pos + 1}")
        if match["quoted"] is not None:
            tokens.append(("str", re.sub(r"\\(.)", r"\1", match["quoted"])))
        elif match["word"] is not None:
            tokens.append(("str", match["word"]))
        else:
            tokens.append(("op", match["op"]))
        pos = match.end()
    return tokens


def parse_jaas_config(text: str, key: str = "sasl.jaas.config") -> JaasEntry:
    """The one login module entry of ``text``:
    ``<class> <flag> [name=value ...];`` (values bare or in double quotes)."""
    tokens = _jaas_tokens(text, key)
    if len(tokens) < 3 or tokens[0][0] != "str" or tokens[1][0] != "str":
        raise ClientPropertyError(key, "expected '<LoginModule class> required name=\"value\";'")
    module, flag = tokens[0][1], tokens[1][1]
    if flag.lower() not in _CONTROL_FLAGS:
        raise ClientPropertyError(
            key, f"the second word is not a control flag ({', '.join(sorted(_CONTROL_FLAGS))})"
        )
    options: dict[str, str] = {}
    rest = tokens[2:]
    while rest and rest[0] != ("op", ";"):
        if len(rest) < 3 or rest[0][0] != "str" or rest[1] != ("op", "=") or rest[2][0] != "str":
            raise ClientPropertyError(key, "login module options must be name=value")
        options[rest[0][1]] = rest[2][1]
        rest = rest[3:]
    if rest != [("op", ";")]:
        raise ClientPropertyError(key, "one login module entry ending in ';' is expected")
    return JaasEntry(module, flag.lower(), options)


def jaas_credentials(text: str, mechanism: str, key: str) -> tuple[str, str]:
    """(username, password) of a client's JAAS line for ``mechanism``."""
    entry = parse_jaas_config(text, key)
    module = entry.login_module.rsplit(".", 1)[-1]
    if module not in set(_LOGIN_MODULES.values()):
        raise ClientPropertyError(
            key, f"login module {entry.login_module} is not PlainLoginModule or ScramLoginModule"
        )
    username, password = entry.options.get("username"), entry.options.get("password")
    if username is None or password is None:
        raise ClientPropertyError(key, f'{mechanism} needs username="..." password="..."')
    return username, password


# -- properties -> ClientSecurity ----------------------------------------------------------


def _value(props: Mapping[str, str], key: str) -> str | None:
    """The value of ``key`` with its blanks stripped; None when unset or empty."""
    raw = props.get(key)
    if raw is None or not raw.strip():
        return None
    return raw.strip()


def client_security(props: Mapping[str, str]) -> ClientSecurity:
    """The ClientSecurity ``props`` (Kafka's client properties) describe."""
    protocol = (_value(props, "security.protocol") or "PLAINTEXT").upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise ClientPropertyError(
            "security.protocol", f"{protocol!r} is not one of {', '.join(SECURITY_PROTOCOLS)}"
        )
    context = client_ssl_context(props) if protocol.endswith("SSL") else None
    sasl = sasl_credentials(props) if protocol.startswith("SASL") else None
    return ClientSecurity(protocol, context, sasl)


def sasl_credentials(props: Mapping[str, str]) -> SaslCredentials:
    """The SASL mechanism and the user's credentials of ``props``."""
    key = "sasl.mechanisms" if "sasl.mechanisms" in props else "sasl.mechanism"
    mechanism = (_value(props, key) or "GSSAPI").upper()
    if mechanism not in CLIENT_SASL_MECHANISMS:
        raise ClientPropertyError(
            key,
            f"mechanism {mechanism} is not supported; use one of "
            + ", ".join(CLIENT_SASL_MECHANISMS),
        )
    jaas = _value(props, "sasl.jaas.config")
    if jaas is not None:
        username, password = jaas_credentials(jaas, mechanism, "sasl.jaas.config")
    else:
        user, password_or_none = props.get("sasl.username"), props.get("sasl.password")
        if user is None or password_or_none is None:
            raise ClientPropertyError(
                "sasl.jaas.config",
                f"{mechanism} needs sasl.jaas.config (or sasl.username and sasl.password)",
            )
        username, password = user, password_or_none
    return SaslCredentials(mechanism, username, password)


# -- the TLS context -----------------------------------------------------------------------


def _check_store_type(props: Mapping[str, str], key: str, given: str | None) -> None:
    """Refuse a JKS or PKCS12 store. ``given`` is the store's PEM text, when the store
    type is not set and its content decides (Java would read the file as JKS)."""
    kind = _value(props, key)
    if kind is None:
        if given is None or "-----BEGIN" in given:
            return
        kind = "JKS"
    if kind.upper() not in _PEM_STORE_TYPES:
        raise ClientPropertyError(
            key, f"{kind} stores are not supported; convert the store to PEM and set {key}=PEM"
        )


def _read_text(key: str, path: str) -> str:
    try:
        return Path(path).read_text(encoding="latin-1")
    except OSError as exc:
        raise ClientPropertyError(key, f"cannot read {path}: {exc.strerror or exc}") from None


def _load_trust(context: ssl.SSLContext, props: Mapping[str, str]) -> None:
    location = _value(props, "ssl.truststore.location")
    inline = _value(props, "ssl.truststore.certificates")
    ca_location = _value(props, "ssl.ca.location")
    if location is not None:
        _check_store_type(props, "ssl.truststore.type", None)  # a given type, before reading
        text = _read_text("ssl.truststore.location", location)
        _check_store_type(props, "ssl.truststore.type", text)
        _verify_locations(context, "ssl.truststore.location", cadata=text)
    elif inline is not None:
        _check_store_type(props, "ssl.truststore.type", inline)
        _verify_locations(context, "ssl.truststore.certificates", cadata=inline)
    elif ca_location is not None and ca_location != "probe":
        if os.path.isdir(ca_location):
            _verify_locations(context, "ssl.ca.location", capath=ca_location)
        else:
            text = _read_text("ssl.ca.location", ca_location)
            _verify_locations(context, "ssl.ca.location", cadata=text)
    else:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)


def _verify_locations(
    context: ssl.SSLContext, key: str, *, cadata: str | None = None, capath: str | None = None
) -> None:
    try:
        context.load_verify_locations(cadata=cadata, capath=capath)
    except (ssl.SSLError, ValueError, OSError) as exc:
        raise ClientPropertyError(key, f"no PEM certificate could be read: {exc}") from None


def _load_client_certificate(context: ssl.SSLContext, props: Mapping[str, str]) -> None:
    password = props.get("ssl.key.password") or None
    keystore = _value(props, "ssl.keystore.location")
    chain, key = _value(props, "ssl.keystore.certificate.chain"), _value(props, "ssl.keystore.key")
    cert_file = _value(props, "ssl.certificate.location")
    key_file = _value(props, "ssl.key.location")
    if keystore is not None:
        _check_store_type(props, "ssl.keystore.type", None)
        _check_store_type(props, "ssl.keystore.type", _read_text("ssl.keystore.location", keystore))
        _cert_chain(context, "ssl.keystore.location", keystore, None, password)
    elif chain is not None or key is not None:
        if chain is None or key is None:
            missing = "ssl.keystore.key" if key is None else "ssl.keystore.certificate.chain"
            raise ClientPropertyError(missing, "is needed with its pair (chain and key inline)")
        _check_store_type(props, "ssl.keystore.type", chain)
        with tempfile.TemporaryDirectory(prefix="minikafka-keystore-") as directory:
            chain_path, key_path = Path(directory, "chain.pem"), Path(directory, "key.pem")
            key_path.touch(mode=0o600)
            key_path.write_text(key)
            chain_path.write_text(chain)
            _cert_chain(
                context, "ssl.keystore.certificate.chain", str(chain_path), str(key_path), password
            )
    elif cert_file is not None:
        _cert_chain(context, "ssl.certificate.location", cert_file, key_file, password)
    elif key_file is not None:
        raise ClientPropertyError("ssl.certificate.location", "is needed with ssl.key.location")


def _cert_chain(
    context: ssl.SSLContext, key: str, certfile: str, keyfile: str | None, password: str | None
) -> None:
    try:
        context.load_cert_chain(certfile, keyfile, password)
    except FileNotFoundError as exc:
        raise ClientPropertyError(key, f"cannot read {exc.filename}: no such file") from None
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ClientPropertyError(
            key,
            "no PEM private key and certificate chain could be read "
            f"(wrong ssl.key.password?): {exc}",
        ) from None


def client_ssl_context(props: Mapping[str, str]) -> ssl.SSLContext:
    """The TLS context a client connects with, from ``props``' ssl.* keys."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm not in ("https", "", "none"):
        raise ClientPropertyError(
            "ssl.endpoint.identification.algorithm", f"{algorithm!r} is not https or empty"
        )
    context.check_hostname = algorithm == "https"
    verify = props.get("enable.ssl.certificate.verification", "true").strip().lower()
    if verify not in ("true", "false"):
        raise ClientPropertyError("enable.ssl.certificate.verification", "expected true or false")
    if verify == "false":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        _load_trust(context, props)
    _load_client_certificate(context, props)
    return context
