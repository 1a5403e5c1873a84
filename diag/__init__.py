"""vllm-diag core: session model, store, rules, pre-flight, post-mortem, suggestions.

This package must stay importable on a laptop: it never imports vllm, torch,
textual or dash (tests/test_import_isolation.py checks it in a fresh process).
"""

__version__ = "0.1.0"
