# vllm-diag: `make demo` runs the tool on a bundled default; `make test` runs the test suite.
# Both create/refresh .venv first (scripts/setup-env.sh; a no-op when nothing changed).
#   make test PYTEST_ARGS='-m "not engine"'     # skip the real-engine tests
#   make test PYTEST_ARGS='tests/test_store.py -x'

SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
PYTEST_ARGS ?=
export VENV PYTHON

.PHONY: all setup test demo clean-venv

all: test

setup:
	@scripts/setup-env.sh

test: setup
	@scripts/run-tests.sh $(PYTEST_ARGS)

demo: setup
	@scripts/demo.sh

clean-venv:
	rm -rf $(VENV)
