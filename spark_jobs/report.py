"""A self-contained HTML report: headings, tables and PNG charts inlined as data URIs,
so the one file can be mailed or opened anywhere without its neighbours.

Charts are drawn with matplotlib's Agg backend (no display needed); tables are pandas
DataFrames rendered with their values escaped. Neither library is imported at module
level: the jobs import this module for its types, and loading pandas or matplotlib costs
more than a second, which a command that never renders a report should not pay.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is heavy: only the caller building tables pays for loading it
    import pandas as pd

#: A function that draws into the matplotlib Axes it is given.
Draw = Callable[[Any], None]


@dataclass
class Section:
    heading: str
    text: str = ""
    tables: Sequence[pd.DataFrame] = ()
    charts: Sequence[bytes] = field(default_factory=list)


def chart_png(title: str, draw: Draw, *, width: float = 8, height: float = 3.5) -> bytes:
    """A PNG of one chart: ``draw`` fills the axes, the title is set here."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(width, height), dpi=90)
    try:
        draw(ax)
        ax.set_title(title)
        fig.tight_layout()
        out = io.BytesIO()
        fig.savefig(out, format="png")
        return out.getvalue()
    finally:
        plt.close(fig)


def render(title: str, sections: Sequence[Section]) -> str:
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}"
        "img{display:block;margin:1em 0}</style>",
        f"</head><body><h1>{html.escape(title)}</h1>",
    ]
    for s in sections:
        parts.append(f"<h2>{html.escape(s.heading)}</h2>")
        if s.text:
            parts.append(f"<p>{html.escape(s.text)}</p>")
        for table in s.tables:
            parts.append(table.to_html(index=False, escape=True, na_rep="null"))
        for png in s.charts:
            data = base64.b64encode(png).decode("ascii")
            parts.append(f'<img alt="{html.escape(s.heading)}" src="data:image/png;base64,{data}">')
    parts.append("</body></html>")
    return "\n".join(parts)
