"""Settings an expert quotes from a failure report, in whatever notation the report gives them: YAML / JSON keys of
a config or values file, a speculative config spread over a nested block, shell variables of a pasted script,
reporters' short flags (``--tp 2``) and the reporter's words (``MTP, k=3``). Logs written here, in vLLM's format,
with models and numbers of their own."""

from __future__ import annotations

from vllm_diag.postmortem import facts_from_text

ERR = "(EngineCore_DP0 pid=41) ERROR 03-02 10:11:12 [core.py:844] RuntimeError: CUDA error: an illegal memory access was encountered\n"


def _facts(text: str):
    return facts_from_text(text + ERR)


def test_json_object_with_quoted_keys_and_a_nested_speculative_config():
    f = _facts('engine.json:\n{"model": "org/Some-Hybrid-30B", "tensor_parallel_size": 8, "max_num_seqs": 48, '
               '"speculative_config": {"method": "mtp", "num_speculative_tokens": 2}}\n')
    assert f.args["tensor_parallel_size"] == 8
    assert f.args["max_num_seqs"] == 48
    assert f.args["num_speculative_tokens"] == 2
    assert f.numbers["num_speculative_tokens"] == 2


def test_yaml_values_with_an_indented_speculative_block():
    f = _facts("values.yaml:\n"
               "engine:\n"
               "  tensor-parallel-size: 4\n"
               "  max_model_len: \"65536\"\n"
               "  speculative_config:\n"
               "    method: eagle3\n"
               "    model: someone/eagle3-draft-8b\n"
               "    num_speculative_tokens: 5\n"
               "  max_num_batched_tokens: 4096\n")
    assert f.args["tensor_parallel_size"] == 4
    assert f.args["max_model_len"] == 65536
    assert f.args["num_speculative_tokens"] == 5
    assert f.args["speculative_method"] == "eagle3"
    assert f.args["max_num_batched_tokens"] == 4096
    # the block's model is the draft, not the served model
    assert f.model != "someone/eagle3-draft-8b"


def test_json_speculative_block_over_several_lines():
    f = _facts('{\n  "model": "org/Other-80B",\n  "speculative_config": {\n    "method": "mtp",\n'
               '    "num_speculative_tokens": 3\n  },\n  "block_size": 64\n}\n')
    assert f.args["num_speculative_tokens"] == 3
    assert f.args["block_size"] == 64


def test_code_assignments_in_an_indented_line_are_not_settings():
    f = _facts('Traceback (most recent call last):\n  File "/x/vllm/v1/worker/gpu_model_runner.py", line 10, in f\n'
               "    max_num_seqs = 7\n")
    assert "max_num_seqs" not in f.args


def test_shell_script_variables_feed_the_command():
    f = _facts("#!/bin/bash\nMODEL=org/Hybrid-Next-80B\nTP=4\nSPEC='{\"method\":\"mtp\",\"num_speculative_tokens\":3}'\n"
               "vllm serve $MODEL \\\n  --tensor-parallel-size $TP \\\n  --speculative-config \"$SPEC\" \\\n"
               "  --max-num-seqs ${MAX_SEQS:-96}\n\n")
    assert f.args["tensor_parallel_size"] == 4
    assert f.args["num_speculative_tokens"] == 3
    assert f.args["max_num_seqs"] == 96


def test_bash_array_flags_with_a_variable_and_a_commented_out_flag():
    f = _facts("TP=2\nCMD+=(\n    $MODEL_DIR\n    -tp $TP\n    # --enforce-eager\n    --max-num-seqs 256\n)\n")
    assert f.args["tensor_parallel_size"] == 2
    assert f.args.get("enforce_eager") is not True  # commented out


def test_double_dash_short_parallel_sizes():
    f = _facts('helm values:\n  extraArgs:\n    - "--tp"\n    - "2"\n    - "--max-model-len=32768"\n')
    assert f.args["tensor_parallel_size"] == 2
    f = _facts("I launch with --tp 8 --pp 2 and it dies.\n")
    assert f.args["tensor_parallel_size"] == 8
    assert f.args["pipeline_parallel_size"] == 2


def test_spec_depth_from_the_reporters_words_is_a_number():
    f = _facts("Setup: Some-Hybrid-122B FP8, TP=2, MTP (k=3), max-model-len 131072\n")
    assert f.numbers["num_speculative_tokens"] == 3
    assert f.args["max_model_len"] == 131072


def test_request_parameters_of_the_failing_request():
    f = _facts("curl localhost:8000/v1/chat/completions -d '{\"model\": \"m\", \"max_tokens\": 1, \"temperature\": 0.7}'\n"
               "sp = SamplingParams(max_tokens=32, top_k=40)\n")
    assert f.startup["request_params"] == {"max_tokens": 1, "temperature": 0.7, "top_k": 40}


