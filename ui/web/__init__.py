"""The browser dashboard (``vllm-diag dashboard``, the ``web`` extra: Dash + Plotly).

``create_app(sources, ...)`` in :mod:`vllm_diag.ui.web.app` builds the Dash app; the callbacks are
plain functions in :mod:`vllm_diag.ui.web.callbacks`, importable and testable without a server.
Nothing here registers pages or starts anything at import time.
"""
