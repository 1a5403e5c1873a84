"""Data shipped with vllm-diag, read with ``importlib.resources`` (works from a wheel or a zip).

``vllm_flags.json``: vLLM's serve flags (dumped from its own parser) for the pure command parser.
``configs/``: the bundled demo ``config.json`` files that ``check`` falls back to when a model is
neither a local folder nor in the Hugging Face cache (listed in ``configs/index.json``).
"""
