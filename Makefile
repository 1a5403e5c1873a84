# vllm-diag: `make demo` runs the tool on a bundled default; `make test` runs the test suite.
# Both create/refresh .venv first (scripts/setup-env.sh; a no-op when nothing changed).
#   make test PYTEST_ARGS='-m "not engine"'     # skip the real-engine tests
#   make test PYTEST_ARGS='tests/test_store.py -x'

SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
PYTEST_ARGS ?=
export VENV PYTHON

.PHONY: all setup test demo gpu-check clean-venv

all: test

setup:
	@scripts/setup-env.sh

test: setup
	@scripts/run-tests.sh $(PYTEST_ARGS)

demo: setup
	@scripts/demo.sh

# On a machine with a CUDA vLLM installed next to vllm-diag (not CI): the probes on real engines with
# CUDA graphs, every recorded table compared with vLLM's own objects. GPU_CHECK_ARGS='--tp 2 --repeat 3'
GPU_CHECK_ARGS ?=
gpu-check:
	@scripts/gpu-check $(GPU_CHECK_ARGS)

clean-venv:
	rm -rf $(VENV)
