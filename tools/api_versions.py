"""``minikafka api-versions``: the API versions minikafka supports, or a broker offers.

Without options it prints the codec's matrix (protocol.SUPPORTED_VERSIONS). With
``--bootstrap-server HOST:PORT`` it asks that broker (an ApiVersions v0 request, which
every Kafka broker answers) and prints its ranges beside ours; the request goes through
the client's connection, so ``--command-config`` (security.protocol, sasl.*, ssl.*) reaches
a TLS or SASL listener too.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TextIO

import protocol
from client.errors import ClientError, KafkaError
from client.security import ClientSecurity
from protocol import ApiKey
from protocol.api import api_name
from protocol.messages import ApiVersionsRequest
from tools.command import CommandError, add_command_config, client_properties, security_of


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        help="ask this broker for its versions and show them beside minikafka's",
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, help="seconds to wait for the broker (10)"
    )
    add_command_config(parser)


def format_table(
    ours: dict[int, tuple[int, int]], theirs: dict[int, tuple[int, int]] | None = None
) -> str:
    header = ["API", "KEY", "MIN", "MAX"]
    if theirs is not None:
        header += ["BROKER MIN", "BROKER MAX"]
    rows = [header]
    for key in sorted(set(ours) | set(theirs or {})):
        row = [api_name(key, unknown=f"Unknown({key})"), str(key)]
        row += [str(v) for v in ours[key]] if key in ours else ["-", "-"]
        if theirs is not None:
            row += [str(v) for v in theirs[key]] if key in theirs else ["-", "-"]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


async def query_broker(
    address: str, timeout: float, security: ClientSecurity
) -> dict[int, tuple[int, int]]:
    """The ranges a broker advertises in its ApiVersions v0 response."""
    from client.client import parse_bootstrap
    from client.connection import ConnectionConfig, request_once

    [(host, port)] = parse_bootstrap(address)[:1]
    config = ConnectionConfig(
        client_id="minikafka-api-versions",
        connect_timeout_s=timeout,
        request_timeout_s=timeout,
        security=security,
    )
    body = await request_once(host, port, ApiKey.API_VERSIONS, 0, ApiVersionsRequest(), config)
    if body.error_code:
        raise KafkaError(body.error_code, "ApiVersions failed")
    return {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = sys.stdout if out is None else out  # looked up now, not at import
    theirs = None
    if args.bootstrap_server:
        try:
            security = security_of(client_properties(args))
            theirs = asyncio.run(query_broker(args.bootstrap_server, args.timeout, security))
        except (ClientError, CommandError, ValueError, protocol.ProtocolError) as e:
            print(f"api-versions: cannot query {args.bootstrap_server}: {e}", file=sys.stderr)
            return 1
    print(format_table(dict(protocol.SUPPORTED_VERSIONS), theirs), file=out)
    return 0
