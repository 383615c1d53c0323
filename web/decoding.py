"""How the console shows record bytes (pure): as text, as pretty JSON, as hex.

Every key, value and header value is offered in all three renderings; the page shows the
one asked for (``format``), and ``auto`` picks JSON when the bytes are a JSON object or array, text
when they are UTF-8, hex otherwise. Text is only offered for valid UTF-8, so binary data
is never shown as mojibake. The renderings are plain strings: escaping is the template's
job (Jinja2 autoescape), so a value of ``<script>`` is shown as those characters.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from client.fetch import ConsumedRecord

FORMATS: Final = ("auto", "text", "json", "hex")

#: hex of larger values is cut (the page says so); the JSON API gives it whole
MAX_SHOWN_HEX_BYTES: Final = 4096


@dataclass(frozen=True, slots=True)
class Rendered:
    """One byte string's renderings; ``None`` is a null key or value."""

    size: int
    text: str | None
    json: str | None
    hex: str

    def shown(self, fmt: str) -> str:
        """The rendering of ``fmt`` (falling back to hex when it does not apply)."""
        if fmt == "auto":
            fmt = "json" if self.json is not None else "text" if self.text is not None else "hex"
        if fmt == "json" and self.json is not None:
            return self.json
        if fmt == "text" and self.text is not None:
            return self.text
        return self.hex

    def to_json(self) -> dict[str, Any]:
        return {"size": self.size, "text": self.text, "json": self.json, "hex": self.hex}


def render(data: bytes | None) -> Rendered | None:
    if data is None:
        return None
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    pretty = None
    if text is not None and text.lstrip()[:1] in ("{", "["):
        try:
            pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pretty = None
    return Rendered(len(data), text, pretty, data.hex(" "))


def record_json(record: ConsumedRecord) -> dict[str, Any]:
    """A record as the JSON API gives it, every rendering included."""
    key = render(record.key)
    value = render(record.value)
    return {
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestamp_type": "LogAppendTime" if record.log_append_time else "CreateTime",
        "key": None if key is None else key.to_json(),
        "value": None if value is None else value.to_json(),
        "headers": [
            {"name": name, "value": None if (r := render(v)) is None else r.to_json()}
            for name, v in record.headers
        ],
    }


def shown(rendering: dict[str, Any] | None, fmt: str) -> str | None:
    """A JSON-API rendering (``record_json``'s key, value or header value) in ``fmt``;
    used by the templates, so the HTML shows exactly what the API returned."""
    if rendering is None:
        return None
    r = Rendered(rendering["size"], rendering["text"], rendering["json"], rendering["hex"])
    out = r.shown(fmt)
    if out is r.hex and len(out) > 3 * MAX_SHOWN_HEX_BYTES:
        return out[: 3 * MAX_SHOWN_HEX_BYTES] + " …"
    return out
