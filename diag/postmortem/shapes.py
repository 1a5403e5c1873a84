"""Plain PyTorch shape / size / negative-index errors placed by where they happened and what the
configuration makes possible, and a size mismatch whose larger side is a CUDA-graph capture size."""

from __future__ import annotations

import re

from ..model import LogException, LogFacts
from .configuration import GEMM_FRAMES, HYBRID_FRAMES, Setup, mla_frame
from .diagnosis import Diagnosis, config_numbers, exc_evidence, fact_evidence, title_of

SHAPE = re.compile(r"size of tensor a \(\d+\) must match|expanded size of the tensor|must match the existing size|"
                   r"shape mismatch|shape '\[[^\]]*\]' is invalid for input of size|split_with_sizes expects|"
                   r"mat1 and mat2 shapes cannot|view size is not compatible|Sizes of tensors must match|"
                   r"doesn't match the broadcast shape|output with shape \[[^\]]*\] doesn't match|"
                   r"Expected size \d+ but got size \d+|inconsistent tensor size|Target sizes: \[[\d,\s]+\]|"
                   # numpy's form (the runner's CPU-side block tables): a row slice too short for the blocks
                   r"could not broadcast input array from shape|operands could not be broadcast together with shapes",
                   re.I)
KERNEL_CHECK = re.compile(r"Assertion error \(|Check failed|TORCH_CHECK|FLASHINFER_CHECK|TVM_FFI|Expected .{1,80}"
                          r"(?:to be|but got|got)\b|must be (?:<=|>=|less|at most|at least|a multiple|divisible)|"
                          r"exceeds? (?:the )?(?:maximum|limit|max)|only supports? .{0,40}(?:tokens|heads|q_len|seqlen|"
                          r"next_n|batch)", re.I)
# a statement that unpacks a tensor's shape into a fixed number of names ("B, H, D = q.shape") and got a tensor of
# another rank: a shape error like the others (the statement decides; other unpacking errors are not)
UNPACK = re.compile(r"(?:too many|not enough) values to unpack \(expected \d+", re.I)
_SHAPE_STMT = re.compile(r"\.shape\b|\.size\(\s*\)|\.unbind\(")
# a bare assert of vLLM's comparing a tensor's rows (dimension 0) with a count ("assert kv_caches.shape[0] == B",
# lightning_attn.py linear_decode_forward_triton): dimension 0 is the step's batch -- tokens on one side, requests
# or state slots on the other -- so it is a shape mismatch of the batch's rows like PyTorch's own messages
ROWS_ASSERT = re.compile(r"^\s*assert\b[^\n]{0,120}(?:\.shape\[0\]|\.size\(0\)|\blen\(\w[\w.]*\))\s*(?:==|!=)"
                         r"|^\s*assert\b[^\n]{0,120}(?:==|!=)\s*[\w.]+(?:\.shape\[0\]|\.size\(0\))")
NEG_INDEX = re.compile(r"index -\d+ is out of bounds|negative (?:state )?ind(?:ex|ices)|index -1\b", re.I)
_SPEC_FRAMES = re.compile(r"/spec_decode/|proposer|eagle|mtp|draft|speculat", re.I)
# a tensor index past the end (a row or column computed for a larger batch or width than the buffer has)
OOB_INDEX = re.compile(r"index \d+ is out of bounds for dimension \d+ with size \d+", re.I)
# the engine's plumbing: frames that pass a worker's error on (the client's re-raise of "Worker failed with error",
# the engine core's step, the executors, the API server) -- they do not place where it failed
_PLUMBING = re.compile(r"v1/engine/(?:core_client|async_llm|llm_engine|core|output_processor|exceptions)\.py|"
                       r"/entrypoints/|v1/executor/|/executor/|utils/func_utils|v1/worker/worker_base", re.I)


