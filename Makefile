# The two set-up commands of the README: `make run` and `make test`.
# Both create or refresh .venv and install the project (and its system needs) first.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
BROKERS ?= 3
DIR    ?= data
# plaintext, ssl, sasl_plaintext or sasl_ssl (make run SECURITY=sasl_ssl)
SECURITY ?= plaintext

.PHONY: run test lint unit integration bench venv system-deps js-deps clean compose-wheels compose-test

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# kcat is one of the real clients the integration tests drive; strace proves fetches are
# zero copy; Java runs ZooKeeper; chromium renders the Spark jobs' HTML reports and, with
# chromium-driver, runs the web console's browser tests.
system-deps:
	@for tool in kcat strace chromium chromedriver; do command -v $$tool >/dev/null 2>&1 || { \
	  pkg=$$tool; [ $$tool = chromedriver ] && pkg=chromium-driver; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkg >/dev/null; \
	  else echo "$$tool is missing: sudo apt-get install $$pkg"; fi; }; done
	@command -v java >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null; \
	  else echo "Java 17+ is missing: sudo apt-get install openjdk-17-jre-headless"; fi; }

# KafkaJS, the Node.js client the integration tests also drive (tests/js): installed from
# tests/js/package-lock.json by `npm ci` into tests/js/node_modules, once per change of
# the lock file (the stamp is inside node_modules, which `npm ci` recreates). Node and npm
# come from the system's packages when missing and run as root.
JS_DIR   := tests/js
JS_STAMP := $(JS_DIR)/node_modules/.installed

js-deps: $(JS_STAMP)

$(JS_STAMP): $(JS_DIR)/package.json $(JS_DIR)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
	  else echo "Node.js and npm are missing: sudo apt-get install nodejs npm"; exit 1; fi; }
	cd $(JS_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $(JS_STAMP)

run: venv system-deps
	$(BIN)/minikafka cluster up --brokers $(BROKERS) --dir $(DIR) --security $(SECURITY)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy .

# Any non-zero pytest exit fails the target, 5 (nothing collected) included: a suite
# that collects nothing has tested nothing.
test: venv system-deps js-deps lint
	$(BIN)/python -m pytest -q

# Everything that starts no processes: the `integration` marker (set on all of
# tests/integration by its conftest) is what separates the two.
unit: venv
	$(BIN)/python -m pytest -q -m 'not integration'

integration: venv system-deps js-deps
	$(BIN)/python -m pytest -q -m integration

bench: venv
	@for f in tests/bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

# The wheels the Dockerfile installs (docker/wheels), built here: `docker-compose build`
# then needs no package index from inside a container (docs/operations.md).
compose-wheels: venv
	bash docker/wheels.sh $(BIN)/python

# The compose stack for real: build, up, kcat through 9092-9094, Prometheus targets and
# rules (promtool), every dashboard panel's expression, a broker killed, down -v.
# Installs Docker and the other tools it needs when run as root (tests/compose/run.sh).
compose-test: venv
	PYTHON=$(CURDIR)/$(BIN)/python bash tests/compose/run.sh

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache docker/wheels $(JS_DIR)/node_modules
