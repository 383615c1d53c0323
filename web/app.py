"""``create_app``: the console's Starlette application around a client its caller owns.

The caller builds the ``KafkaClient`` (bootstrap servers, security) and closes it after
the application has stopped; the application starts and stops the metrics sampler with
its lifespan. Routes: each page's views (``web.views``), ``GET /api/csrf`` (the token a
script sends with its writes) and ``/static/console.css``. With users, every request
passes HTTP basic authentication first (``web.safety.BasicAuth``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from client.client import KafkaClient
from timer.clock import Clock
from web.context import Console, ConsoleSettings
from web.decoding import shown
from web.metrics import MetricsSampler
from web.pages import PAGES
from web.safety import BasicAuth, SecurityHeaders
from web.views import Renderer, user_of

HERE = Path(__file__).parent


def human_size(value: object) -> str:
    """Bytes for a person: ``-`` when unknown, else B, KiB, MiB or GiB."""
    if not isinstance(value, int | float):
        return "-"
    for unit in ("B", "KiB", "MiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def utc_time(ms: object) -> str:
    """Epoch milliseconds as ``2024-01-02 03:04:05.678 UTC`` (``-`` for none)."""
    if not isinstance(ms, int) or ms < 0:
        return "-"
    when = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    return when.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d} UTC"


def templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every page: record contents are never markup
    )
    env.filters["shown"] = shown
    env.filters["size"] = human_size
    env.filters["utc"] = utc_time
    env.filters["segment"] = lambda text: quote(str(text), safe="")  # one path segment
    return Jinja2Templates(env=env)


def create_app(client: KafkaClient, settings: ConsoleSettings, clock: Clock) -> Starlette:
    sampler = MetricsSampler(
        settings.metrics_urls, clock, settings.scrape_interval_s, settings.scrape_keep
    )
    console = Console(client, settings, clock, sampler)
    renderer = Renderer(templates(), PAGES)

    async def csrf(request: Request) -> Response:
        return JSONResponse({"csrf_token": console.csrf.token(user_of(request))})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        sampler.start()
        try:
            yield
        finally:
            await sampler.stop()

    middleware = [Middleware(SecurityHeaders)]
    if settings.users is not None:
        middleware.append(Middleware(BasicAuth, users=settings.users))
    app = Starlette(
        routes=[
            Route("/api/csrf", csrf, methods=["GET"]),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
            *renderer.routes(),
        ],
        middleware=middleware,
        lifespan=lifespan,
    )
    app.state.console = console
    return app
