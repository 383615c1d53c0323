"""A web console served on a free port for the integration tests: the application of
``web.app.create_app`` under uvicorn on a thread of its own (its own event loop and
KafkaClient), so a test talks to it through real HTTP and the console talks to the
brokers through the real protocol."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import uvicorn

from client.client import ClientConfig, KafkaClient
from client.security import PLAINTEXT, ClientSecurity
from tests.polling import wait_until
from timer.clock import SystemClock
from tools.zookeeper_server import free_port
from web.app import create_app
from web.context import ConsoleSettings


class ServedConsole:
    """A console on 127.0.0.1:<free port> until ``stop``, connecting to the brokers with
    ``security`` (a secured cluster's client properties)."""

    def __init__(
        self,
        bootstrap: str,
        *,
        read_only: bool = False,
        metrics: tuple[str, ...] = (),
        users: dict[str, str] | None = None,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = ClientConfig(
            client_id="console-test", retries=3, operation_timeout_s=15.0, security=security
        )
        self.client = KafkaClient(bootstrap, config)
        settings = ConsoleSettings(
            bootstrap=bootstrap,
            read_only=read_only,
            metrics_urls=metrics,
            users=users,
            scrape_interval_s=0.5,
            scrape_keep=20,
        )
        app = create_app(self.client, settings, SystemClock())
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )
        self.thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)
        self.thread.start()
        wait_until(lambda: self.server.started, timeout=20, what="the console to listen")

    async def _serve(self) -> None:
        try:
            await self.server.serve()
        finally:
            await self.client.close()

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)

    # -- HTTP ---------------------------------------------------------------------------------

    def get(self, path: str, **query: Any) -> tuple[int, Any]:
        """GET a JSON path: (status, decoded body)."""
        q = urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        return self._open(urllib.request.Request(self.url + path + ("?" + q if q else "")))

    def post(self, path: str, body: dict[str, Any], csrf: bool = True) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if csrf:
            headers["X-CSRF-Token"] = self.get("/api/csrf")[1]["csrf_token"]
        data = json.dumps(body).encode()
        return self._open(urllib.request.Request(self.url + path, data, headers, method="POST"))

    def _open(self, request: urllib.request.Request) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())
