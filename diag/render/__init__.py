"""Thin renderers of the view models (stdlib only): ``text``, ``markdown``, ``json``. They decide how
things look, never what is shown -- numbering, cuts, order and highlights come from
:mod:`vllm_diag.views`."""