def test_compose_command_list_that_opens_with_the_model():
    f = _facts('  vllm:\n    image: vllm/vllm-openai:v0.30.0\n'
               '    command: ["org/Hybrid-35B-FP8", "--tensor-parallel-size", "2", "--enable-prefix-caching",\n'
               '              "--speculative-config", "{\\"method\\":\\"mtp\\",\\"num_speculative_tokens\\":2}",\n'
               '              "--max-model-len", "32768", "--max-num-seqs", "24"]\n')
    assert f.args["model"] == "org/Hybrid-35B-FP8"
    assert f.args["tensor_parallel_size"] == 2 and f.args["max_num_seqs"] == 24
    assert f.args["num_speculative_tokens"] == 2 and f.args["max_model_len"] == 32768


def test_values_a_reporter_printed():
    f = _facts("I added a print in the builder:\n```\nnum_prefills=1 num_decodes=0 num_spec_decodes=5 batch_size=6\n"
               "state_indices[:, 0] = tensor([12, 40, 7, -1], device='cuda:0', dtype=torch.int32)\n"
               "  qo_indptr = [0, 3, 6, 9]  max_qo_len=3\n```\n"
               'draft config.json: "num_key_value_heads": 4, "head_dim": 128\n')
    p = f.startup["printed_values"]
    assert (p["num_prefills"], p["num_decodes"], p["num_spec_decodes"], p["batch_size"]) == (1, 0, 5, 6)
    assert p["state_indices"] == [12, 40, 7, -1] and p["qo_indptr"] == [0, 3, 6, 9] and p["max_qo_len"] == 3
    assert p["num_key_value_heads"] == 4 and p["head_dim"] == 128


def test_underscored_flags_camel_case_values_keys_and_inline_code():
    f = _facts("I pass --max_num_seqs=48 and --max_model_len=12288 to the server.\n")
    assert f.args["max_num_seqs"] == 48 and f.args["max_model_len"] == 12288
    f = _facts("vllmConfig:\n  tensorParallelSize: 4\n  maxModelLen: 24576\n  maxNumSeqs: 40\n")
    assert (f.args["tensor_parallel_size"], f.args["max_model_len"], f.args["max_num_seqs"]) == (4, 24576, 40)
    f = _facts("Launched with `vllm serve org/M --tp=2 --max-model-len=24k` on two GPUs\n")
    assert f.args["max_model_len"] == 24000 and f.args["tensor_parallel_size"] == 2


def test_rl_framework_overrides_name_the_engine_arguments_they_pass_on():
    # a Hydra / OmegaConf launch script: the last key of each dotted path is the engine argument
    f = _facts("python3 -m trainer.main \\\n"
               "    rollout.engine.gpu_memory_utilization=0.45 \\\n"
               "    rollout.engine.tensor_model_parallel_size=4 \\\n"
               "    +rollout.engine.kwargs.max_num_seqs=96 \\\n"
               "    trainer.total_epochs=3\n")
    assert f.args["gpu_memory_utilization"] == 0.45 and f.args["tensor_parallel_size"] == 4
    assert f.args["max_num_seqs"] == 96 and "total_epochs" not in f.args
    # code assigning an attribute is not an override
    assert "max_model_len" not in _facts("    self.engine.max_model_len = 4096\n").args


def test_parallel_sizes_in_words():
    f = _facts("We run tensor parallel 8, 2-way pipeline parallelism and a data-parallel size of 2.\n")
    assert f.args["tensor_parallel_size"] == 8 and f.args["pipeline_parallel_size"] == 2
    assert f.args["data_parallel_size"] == 2
    f = _facts("Tensor parallelism helps here, see the docs.\n")  # no number: nothing
    assert "tensor_parallel_size" not in f.args


def test_spec_depth_in_more_of_the_reporters_phrasings():
    assert _facts("Spec decode with 3 draft tokens crashes.\n").numbers["num_speculative_tokens"] == 3
    assert _facts("speculative tokens: 5\n").numbers["num_speculative_tokens"] == 5
    # the method in one sentence, the depth in a later one
    assert _facts("We enable MTP on this model.\nWith k=4 it crashes, k=1 is fine.\n").numbers["num_speculative_tokens"] == 4


def test_of_several_depths_the_one_said_to_fail():
    assert _facts("With MTP k=2 works, k=3 dies after a minute.\n").numbers["num_speculative_tokens"] == 3


