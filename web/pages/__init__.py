"""The console's pages, one module each; ``PAGES`` is the order of the navigation bar.
A new page is a module exposing ``PAGE`` and one more entry here."""

from __future__ import annotations

from web.pages import acls, cluster, groups, messages, topics, users
from web.views import Page

PAGES: tuple[Page, ...] = (
    cluster.PAGE,
    topics.PAGE,
    messages.PAGE,
    groups.PAGE,
    users.PAGE,
    acls.PAGE,
)
