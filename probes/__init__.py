"""vLLM probes: a ``vllm.general_plugins`` plugin that records a live engine into a vllm-diag DB.

Inert unless ``VLLM_DIAG_DB`` is set. Layout:

* ``plugin``   -- ``register()`` (the entry point), process/role detection, session id sharing,
  redaction of secrets in captured argv/environment;
* ``adapters`` -- where each hook point lives in each vLLM version (0.17 - 0.33, model runner V1/V2);
* ``hooks``    -- what the hooks do (read vLLM objects, annotate exceptions with ``add_note``);
* ``extract``  -- vLLM objects -> ``vllm_diag.model`` rows, by duck typing;
* ``recorder`` -- the bounded in-memory buffer and background writer thread;
* ``gpu``      -- NVML facts with an ``NA`` sentinel instead of exceptions.

Nothing in this package imports vllm or torch at import time.
"""