def shape_class(root: LogException, message: str, setup: Setup, facts: LogFacts) -> Diagnosis | None:
    """A plain PyTorch shape / size error (no failure site of vLLM's says it) classified by where it
    happened and what the configuration makes possible: inside Mamba/GDN code under speculative decoding the
    rows of spec decodes (1 + k tokens) and plain decodes (1 token) of one batch disagree (mixed batch); inside
    MLA / sparse-indexer code under speculative decoding the multi-token decode shape meets a per-request
    buffer (kernel limit). A negative index in Mamba/GDN code under speculative decoding is a row with no
    accepted draft (``num_accepted - 1``). Without frames the model's kind stands in for the place (low)."""
    neg = bool(NEG_INDEX.search(message))
    oob = not neg and bool(OOB_INDEX.search(message))
    # a kernel's own check (C++/TVM/Triton text) about sizes, not about the GPU, dtype or device
    kcheck = bool(KERNEL_CHECK.search(message)) and not re.search(
        r"arch|dtype|sm_?\d|capability|device|fp8|bf16|fp16|float|int32|int64|contiguous|stride|not supported on", message,
        re.I)
    unpack = bool(UNPACK.search(message)) and bool(root.frames) and bool(_SHAPE_STMT.search(root.frames[-1].code or ""))
    unpack = unpack or rows_assert(root)
    if not (SHAPE.search(message) or neg or oob or kcheck or unpack) or setup.spec_k == 0:
        return None
    from ..catalog.match import vllm_path

    frames = list(root.frames)
    plumbing = [i for i, f in enumerate(frames) if _PLUMBING.search(vllm_path(f.file))]
    if plumbing:  # what calls the plumbing (a user's script, the server) places nothing either
        frames = frames[plumbing[-1] + 1:]
    frames = [f for f in frames if "vllm/" in vllm_path(f.file) or vllm_path(f.file).count("/") <= 2]
    inner = frames[-6:]
    text = " ".join(f"{vllm_path(f.file)} {f.function}" for f in inner)
    hybrid_at = next((f for f in reversed(inner) if HYBRID_FRAMES.search(f"{f.file} {f.function}")), None)
    mla_at = next((f for f in reversed(inner) if mla_frame(f.file, f.function)), None)
    gemm_at = next((f for f in reversed(inner) if GEMM_FRAMES.search(f"{vllm_path(f.file)} {f.function}")), None)
    if gemm_at is not None and all(x is None or inner.index(gemm_at) > inner.index(x) for x in (hybrid_at, mla_at)) \
            or re.search(r"csrc/apis/gemm\.hpp|/gemm/|_gemm\w*\.(?:hpp|cuh|cu)\b", message):
        return None  # a GEMM (MoE experts, a quantized linear layer) failed inside: not attention or state code
    where = None
    if hybrid_at is not None and (mla_at is None or inner.index(hybrid_at) > inner.index(mla_at)):
        cat, where = "mixed_batch", hybrid_at
    elif mla_at is not None:
        cat, where = "spec_kernel_limit", mla_at
    elif re.search(r"block_table\.py \w*(?:append_row|add_row|_row)\b", text) and setup.hybrid and not setup.mla \
            and setup.prefix_cached_states:
        # the runner's block-table row of a hybrid model under speculative decoding with prefix caching: the row
        # is too short for the blocks (the Mamba groups' extra speculative blocks); the width decides
        cat = "mixed_batch"  # turned into the state-index class below (prefix caching on)
        where = next((f for f in reversed(inner) if "block_table" in f.file), None)
    elif not inner or _SPEC_FRAMES.search(text) or re.search(r"_build_attention_metadata|_prepare_inputs|build\b", text):
        if setup.hybrid and not setup.mla:
            cat = "mixed_batch"
        elif setup.mla and not setup.hybrid:
            cat = "spec_kernel_limit"
        else:
            return None
    else:
        return None
    if kcheck and not SHAPE.search(message) and not neg and cat != "spec_kernel_limit":
        return None  # a kernel check speaks for the MLA / attention kernels only
    if oob and cat == "spec_kernel_limit":
        return None  # an index past an MLA buffer: the catalog's sites and the frames decide, not this
    batch = setup.batch or {}
    kind = "an index past the end of a buffer" if oob else "a shape mismatch"
    inside = ("in the runner's block table of a hybrid (Mamba/GDN) model" if where is not None and "block_table" in where.file
              else "inside Mamba/GDN code" if where is not None else "in a step of a hybrid (Mamba/GDN) model")
    rows = rows_mismatch(root, message)
    if cat == "mixed_batch" and not neg and not rows and not (batch.get("mixed") or batch.get("ragged_drafts")) \
            and setup.prefix_cached_states:
        cat = "state_index"
        what = (f"{kind} {inside} under speculative decoding with prefix caching: the state "
                "indices run through the block table, whose width carries extra columns for the draft tokens "
                "(num_speculative_blocks) that a buffer sized without them lacks")
    elif neg and cat == "mixed_batch":
        what = (f"a negative index {inside} under speculative decoding: a row with no accepted draft "
                "indexes its state at num_accepted - 1 = -1")
    elif cat == "mixed_batch" and rows:
        what = (f"{kind} of the first dimension {inside} during a step under speculative decoding: the rows of "
                "the batch counted two ways (requests, decodes, spec decodes) -- a step mixing plain decodes (or "
                "prefill chunks classed as decodes) with spec decodes gives a builder two row counts")
    elif cat == "mixed_batch":
        what = (f"{kind} {inside} under speculative decoding: spec-decode rows (1 + k tokens) "
                "and plain decode rows (1 token) of one batch disagree about their sizes")
    elif kcheck and not SHAPE.search(message):
        what = ("a kernel's size check failing in MLA / sparse-attention code under speculative decoding: the "
                "multi-token decode (1 + k query tokens per request) is outside what the kernel was built for")
    else:
        what = ("a shape mismatch inside MLA / sparse-indexer code under speculative decoding: the multi-token decode "
                "shape (one row per draft token) meets a buffer sized per request or per block")
    place = (f"at {where.file.rsplit('/', 1)[-1]}:{where.function}" if where is not None
             else f"no frame places it; the model ({', '.join(setup.why)}) does")
    conf = "medium" if where is not None else "low"
    factor = draft_factor(facts, setup.spec_k)
    if factor is not None and not neg and not oob:
        # consistent with the mechanism, not proof of the place: the confidence stays what the frames allow
        big, small = factor
        what += (f"; the two sizes differ by the draft factor: {big} = {small} x (1 + k) with k = {setup.spec_k}, as "
                 "when one side counts tokens (1 + k per speculative decode) and the other requests")
    nums = {**config_numbers(facts, setup), **facts.numbers}
    if cat == "spec_kernel_limit" and setup.spec_k > 0:
        nums.setdefault("next_n", setup.spec_k + 1)
    batch_ev = fact_evidence(facts, "crash_batch")
    d = Diagnosis(category=cat, confidence=conf, rule="failure_class",
                  basis=f"no catalog site matches this text; {what} ({place}; {', '.join(setup.why)})",
                  title=f"{title_of(cat)} ({root.exc_type.rsplit('.', 1)[-1]} "
                        + (f"in {where.function})" if where is not None else "inferred from the configuration)"),
                  message=(message.strip().splitlines() or [""])[0][:300],
                  numbers=nums, evidence=exc_evidence(root, 3) + batch_ev + fact_evidence(facts, "spec_prose"))
    if where is None:
        d.missing.append("the traceback of this error (which vLLM function raised it)")
    return d


