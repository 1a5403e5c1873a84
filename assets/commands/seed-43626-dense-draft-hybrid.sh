# vLLM issue #43626 (vLLM 0.20.2, RTX PRO 6000): a dense draft model next to the hybrid
# Qwen3-Coder-Next (Gated DeltaNet + attention) dies after weight loading on a bare AssertionError.
vllm serve Qwen/Qwen3-Coder-Next-80B-A3B-NVFP4 \
  --kv-cache-dtype fp8_e4m3 \
  --speculative-config '{"model": "LocoOperator/LocoOperator-4B", "num_speculative_tokens": 3}'
