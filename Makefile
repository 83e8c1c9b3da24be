# mqusers: the two commands are `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BROKERS := activemq activemq-persistent activemq-stress activemq6 activemq6-persistent artemis rabbitmq
DEMO_SECONDS ?= 30

# $(call with_services,NAMES,COMMAND): start NAMES, run COMMAND, then stop only the services this call
# started (`services start --started`), never a broker someone else runs; also when a start failed.
define with_services
	@started=$$(mktemp); \
	$(PY) -m services start --started $$started $(1) && $(2); status=$$?; \
	[ ! -s $$started ] || $(PY) -m services stop $$(cat $$started); rm -f $$started; exit $$status
endef

.PHONY: install demo test unit lint bench bench-peers bench-listener bench-memory bench-scale bench-manydest bench-churn bench-websocket bench-master bench-findmax soak dashboards docs services-up services-down clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,influx,prometheus]'
	touch $@

install: $(VENV)/.installed

# A ~30 s headless pub/sub run on a local ActiveMQ: 3 producers, 3 subscribers, 1 KB messages.
# The first 5 s (a freshly started broker's JIT warming up) are left out of the exact summary;
# the HTML report goes to reports/demo.html (git-ignored).
# The broker's port follows MQUSERS_PORT_OFFSET, as the services scripts do.
demo: install
	@mkdir -p reports
	$(call with_services,activemq,$(VENV)/bin/locust -f locustfiles/pubsub.py \
		--host stomp://127.0.0.1:$$($(PY) -m services port activemq stomp) --headless \
		-u 6 -r 6 -t $(DEMO_SECONDS)s --mq-consumers 3 --mq-rate 1000 --mq-warmup 5 --only-summary \
		--mq-report-html reports/demo.html)

# Everything CI runs, in timed phases (tools/testrun.py; ARCHITECTURE.md, "How to test"): the services installed
# and started in the background while lint and the unit tests run, then the integration tests on xdist workers,
# then those marked `alone`, one at a time. Ends with each phase's seconds and the 30 slowest tests.
test: install
	$(PY) -m tools.testrun --brokers "$(BROKERS)"

# The inner loop: no brokers, under a minute.
unit: install
	$(PY) -m tools.testrun unit

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The benchmarks (benchmarks/README.md) run on the local ActiveMQ and, like demo, stop it afterwards
# only if they started it. BENCH_ARGS is appended (the last of a repeated option wins), e.g. a short
# run: make bench BENCH_ARGS="--messages 20000 --repeat 1".
BENCH_HOST = stomp://127.0.0.1:$$($(PY) -m services port activemq stomp)
BENCH_ARGS ?=
# The Go toolchain: on PATH, or where this machine installs it.
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)

# (f) of make bench, the compiled reference (benchmarks/goref/: go-stomp, modules from the Go module proxy).
# A failed build is said in one line and not fatal: the benchmark then runs without (f) (benchmarks/goref.py).
benchmarks/goref/goref: benchmarks/goref/*.go benchmarks/goref/go.mod benchmarks/goref/go.sum
	cd benchmarks/goref && $(GO) build -o goref . || echo "benchmarks/goref/goref not built: make bench runs without (f)"

bench: install benchmarks/goref/goref
	$(call with_services,activemq,$(PY) -m benchmarks.core --host $(BENCH_HOST) --messages 100000 --size 1KB $(BENCH_ARGS))

# mqusers beside `artemis perf client` (on Artemis) and Classic's producer/consumer (on Classic 6),
# same queue load: benchmarks/peers.py. The first run downloads the brokers and Classic's tools.
bench-peers: install
	$(call with_services,artemis activemq6,$(PY) -m benchmarks.peers $(BENCH_ARGS))

# STOMP over WebSocket against plain STOMP, both on the local RabbitMQ (its web_stomp plugin).
bench-websocket: install
	$(call with_services,rabbitmq,$(PY) -m benchmarks.websocket \
		--tcp stomp://127.0.0.1:$$($(PY) -m services port rabbitmq stomp) \
		--ws ws://127.0.0.1:$$($(PY) -m services port rabbitmq web_stomp)/ws $(BENCH_ARGS))

# The master's cost at 10..200 workers, by simulation: no broker (benchmarks/master.py).
bench-master: install
	$(PY) -m benchmarks.master $(BENCH_ARGS)

# find-max's answer against plain runs of the same locustfile (issue 36): BENCH_ARGS="--rounds 3".
bench-findmax: install
	$(call with_services,activemq,$(PY) -m benchmarks.findmax_agreement --host $(BENCH_HOST) $(BENCH_ARGS))

bench-listener: install
	$(call with_services,activemq,$(PY) -m benchmarks.listener --host $(BENCH_HOST) $(BENCH_ARGS))

bench-memory: install
	$(call with_services,activemq,$(PY) -m benchmarks.memory --host $(BENCH_HOST) $(BENCH_ARGS))

bench-scale: install
	$(call with_services,activemq,$(PY) -m benchmarks.scale --host $(BENCH_HOST) $(BENCH_ARGS))

bench-manydest: install
	$(call with_services,activemq,$(PY) -m benchmarks.manydest --host $(BENCH_HOST) $(BENCH_ARGS))

bench-churn: install
	$(call with_services,activemq,$(PY) -m benchmarks.churn --host $(BENCH_HOST) $(BENCH_ARGS))

# 30 minutes (not in CI): RSS, received rate and p99 of one long run; a short check:
# make soak BENCH_ARGS="--minutes 3 --window 1 --warmup 1".
soak: install
	$(call with_services,activemq,$(PY) -m benchmarks.soak --host $(BENCH_HOST) $(BENCH_ARGS))

dashboards: install
	$(PY) -m tools.dashboards

# docs/options.md from the option declarations (a unit test fails when the committed page is stale).
docs: install
	$(PY) -m tools.optionsdoc

services-up: install
	$(PY) -m services start $(BROKERS)

services-down:
	$(PY) -m services stop all

clean: services-down
	rm -rf $(VENV) .services
