"""The KV connector a log's engine ran with, and its role (``kv_producer`` / ``kv_consumer`` / ``kv_both``), from any
of the forms vLLM and its launchers print it in: ``--kv-transfer-config '{"kv_connector": ..., "kv_role": ...}'``, a
bare JSON object, ``KVTransferConfig(kv_connector='...', kv_role='...')`` in the engine's config line or its
non-default args, YAML ``kv_connector: ...``.

The collector calls :func:`kv_transfer_facts` on each line that mentions ``kv_``; it sets ``startup['kv_connector']``
and ``startup['kv_role']``.
"""

from __future__ import annotations

import re

_CONNECTOR = re.compile(r"""\bkv_connector\\?["']?\s*[:=]\s*\\?["']?([A-Za-z][\w.]{2,60})""")
_ROLE = re.compile(r"""\bkv_role\\?["']?\s*[:=]\s*\\?["']?(kv_(?:producer|consumer|both))\b""")


def kv_transfer_facts(text: str) -> dict[str, str]:
    """``{'kv_connector': names, 'kv_role': role}`` for what this line states (either may be missing); a
    MultiConnector's inner connectors follow its own name, comma-separated."""
    out: dict[str, str] = {}
    if "kv_" not in text:
        return out
    names = [m.group(1).rsplit(".", 1)[-1] for m in _CONNECTOR.finditer(text) if m.group(1) not in ("None", "null")]
    if names:
        out["kv_connector"] = ",".join(dict.fromkeys(names))
    m = _ROLE.search(text)
    if m:
        out["kv_role"] = m.group(1)
    return out


# P/D connectors whose prefill (P) side drops the last prompt token of a request on a model with Mamba/GDN layers
# (the decoder recomputes it from h(N-1)): ``_truncate_mamba_request_for_prefill`` and its predecessors, from vLLM's
# source: NixlConnector since 0.19, MooncakeConnector since 0.25, MoRIIOConnector since 0.31.
TRUNCATING_CONNECTORS = ("NixlConnector", "MooncakeConnector", "MoRIIOConnector")


def truncates_hybrid_prompts(connector: str | None) -> str | None:
    """The connector (of a comma-separated list) that truncates hybrid prompts on its prefill side, if any."""
    for name in (connector or "").split(","):
        if any(name.strip().lower().startswith(c.lower()) for c in TRUNCATING_CONNECTORS):
            return name.strip()
    return None
