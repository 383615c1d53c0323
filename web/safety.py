"""The console's guards: read-only mode, CSRF tokens on writes, HTTP basic authentication.

- Read-only (``--read-only``): write views are not shown in pages and every write answers
  403, whatever the request carries.
- CSRF: every write is a POST carrying a token, in the form field ``csrf_token`` or the
  header ``X-CSRF-Token``. The token is an HMAC of the user's name under a secret drawn
  when the console starts, so it is the same for every page a user loads and unknown to
  any other site (a browser does not let one site read another's pages). Scripts read
  theirs from ``GET /api/csrf``.
- Basic authentication (``--users-file``): a file of ``name:password`` lines (``#``
  comments and blank lines are skipped; keep it readable by the console's user only).
  With it, every request needs a matching ``Authorization: Basic`` header, compared in
  constant time; without it the console has no users and relies on binding 127.0.0.1.
- Headers on every answer (``SecurityHeaders``): a Content-Security-Policy that allows no
  script at all (the pages have none), so even markup that slipped past escaping could not
  run; no framing by other sites (clickjacking); no content-type sniffing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from pathlib import Path

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
ANONYMOUS = ""


class UsersFileError(ValueError):
    """A users file that cannot be read (the message names the line)."""


def read_users(path: str | Path) -> dict[str, str]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UsersFileError(f"cannot read users file {path}: {exc.strerror or exc}") from None
    users: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, password = line.partition(":")
        if not sep or not name or not password:
            raise UsersFileError(f"{path}:{number}: expected name:password")
        users[name] = password
    if not users:
        raise UsersFileError(f"users file {path} names no user")
    return users


class Csrf:
    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def token(self, user: str) -> str:
        return hmac.new(self._secret, user.encode(), hashlib.sha256).hexdigest()

    def valid(self, user: str, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(self.token(user), token)


def basic_user(header: str | None, users: Mapping[str, str]) -> str | None:
    """The user an ``Authorization`` header proves, or None."""
    if not header or not header.lower().startswith("basic "):
        return None
    try:
        name, sep, password = base64.b64decode(header[6:].strip()).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    expected = users.get(name)
    ok = hmac.compare_digest(
        (expected or secrets.token_hex(16)).encode(), password.encode()
    )  # the same work for unknown users
    return name if sep and expected is not None and ok else None


#: the pages use no script, no frame and load nothing from elsewhere
HEADERS: list[tuple[bytes, bytes]] = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'none'; object-src 'none'; "
        b"frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]


class SecurityHeaders:
    """ASGI middleware: ``HEADERS`` on every HTTP answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *HEADERS]}
            await send(message)

        await self.app(scope, receive, with_headers)


class BasicAuth:
    """ASGI middleware: a request without valid credentials is answered 401."""

    def __init__(self, app: ASGIApp, users: Mapping[str, str]) -> None:
        self.app = app
        self.users = users

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        raw = headers.get(b"authorization")
        user = basic_user(raw.decode("latin-1") if raw else None, self.users)
        if user is None:
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"www-authenticate", b'Basic realm="minikafka console"'),
                        (b"content-type", b"text/plain; charset=utf-8"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b"authentication required\n"})
            return
        scope.setdefault("state", {})["user"] = user
        await self.app(scope, receive, send)
