"""A view is declared once and served twice: as an HTML page and as JSON under ``/api``.

A ``View`` names its path, its template and a loader: an async function of the
``Console`` and the request's ``Params`` returning a dict of plain JSON values. A
reading view answers ``GET <path>`` (the template rendered over the dict) and
``GET /api<path>`` (the dict as JSON). A writing view answers ``POST <path>`` (an HTML
form; when the dict has ``redirect``, the browser is sent there, so a reload never posts
twice) and ``POST /api<path>`` (form or JSON body). Writes are checked before the loader
runs: refused in read-only mode, refused without the user's CSRF token (``web.safety``).
Whatever a loader raises becomes a ``Problem`` (``web.errors``): an error page or a JSON
error, with the status that says what happened.

A ``Page`` groups the views of one concern, with its entry in the navigation bar; a page
module exposes one ``PAGE``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from web.context import Console
from web.errors import Forbidden, InputError, problem_of
from web.safety import ANONYMOUS, CSRF_FIELD, CSRF_HEADER

Loader = Callable[[Console, "Params"], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class View:
    path: str
    template: str
    load: Loader
    write: bool = False
    #: the JSON route, when not ``/api`` + ``path``
    api: str | None = None


@dataclass(frozen=True)
class Page:
    name: str
    title: str
    #: the navigation bar's link (None: not in the bar)
    nav: str | None
    views: tuple[View, ...]


class Params:
    """A request's parameters (query string, or a form or JSON body for writes) and its
    path parameters; typed getters raise InputError naming the field."""

    def __init__(self, values: Mapping[str, Any], path: Mapping[str, str]) -> None:
        self.values = {k: v for k, v in values.items() if v is not None}
        self.path = path

    def text(self, name: str, default: str = "") -> str:
        value = self.values.get(name, default)
        return value if isinstance(value, str) else json.dumps(value)

    def required(self, name: str) -> str:
        value = self.text(name).strip()
        if not value:
            raise InputError(f"{name} is required")
        return value

    def integer(self, name: str, default: int, low: int, high: int) -> int:
        raw = self.text(name).strip()
        if not raw:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise InputError(f"{name} must be a whole number, not {raw!r}") from None
        if not low <= value <= high:
            raise InputError(f"{name} must be between {low} and {high}, not {value}")
        return value

    def optional_integer(self, name: str, low: int, high: int) -> int | None:
        return None if not self.text(name).strip() else self.integer(name, 0, low, high)

    def flag(self, name: str) -> bool:
        value = self.values.get(name)
        if isinstance(value, bool):
            return value
        return str(value or "").strip().lower() in ("1", "true", "on", "yes")

    def pairs(self, name: str) -> dict[str, str]:
        """``k=v`` lines (or a JSON object) as a dict; blank lines are skipped."""
        value = self.values.get(name)
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items()}
        out: dict[str, str] = {}
        for line in str(value or "").splitlines():
            if not line.strip():
                continue
            key, sep, val = line.partition("=")
            if not sep or not key.strip():
                raise InputError(f"{name}: {line.strip()!r} is not KEY=VALUE")
            out[key.strip()] = val.strip()
        return out


async def _values(request: Request) -> dict[str, Any]:
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            body = await request.json()
        except ValueError:
            raise InputError("the request body is not JSON") from None
        if not isinstance(body, dict):
            raise InputError("the request body must be a JSON object")
        return body
    form = await request.form()
    return {k: v for k, v in form.items() if isinstance(v, str)}


def user_of(request: Request) -> str:
    return str(request.scope.get("state", {}).get("user", ANONYMOUS))


class Renderer:
    """Serves views: builds their routes and renders their answers and errors."""

    def __init__(self, templates: Jinja2Templates, pages: tuple[Page, ...]) -> None:
        self.templates = templates
        self.pages = pages

    def routes(self) -> list[Route]:
        out = []
        for page in self.pages:
            for view in page.views:
                method = "POST" if view.write else "GET"
                out.append(Route(view.path, self._endpoint(view, False), methods=[method]))
                api = view.api or "/api" + view.path
                out.append(Route(api, self._endpoint(view, True), methods=[method]))
        return out

    def _endpoint(self, view: View, as_json: bool) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await self.serve(request, view, as_json)

        return endpoint

    def context(self, request: Request) -> dict[str, Any]:
        console: Console = request.app.state.console
        return {
            "pages": [p for p in self.pages if p.nav is not None],
            "read_only": console.settings.read_only,
            "bootstrap": console.settings.bootstrap,
            "csrf_field": CSRF_FIELD,
            "csrf_token": console.csrf.token(user_of(request)),
            "query": dict(request.query_params),
        }

    async def serve(self, request: Request, view: View, as_json: bool) -> Response:
        console: Console = request.app.state.console
        try:
            if view.write:
                if console.settings.read_only:
                    raise Forbidden("The console is read-only: it makes no changes.")
                values = await _values(request)
                token = values.pop(CSRF_FIELD, None) or request.headers.get(CSRF_HEADER)
                if not console.csrf.valid(user_of(request), token):
                    raise Forbidden("Missing or stale CSRF token: reload the page and retry.")
            else:
                values = dict(request.query_params)
            data = await view.load(console, Params(values, request.path_params))
        except Exception as exc:
            return self.error(request, exc, as_json)
        if as_json:
            return JSONResponse({k: v for k, v in data.items() if k != "redirect"})
        if view.write and "redirect" in data:
            return RedirectResponse(str(data["redirect"]), status_code=303)
        return self.templates.TemplateResponse(
            request, view.template, {**self.context(request), **data}
        )

    def error(self, request: Request, exc: BaseException, as_json: bool) -> Response:
        console: Console = request.app.state.console
        problem = problem_of(exc, console.settings.bootstrap)
        if as_json:
            return JSONResponse(problem.to_json(), status_code=problem.status)
        return self.templates.TemplateResponse(
            request,
            "error.html",
            {**self.context(request), "problem": problem},
            status_code=problem.status,
        )
