"""Listeners: ``listeners``/``advertised.listeners`` values parsed into EndPoints.

A listener is ``NAME://host:port`` (an IPv6 host in brackets, an empty host for every
interface); its security protocol comes from ``listener.security.protocol.map``
(``NAME:PROTOCOL`` pairs). The EndPoint is zk.model's: what /brokers/ids/<id> registers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from config.errors import ConfigError
from zk.model import EndPoint

#: security protocols the network server can serve today
SUPPORTED_SECURITY_PROTOCOLS = frozenset({"PLAINTEXT", "SASL_PLAINTEXT"})

_LISTENER = re.compile(
    r"^(?P<name>[A-Za-z0-9_\-]+)://(?:\[(?P<ipv6>[0-9A-Fa-f:.%a-z]*)\]|(?P<host>[^:/\[\]]*))"
    r":(?P<port>-?\d+)$"
)


def parse_security_protocol_map(key: str, value: str) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for pair in (p.strip() for p in value.split(",") if p.strip()):
        name, sep, protocol = pair.partition(":")
        if not sep or not name.strip() or not protocol.strip():
            raise ConfigError(key, f"{pair!r} is not NAME:PROTOCOL")
        mapping[name.strip().upper()] = protocol.strip().upper()
    return mapping


def parse_listeners(key: str, value: str, protocol_map: Mapping[str, str]) -> list[EndPoint]:
    endpoints: list[EndPoint] = []
    for item in (p.strip() for p in value.split(",") if p.strip()):
        match = _LISTENER.match(item)
        if match is None:
            raise ConfigError(key, f"{item!r} is not NAME://host:port")
        name = match["name"].upper()
        port = int(match["port"])
        if not 0 <= port <= 65535:
            raise ConfigError(key, f"port {port} of {item!r} is out of range")
        if name not in protocol_map:
            raise ConfigError(
                key, f"listener {name} has no entry in listener.security.protocol.map"
            )
        host = match["ipv6"] if match["ipv6"] is not None else match["host"]
        endpoints.append(EndPoint(host, port, name, protocol_map[name]))
    names = [e.listener_name for e in endpoints]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(key, f"listener names must be unique, repeated: {duplicates}")
    return endpoints


def parse_ip_overrides(key: str, value: str) -> dict[str, int]:
    overrides: dict[str, int] = {}
    for pair in (p.strip() for p in value.split(",") if p.strip()):
        host, sep, count = pair.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise ConfigError(key, f"{pair!r} is not host:count")
        overrides[host.strip()] = int(count)
    return overrides
