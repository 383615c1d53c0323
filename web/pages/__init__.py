"""The console's pages, one module each; ``PAGES`` is the order of the navigation bar.
A new page (users, ACLs) is a module exposing ``PAGE`` and one more entry here."""

from __future__ import annotations

from web.pages import cluster, groups, messages, topics
from web.views import Page

PAGES: tuple[Page, ...] = (cluster.PAGE, topics.PAGE, messages.PAGE, groups.PAGE)
