# One image for every minikafka container: a broker (`minikafka server`, the default
# command, configured by KAFKA_* environment variables) or the embedded ZooKeeper
# (`minikafka zookeeper --host 0.0.0.0`).
#
# The project and its dependencies are installed from wheels built on the host, so the
# build needs no package index from inside a container:
#
#     make compose-wheels        # pip wheel into docker/wheels/{deps,project}
#     docker-compose build
#
# BASE_IMAGE is any Debian bookworm image: the official Python image by default; the
# compose test passes a Debian base it made locally with debootstrap (Python then comes
# from Debian, 3.11 as well, so the same cp311 wheels install on both).
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

# Java 17 runs ZooKeeper (its jars ship in the pyspark wheel); Python only when the base
# has none. One layer, cached until this line changes.
RUN set -eux; \
    export DEBIAN_FRONTEND=noninteractive; \
    pkgs="openjdk-17-jre-headless"; \
    command -v python3 >/dev/null || pkgs="$pkgs python3 python3-venv"; \
    apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends $pkgs >/dev/null; \
    rm -rf /var/lib/apt/lists/*; \
    python3 -m venv /opt/minikafka; \
    useradd --system --uid 1000 --user-group --home-dir /var/lib/minikafka --create-home \
        --shell /usr/sbin/nologin minikafka; \
    mkdir -p /var/lib/minikafka/logs /var/lib/minikafka/zookeeper; \
    chown -R minikafka:minikafka /var/lib/minikafka

# Dependencies first: this layer is rebuilt only when their wheels change, not the code.
COPY docker/wheels/deps/ /tmp/wheels/
RUN /opt/minikafka/bin/pip install --quiet --no-index --no-cache-dir /tmp/wheels/*.whl \
    && rm -rf /tmp/wheels
COPY docker/wheels/project/ /tmp/wheels/
RUN /opt/minikafka/bin/pip install --quiet --no-index --no-deps --no-cache-dir /tmp/wheels/*.whl \
    && rm -rf /tmp/wheels

COPY config/server.properties /etc/minikafka/server.properties
COPY docker/healthcheck.py /usr/local/bin/minikafka-healthcheck

ENV PATH=/opt/minikafka/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    KAFKA_LOG_DIRS=/var/lib/minikafka/logs \
    KAFKA_METRICS_HOST=0.0.0.0

USER minikafka
WORKDIR /var/lib/minikafka
VOLUME /var/lib/minikafka
# client listener, Prometheus /metrics, ZooKeeper (when run as one)
EXPOSE 9092 9600 2181

# `minikafka server` shuts down gracefully on SIGTERM (controlled shutdown, logs flushed,
# clean-shutdown marker); give it time (`stop_grace_period` in docker-compose.yml).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=5s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python3", "/usr/local/bin/minikafka-healthcheck", "broker", "127.0.0.1:9092"]
CMD ["minikafka", "server", "/etc/minikafka/server.properties"]
