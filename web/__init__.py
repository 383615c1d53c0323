"""The web console (``minikafka console``): the cluster, topics, messages, consumer
groups, users' SCRAM credentials and ACLs in a browser, and the same data as JSON under ``/api/``.

It speaks only the Kafka protocol, through the project's client, and scrapes the brokers'
Prometheus endpoints for rates, so it works against any Kafka-compatible cluster. Modules,
one concept each:

- :mod:`.app`       ``create_app``: the Starlette application over an injected client
- :mod:`.context`   what every view reaches: the client, the settings, the clock, metrics
- :mod:`.views`     a view declared once, served as an HTML page and as JSON; parameters
- :mod:`.safety`    read-only mode, CSRF tokens, HTTP basic authentication
- :mod:`.errors`    exceptions turned into what a person can act on (never a traceback)
- :mod:`.decoding`  record keys, values and headers as text, pretty JSON and hex (pure)
- :mod:`.reading`   a page of records (ListOffsets + one Fetch) and the bounded search
- :mod:`.reset`     where an offset reset moves a group's offsets (pure)
- :mod:`.lag_history` each group's lag over the last minutes, as the console saw it
- :mod:`.metrics`   scraping the brokers' /metrics into rates over the last minutes
- :mod:`.pages`     one module per page (cluster, topics, messages, groups, users,
                    acls); adding a page is adding a module and naming it in
                    ``pages.PAGES``

Server-rendered Jinja2 templates (``web/templates``, autoescaped) and no JavaScript
build: a page refreshes itself with a meta tag when asked to.
"""
