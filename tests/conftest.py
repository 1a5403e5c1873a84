"""Shared pytest fixtures.

``testbed_models`` (session scope): ``{name: Path}`` of the tiny random-weight models in
``tests/testbed/models.py`` (``llama``, ``llama_draft``, ``llama_draft_big``, ``qwen3_next``,
``nemotron_h``). They are built once into ``<repo>/.testbed-models/`` (git-ignored), or
``$VLLM_DIAG_TESTBED_DIR`` when set, and rebuilt
only when that folder's stamp file is missing or stale (a file lock makes concurrent pytest
sessions wait for one build instead of racing).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def testbed_dir() -> Path:
    """Where the test-bed models live (``$VLLM_DIAG_TESTBED_DIR`` or ``<repo>/.testbed-models``)."""
    return Path(os.environ.get("VLLM_DIAG_TESTBED_DIR") or REPO_ROOT / ".testbed-models")


@pytest.fixture(scope="session")
def testbed_models() -> dict[str, Path]:
    # the models are built with transformers + torch (the `cpu` extra); without them the test skips
    pytest.importorskip("torch", reason="the test bed needs torch (pip install 'vllm-diag[cpu]')")
    pytest.importorskip("transformers", reason="the test bed needs transformers (pip install 'vllm-diag[cpu]')")
    from tests.testbed.models import ensure_models

    return ensure_models(testbed_dir())