def rows_assert(root: LogException) -> bool:
    """A bare AssertionError whose statement (the innermost frame) compares a tensor's rows with a count."""
    return root.exc_type.rsplit(".", 1)[-1] == "AssertionError" and bool(root.frames) \
        and bool(ROWS_ASSERT.search(root.frames[-1].code or ""))


# a size mismatch on the first dimension -- the rows of the batch (requests, decodes, spec decodes, tokens)
_DIM0 = re.compile(r"at non-singleton dimension 0\b|Target sizes: \[(\d+)[,\]].*?Tensor sizes: \[(\d+)[,\]]|"
                   # numpy's np.where / arithmetic over per-request arrays of two lengths
                   r"operands could not be broadcast together with shapes \((\d+),[^)]*\)\s*\((\d+),")
# frames of a CUDA-graph capture or a dummy batch: a row mismatch there is the capture sizes' business
_CAPTURE_FRAMES = re.compile(r"^(?:capture_model|_capture_cudagraphs|_dummy_run|profile_run|_warmup\w*)$")


def rows_mismatch(root: LogException, message: str) -> bool:
    """A size mismatch of the first dimension raised in Mamba/GDN/linear-attention code during a step (not a
    capture): a builder counted the batch's rows two ways (requests vs decodes vs spec decodes) -- a mixed batch.
    (The second dimension of a state index is its width, the block table's business.)"""
    m = _DIM0.search(message)
    sides = [g for g in m.groups() if g is not None] if m is not None else []
    if m is None or (sides and sides[0] == sides[1]) or not root.frames:
        return False
    from ..catalog.match import vllm_path

    inner = [f for f in root.frames if "vllm/" in vllm_path(f.file)][-3:]
    if not inner or not HYBRID_FRAMES.search(f"{vllm_path(inner[-1].file)} {inner[-1].function}"):
        return False
    return not any(_CAPTURE_FRAMES.match(f.function) for f in root.frames)


