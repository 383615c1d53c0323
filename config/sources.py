"""Where a broker's static settings come from besides its file: the environment and
``--override``. Both are merged over the file into the static layer (file, then
environment, then ``--override``), the layer ``config.effective`` places below the
dynamic ones.

``KAFKA_``-prefixed environment variables follow Confluent's convention: the rest of the
name is lower-cased and ``___`` becomes ``-``, ``__`` becomes ``_``, ``_`` becomes ``.``
(``KAFKA_LOG_DIRS`` -> ``log.dirs``); a few names the JVM launch scripts use are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from config.errors import ConfigError

ENV_PREFIX = "KAFKA_"

#: KAFKA_ variables that configure the launcher, not the broker (Confluent's image skips them)
ENV_EXCLUDED = frozenset(
    {
        "KAFKA_VERSION",
        "KAFKA_HEAP_OPTS",
        "KAFKA_LOG4J_OPTS",
        "KAFKA_OPTS",
        "KAFKA_JMX_OPTS",
        "KAFKA_JVM_PERFORMANCE_OPTS",
        "KAFKA_GC_LOG_OPTS",
        "KAFKA_LOG4J_ROOT_LOGLEVEL",
        "KAFKA_LOG4J_LOGGERS",
        "KAFKA_TOOLS_LOG4J_LOGLEVEL",
        "KAFKA_JMX_HOSTNAME",
        "KAFKA_JMX_PORT",
        "KAFKA_DEBUG",
        "KAFKA_HOME",
    }
)


def env_key(var: str) -> str | None:
    """``KAFKA_LOG_DIRS`` -> ``log.dirs``; None for variables that are not broker keys."""
    if not var.startswith(ENV_PREFIX) or var in ENV_EXCLUDED or len(var) == len(ENV_PREFIX):
        return None
    rest = var[len(ENV_PREFIX) :].lower()
    return re.sub(r"_{1,3}", lambda m: {"_": ".", "__": "_", "___": "-"}[m.group()], rest)


def properties_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    props = {}
    for var, value in environ.items():
        key = env_key(var)
        if key is not None:
            props[key] = value
    return props


def parse_overrides(overrides: Iterable[str]) -> dict[str, str]:
    """``["log.dirs=/x", ...]`` -> ``{"log.dirs": "/x"}``; the value may contain ``=``."""
    props = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(item, "an override must read key=value")
        props[key.strip()] = value
    return props