def test_model_shape_in_words_and_a_value_printed_again():
    p = _facts("Draft is our own EAGLE3 head (4 KV heads, head_dim 64, 2 layers).\n").startup["printed_values"]
    assert p["num_kv_heads"] == 4 and p["head_dim"] == 64 and p["num_layers"] == 2
    p = _facts("specs before the assert:\n  layers.3.attn  FullAttentionSpec block_size=96 page_size_bytes=98304\n"
               "  layers.0.mixer MambaSpec page_size_bytes=98304\n"
               "  layers.40.attn FullAttentionSpec block_size=96 page_size_bytes=196608   <- draft\n").startup["printed_values"]
    assert p["page_size_bytes"] == 98304 and p["page_size_bytes_2"] == 196608 and "page_size_bytes_3" not in p


def test_gpus_requested_by_the_deployment_and_the_load_in_words():
    s = _facts("    resources:\n      limits:\n        nvidia.com/gpu: 4\n").startup
    assert s["gpus_requested"] == 4
    assert _facts("CUDA_VISIBLE_DEVICES=0,1,2 vllm serve org/M -tp 3\n").startup["gpus_requested"] == 3
    assert _facts("docker run --gpus 2 vllm/vllm-openai:v0.30.0 --model org/M\n").startup["gpus_requested"] == 2
    assert _facts("It only dies with 64 concurrent requests.\n").startup["concurrent_requests"] == 64
    assert _facts("fine at concurrency 8, dies at concurrency of 32\n").startup["concurrent_requests"] == 32


def test_engine_config_line_with_the_reporters_elisions():
    # reporters cut vLLM's config line with "..." between items (and inside the compilation config's dict)
    f = _facts("(EngineCore_DP0 pid=41) INFO 03-02 10:10:01 [core.py:93] Initializing a V1 LLM engine (v0.14.1) with "
               "config: model='org/Some-Hybrid-12B', speculative_config=SpeculativeConfig(method='ngram', model=None, "
               "num_spec_tokens=3), ..., tensor_parallel_size=2, \u2026, compilation_config={\"level\":3, ..., "
               "\"max_cudagraph_capture_size\":384, ...}\n")
    assert f.args["tensor_parallel_size"] == 2 and f.args["num_speculative_tokens"] == 3
    assert f.args["max_cudagraph_capture_size"] == 384


def test_elisions_alone_are_no_settings():
    from vllm_diag.postmortem.pylit import parse_kwargs

    assert parse_kwargs("..., ...") == {} and parse_kwargs("a=1, ...") == {"a": 1}
    assert parse_kwargs("a={'b': 2, ..., 'c': 3}") == {"a": {"b": 2, "c": 3}}


def test_a_pods_restarts_the_drivers_cuda_version_and_the_connectors_hit_rate():
    s = _facts("$ kubectl get pods\nvllm-7b9d5c6f48-2mzqx   0/1     CrashLoopBackOff   7 (31s ago)  12m\n").startup
    assert s["restart_count"] == 7
    assert _facts("    Restart Count:  3\n").startup["restart_count"] == 3
    s = _facts("UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 12040).\n"
               "(APIServer pid=1) INFO 09-14 08:41:37 [loggers.py:310] Engine 000: Running: 3 reqs, Waiting: 0 reqs, "
               "GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%, External prefix cache hit rate: 87.5%\n").startup
    assert s["driver_cuda_version_found"] == 12040 and s["external_prefix_cache_hit_rate"] == 87.5
    assert s["prefix_cache_hit_rate"] == 0.0


def test_a_negated_spec_method_in_prose_is_no_speculative_decoding():
    assert "spec_prose" not in _facts("Granite 4.0-H on one H200 (no spec decode, default cudagraph settings).\n").startup
    assert "spec_prose" not in _facts("We run it without MTP for now.\n").startup
    assert _facts("We run it with MTP k=2.\n").startup["spec_prose"]["method"] == "mtp"


def test_a_list_printed_in_prose_with_words_before_its_value():
    p = _facts("I dumped the metadata: state_batch_indices for the decode part = [412, 97, 98, -1, 1031, ...], "
               "num_decodes=38.\n").startup["printed_values"]
    assert p["state_batch_indices"] == [412, 97, 98, -1, 1031] and p["num_decodes"] == 38


def test_a_bare_setting_named_as_what_avoids_the_crash_is_not_the_set_up():
    f = _facts("nano-9b-v2 + ngram k=4 crashes under load.\nwith num_speculative_tokens=1 it never happened in 2 days\n")
    assert f.args.get("num_speculative_tokens") != 1
    assert f.startup["spec_prose"] == {"method": "ngram", "k": 4}
