"""The messages pages of a topic: browse a partition (``/topics/<t>/messages``: newest
first, from an offset, or from a timestamp), search it (``/topics/<t>/search``: a bounded
server-side scan, ``web.reading``) and produce a test message (``POST
/topics/<t>/produce``). Keys, values and headers come in every rendering
(``web.decoding``); the page shows the one ``format`` asks for."""

from __future__ import annotations

import re
from typing import Any, Final
from urllib.parse import quote

from client.fetch import ConsumedRecord
from client.offset_reset import ResetError
from client.produce import partition_for_key, produce
from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from web.context import Console
from web.decoding import FORMATS, record_json
from web.errors import InputError, NotFound
from web.reading import Query, read_page, search_partition
from web.reset import parse_timestamp
from web.views import Page, Params, View

MAX_PAGE: Final = 500
MAX_SCAN: Final = 100_000
MAX_MATCHES: Final = 1_000


async def partitions_of(console: Console, topic: str) -> list[int]:
    view = await console.client.refresh_metadata([topic])
    info = view.topics.get(topic)
    if info is None or not info.partitions:
        raise NotFound(f"Topic '{topic}' does not exist (it may have been deleted).")
    return sorted(info.partitions)


def _format(params: Params) -> str:
    fmt = params.text("format", "auto")
    if fmt not in FORMATS:
        raise InputError(f"format must be one of {', '.join(FORMATS)}")
    return fmt


def _records(records: list[ConsumedRecord]) -> list[dict[str, Any]]:
    return [record_json(r) for r in records]


async def browse(console: Console, params: Params) -> dict[str, Any]:
    topic = params.path["topic"]
    fmt = _format(params)
    partitions = await partitions_of(console, topic)
    partition = params.integer("partition", partitions[0], 0, max(partitions))
    limit = params.integer("limit", 50, 1, MAX_PAGE)
    offset = params.optional_integer("offset", 0, 2**63 - 1)
    timestamp = None
    if params.text("timestamp").strip():
        try:
            timestamp = parse_timestamp(params.text("timestamp"))
        except ResetError as exc:
            raise InputError(str(exc)) from None
    page = await read_page(
        console.client, topic, partition, limit, offset=offset, timestamp=timestamp
    )
    return {
        "title": f"Messages of {topic}",
        "topic": topic,
        "partitions": partitions,
        "partition": partition,
        "limit": limit,
        "format": fmt,
        "mode": "newest"
        if page.newest_first
        else "timestamp"
        if timestamp is not None
        else "offset",
        "log_start_offset": page.log_start,
        "log_end_offset": page.log_end,
        "offset": page.offset,
        "next_offset": page.next_offset,
        "previous_offset": None
        if page.newest_first or page.offset <= page.log_start
        else max(page.log_start, page.offset - limit),
        "records": _records(page.records),
    }


def query_of(params: Params) -> Query:
    header, sep, header_value = params.text("header").partition("=")
    pattern = params.text("regex")
    try:
        regex = re.compile(pattern) if pattern else None
    except re.error as exc:
        raise InputError(f"regex {pattern!r} is not a regular expression: {exc}") from None
    return Query(
        key=params.text("key"),
        value=params.text("value"),
        regex=regex,
        header=header.strip(),
        header_value=header_value if sep else None,
    )


async def search(console: Console, params: Params) -> dict[str, Any]:
    topic = params.path["topic"]
    partitions = await partitions_of(console, topic)
    chosen = params.optional_integer("partition", 0, max(partitions))
    query = query_of(params)
    scan = params.integer("scan", 1000, 1, MAX_SCAN)
    limit = params.integer("limit", 100, 1, MAX_MATCHES)
    offset = params.optional_integer("offset", 0, 2**63 - 1)
    found: list[ConsumedRecord] = []
    scanned = 0
    if not query.empty:
        for p in partitions if chosen is None else [chosen]:
            matches, read = await search_partition(
                console.client, topic, p, query, scan=scan, limit=limit - len(found), offset=offset
            )
            found += matches
            scanned += read
            if len(found) >= limit:
                break
    return {
        "title": f"Search {topic}",
        "topic": topic,
        "partitions": partitions,
        "partition": chosen,
        "format": _format(params),
        "searched": not query.empty,
        "scanned": scanned,
        "scan": scan,
        "limit": limit,
        "truncated": len(found) >= limit,
        "records": _records(found),
    }


async def produce_one(console: Console, params: Params) -> dict[str, Any]:
    topic = params.path["topic"]
    partitions = await partitions_of(console, topic)
    key = params.text("key").encode() if params.text("key") else None
    value = params.text("value").encode()
    headers = [(k, v.encode()) for k, v in params.pairs("headers").items()]
    chosen = params.optional_integer("partition", 0, max(partitions))
    if chosen is None:
        chosen = partitions[0] if key is None else partition_for_key(key, len(partitions))
    batch = build_batch([SimpleRecord(key, value, headers, console.clock.time_ms())])
    result = await produce(console.client, topic, chosen, bytes(batch))
    return {
        "topic": topic,
        "partition": chosen,
        "offset": result.base_offset,
        "redirect": f"/topics/{quote(topic, safe='')}/messages?partition={chosen}",
    }


PAGE = Page(
    "messages",
    "Messages",
    None,
    (
        View("/topics/{topic}/messages", "messages.html", browse),
        View("/topics/{topic}/search", "search.html", search),
        View("/topics/{topic}/produce", "messages.html", produce_one, write=True),
    ),
)