def draft_factor(facts: LogFacts, spec_k: int) -> tuple[int, int] | None:
    """(larger, smaller) of a size mismatch whose sides differ by exactly 1 + k (k > 0 drafts): a tensor with one
    row per token of the speculative decodes met one with a row per request."""
    if spec_k <= 1:  # a factor of 2 has too many other causes (K and V, two ranks) to say anything
        return None
    n = facts.numbers
    parallel = {facts.args.get(k) for k in ("tensor_parallel_size", "decode_context_parallel_size",
                                             "prefill_context_parallel_size", "data_parallel_size",
                                             "pipeline_parallel_size")}
    if 1 + spec_k in parallel:  # the same factor is a parallel size: ambiguous
        return None
    for a_key, b_key in (("tensor_a_size", "tensor_b_size"), ("expanded_size_tensor", "existing_size")):
        a, b = n.get(a_key), n.get(b_key)
        if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and not isinstance(b, bool) \
                and min(a, b) > 0 and max(a, b) == min(a, b) * (1 + spec_k):
            return max(a, b), min(a, b)
    return None


def capture_sizes(facts: LogFacts) -> set[int]:
    sizes = facts.args.get("cudagraph_capture_sizes")
    if isinstance(sizes, list) and all(isinstance(x, int) for x in sizes):
        return set(sizes)
    # vLLM's default list (config/vllm.py _set_cudagraph_sizes): 1, 2, 4, then steps of 8 to 256, of 16 above
    return {1, 2, 4} | set(range(8, 257, 8)) | set(range(272, 1025, 16))


def padding_signature(facts: LogFacts, spec_k: int = 0) -> tuple[int, int, int, str] | None:
    """A size mismatch whose larger side is a CUDA-graph capture size above the most tokens a real step can
    carry and whose smaller side fits the real batch: the batch was padded for a captured graph. A step carries at
    most ``max_num_seqs`` decode tokens, ``max_num_seqs * (1 + k)`` under speculative decoding (the capture sizes
    are in tokens); with drafts of unknown depth the limit is unknown and this says nothing."""
    n = facts.numbers
    mx = facts.args.get("max_num_seqs")
    if not isinstance(mx, int) or spec_k < 0:
        return None
    mx = mx * (1 + spec_k)
    pairs = []
    if isinstance(n.get("split_sizes"), list) and isinstance(n.get("split_sizes_expected_sum"), int):
        pairs.append((sum(n["split_sizes"]), n["split_sizes_expected_sum"], "split sizes vs the tensor"))
        pairs += [(x, n["split_sizes_expected_sum"], "a split size vs the tensor") for x in n["split_sizes"]]
    if isinstance(n.get("tensor_a_size"), int) and isinstance(n.get("tensor_b_size"), int):
        pairs.append((n["tensor_a_size"], n["tensor_b_size"], "tensor sizes"))
    caps = capture_sizes(facts)
    for a, b, what in pairs:
        big, small = max(a, b), min(a, b)
        if big in caps and big > mx >= small and big != small:
            return big, small, mx, what
    return None


def budget_signature(facts: LogFacts, spec_k: int = 0) -> tuple[int, int, int] | None:
    """A size mismatch between a buffer of exactly ``max_num_batched_tokens`` rows and a step of more tokens that
    ``max_num_seqs`` decodes of 1 + k tokens can carry: vLLM sizes the runner's and the drafter's token buffers by the
    token budget (max_num_tokens = max_num_batched_tokens), while every speculative decode schedules 1 + k tokens --
    (tokens, budget, max_num_seqs x (1 + k))."""
    n = facts.numbers
    budget, seqs = facts.args.get("max_num_batched_tokens"), facts.args.get("max_num_seqs")
    if spec_k <= 0 or not isinstance(budget, int) or not isinstance(seqs, int) or isinstance(budget, bool):
        return None
    most = seqs * (1 + spec_k)
    if most <= budget:
        return None
    pairs = [(n.get(a), n.get(b)) for a, b in (("tensor_a_size", "tensor_b_size"), ("expanded_size_tensor", "existing_size"),
                                                ("target_rows", "source_rows"))]
    for a, b in (("value_tensor_shape", "indexing_result_shape"),):  # "value tensor of shape [N] cannot be broadcast"
        if isinstance(n.get(a), list) and isinstance(n.get(b), list) and n[a] and n[b]:
            pairs.append((n[a][0], n[b][0]))
    if n.get("index_dim", n.get("dimension")) == 0 and isinstance(n.get("index"), int) and isinstance(n.get("index_size"), int):
        pairs.append((n["index"] + 1, n["index_size"]))  # a row index past a buffer of the budget's rows
    for a, b in pairs:
        if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and not isinstance(b, bool):
            big, small = max(a, b), min(a, b)
            if small == budget and budget < big <= most:
                return big, budget, most
    return None
