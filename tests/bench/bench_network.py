"""Network server benchmark: small-request rate and zero-copy fetch throughput.

    .venv/bin/python tests/bench/bench_network.py [--quick] [--seconds S]

1. Requests/s with 16 connections x 16 requests in flight (ApiVersions v3 through the
   real codec and the full path: Processor, RequestChannel, handler pool, response
   queue), on uvloop and on plain asyncio; beside it, the baseline of a bare
   asyncio.Protocol that echoes frames without parsing them (the ceiling of the loop).
   Each connection has one request in the broker at a time (muting), as in Kafka.
2. Fetch throughput from the page cache: one 8 MiB file region per response sent with
   os.sendfile, against the read()+send() baseline (the handler reads the same bytes
   with os.pread and returns them as bytes), with the server's CPU seconds per GiB.

The server runs in its own process; the client (uvloop, no parsing beyond the size
prefixes, or recv_into a reused buffer) in this one.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import socket
import struct
import sys
import tempfile
import time
from multiprocessing.connection import Connection as Pipe
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

SIZE = struct.Struct(">i")
CONNECTIONS = 16
IN_FLIGHT = 16
REGION = 8 << 20
FILE_SIZE = 64 << 20


# --- servers (child process) --------------------------------------------------------------


class _Region:
    def __init__(self, fd: int, position: int, length: int) -> None:
        self._fd, self.position, self._length = fd, position, length

    def fileno(self) -> int:
        return self._fd

    def __len__(self) -> int:
        return self._length


def _serve(kind: str, mode: str, path: str, pipe: Pipe) -> None:
    import protocol
    from broker.metrics import BrokerMetrics
    from broker.network import Codec, ResponseParts, SocketServer, run
    from broker.network.processor import ProcessorSettings
    from broker.network.socket_server import NetworkSettings
    from protocol.messages import ApiVersionsResponse, FetchResponse
    from zk.model import EndPoint

    fd = os.open(path, os.O_RDONLY) if path else -1
    position = 0

    async def handle(request: Any) -> Any:
        nonlocal position
        if request.api_key == protocol.ApiKey.API_VERSIONS:
            return protocol.make_response(request.header, ApiVersionsResponse(api_keys=[]))
        records: Any
        if mode == "sendfile":
            records = _Region(fd, position, REGION)
        else:  # the read()+send() baseline: record bytes pass through Python
            records = os.pread(fd, REGION, position)
        position = (position + REGION) % FILE_SIZE
        partition = FetchResponse.PartitionData(partition_index=0, records=records)
        topic = FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition])
        return protocol.make_response(request.header, FetchResponse(responses=[topic]))

    async def handle_raw(request: Any) -> Any:
        return ResponseParts([SIZE.pack(request.correlation_id) + b"\x00" * 8])

    async def main() -> None:
        if mode.startswith("echo"):
            per_frame = mode == "echo-per-frame"
            server = await asyncio.get_running_loop().create_server(
                lambda: _EchoProtocol(per_frame), "127.0.0.1", 0
            )
            pipe.send(server.sockets[0].getsockname()[1])
        else:
            settings = NetworkSettings(
                data_listeners=(EndPoint("127.0.0.1", 0, "PLAINTEXT", "PLAINTEXT"),),
                num_network_threads=3,
                num_io_threads=8,
                processor=ProcessorSettings(send_buffer=-1, receive_buffer=-1),
            )
            codec = Codec(_header_only, _as_parts) if mode == "no-codec" else None
            net = SocketServer(
                settings,
                handle_raw if mode == "no-codec" else handle,
                codec=codec,
                metrics=BrokerMetrics(),
            )
            await net.start()
            pipe.send(net.bound_port("PLAINTEXT"))
        await asyncio.get_running_loop().run_in_executor(None, pipe.recv)  # until told

    run(main(), kind)


class _Header:
    __slots__ = ("api_key", "api_version", "correlation_id")

    def __init__(self, api_key: int, api_version: int, correlation_id: int) -> None:
        self.api_key, self.api_version, self.correlation_id = api_key, api_version, correlation_id


class _Decoded:
    __slots__ = ("body", "header")

    def __init__(self, header: _Header) -> None:
        self.header, self.body = header, None


def _header_only(frame: Any) -> _Decoded:
    """The no-codec variant: only api key, version and correlation id are read."""
    return _Decoded(_Header(*struct.unpack_from(">hhi", frame)))


def _as_parts(response: Any) -> Any:
    raise AssertionError("the no-codec handler returns ResponseParts")


class _EchoProtocol(asyncio.Protocol):
    """The baseline: frames echoed back as soon as they are whole, nothing parsed; all
    the frames of one read in one write, or (``per_frame``) one write per frame, which
    is what answering one request at a time per connection costs in system calls."""

    def __init__(self, per_frame: bool) -> None:
        self.per_frame = per_frame

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return
        buf = self.buffer
        buf += data
        pos = 0
        while len(buf) - pos >= 4:
            (size,) = SIZE.unpack_from(buf, pos)
            if len(buf) - pos - 4 < size:
                break
            if self.per_frame:
                if self.transport.is_closing():  # the client went away mid-burst
                    return
                self.transport.write(bytes(buf[pos : pos + 4 + size]))
            pos += 4 + size
        if pos:
            if not self.per_frame:
                self.transport.write(bytes(buf[:pos]))
            del buf[:pos]


class Server:
    def __init__(self, kind: str, mode: str, path: str = "") -> None:
        ctx = mp.get_context("spawn")
        self.pipe, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(kind, mode, path, child), daemon=True)
        self.process.start()
        self.port: int = self.pipe.recv()

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.pipe.send("stop")
        self.process.join(10)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(5)


# --- clients (this process) ---------------------------------------------------------------


class _RateClient(asyncio.Protocol):
    def __init__(self, frame: bytes, counter: list[int], stop: asyncio.Event) -> None:
        self.frame, self.counter, self.stop = frame, counter, stop
        self.buffer = bytearray()

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        transport.write(self.frame * IN_FLIGHT)

    def data_received(self, data: bytes) -> None:
        buf = self.buffer
        buf += data
        pos, done = 0, 0
        while len(buf) - pos >= 4:
            (size,) = SIZE.unpack_from(buf, pos)
            if len(buf) - pos - 4 < size:
                break
            pos += 4 + size
            done += 1
        del buf[:pos]
        self.counter[0] += done
        if done and not self.stop.is_set():
            self.transport.write(self.frame * done)


async def _rate(port: int, seconds: float) -> float:
    import protocol
    from protocol.messages import ApiVersionsRequest

    body = ApiVersionsRequest(client_software_name="bench", client_software_version="1")
    encoded = protocol.encode_request(protocol.make_request(18, 3, 1, "bench", body))
    frame = SIZE.pack(len(encoded)) + encoded
    loop = asyncio.get_running_loop()
    counter, stop = [0], asyncio.Event()
    transports = []
    for _ in range(CONNECTIONS):
        transport, _ = await loop.create_connection(
            lambda: _RateClient(frame, counter, stop), "127.0.0.1", port
        )
        transports.append(transport)
    await asyncio.sleep(min(0.5, seconds / 4))  # warm up
    start_count, start = counter[0], loop.time()
    await asyncio.sleep(seconds)
    rate = (counter[0] - start_count) / (loop.time() - start)
    stop.set()
    for transport in transports:
        transport.close()
    return rate


def _fetch_throughput(server: Server, seconds: float) -> tuple[float, float]:
    import protocol
    from protocol.messages import FetchRequest

    encoded = protocol.encode_request(protocol.make_request(1, 12, 1, "bench", FetchRequest()))
    frame = SIZE.pack(len(encoded)) + encoded
    sock = socket.create_connection(("127.0.0.1", server.port))
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    received, cpu0, t0 = 0, server.cpu_seconds(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        sock.sendall(frame)
        header = b""
        while len(header) < 4:
            header += sock.recv(4 - len(header))
        (remaining,) = SIZE.unpack(header)
        while remaining:
            n = sock.recv_into(view, min(remaining, len(buf)))
            if not n:
                raise ConnectionError("server closed")
            remaining -= n
            received += n
    elapsed = time.perf_counter() - t0
    cpu = server.cpu_seconds() - cpu0
    sock.close()
    return received / elapsed / (1 << 20), cpu / (received / (1 << 30))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 s per measurement")
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    seconds = 1.0 if args.quick else args.seconds
    import uvloop

    print(f"requests/s, {CONNECTIONS} connections x {IN_FLIGHT} in flight, {seconds:.0f}s each")
    for kind in ("uvloop", "asyncio"):
        for mode, label in (
            ("echo", "bare Protocol echo (baseline)"),
            ("echo-per-frame", "bare echo, a write per frame"),
            ("no-codec", "SocketServer, header-only codec"),
            ("full", "SocketServer, full codec"),
        ):
            server = Server(kind, mode)
            try:
                cpu0, t0 = server.cpu_seconds(), time.perf_counter()
                rate = uvloop.run(_rate(server.port, seconds))
                cpu = server.cpu_seconds() - cpu0
                served = rate * (time.perf_counter() - t0)  # includes the warm-up: approximate
            finally:
                server.stop()
            print(
                f"  {kind:8} {label:32} {rate:10,.0f} req/s"
                f"   server CPU ~{cpu / served * 1e6:5.1f} us/request"
            )

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "00000000000000000000.log"
        path.write_bytes(os.urandom(FILE_SIZE))
        with path.open("rb") as f:  # warm the page cache
            while f.read(1 << 20):
                pass
        print(f"fetch throughput, {REGION >> 20} MiB per response, file in page cache")
        for mode, label in (("read", "read()+send() (baseline)"), ("sendfile", "sendfile")):
            server = Server("uvloop", mode, str(path))
            try:
                mib_s, cpu_per_gib = _fetch_throughput(server, seconds)
            finally:
                server.stop()
            print(f"  {label:26} {mib_s:10,.0f} MiB/s   server CPU {cpu_per_gib:.3f} s/GiB")


if __name__ == "__main__":
    main()
