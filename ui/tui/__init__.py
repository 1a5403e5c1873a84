"""``vllm-diag tui``: the terminal UI (Textual), live and post-mortem.

Needs the ``tui`` extra (``pip install 'vllm-diag[tui]'``). Everything drawn here comes from the
view models of ``vllm_diag.views``; this package decides only how to draw them.
"""
