"""Numbers out of error text: the values a known message carries (:func:`message_numbers`), values given
in words (:func:`phrase_numbers`), the lines of the failing frames (:func:`frame_line_numbers`), and the
``name=value`` pairs and kernel-launch details of error lines stated outside a traceback
(:func:`error_line_numbers`). The names are listed in :mod:`vllm_diag.postmortem`'s docstring."""

from __future__ import annotations

import re
from typing import Any

from ..model import LogFacts
from .traceback import FAULT_NAME, ORPHAN_TYPE, raised_in_teardown

_FLOAT = r"(\d+(?:\.\d+)?)"
_INT = r"(\d[\d,]*)"

# ------------------------------------------------------------------------------------------------
# numbers inside error messages
# ------------------------------------------------------------------------------------------------

_JSON_POSITION = re.compile(r"\bline (\d+) column (\d+) \(char (\d+)\)")
_NUM_PATTERNS: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    # Python's json module: "Expecting value: line 1 column 2 (char 1)" -- where in the text the parse failed
    (_JSON_POSITION, ("json_line", "json_column", "json_char")),
    # mamba_attn.py's block-table update: "Expected" is the metadata's requests (num_prefills + num_decodes), "got"
    # the rows of its state-index tensor
    (re.compile(r"Mismatch in number of requests when updating block table\.?\s*Expected (\d+), got (\d+)"),
     ("num_reqs", "state_indices_rows")),
    (re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton dimension (\d+)"),
     ("tensor_a_size", "tensor_b_size", "mismatch_dim")),
    (re.compile(r"num_decodes:\s*(\d+),\s*num_spec_decodes:\s*(\d+)"), ("num_decodes", "num_spec_decodes")),
    (re.compile(r"\[Errno (\d+)\]"), ("errno",)),
    # the socket a bind failed on: "error while attempting to bind on address ('0.0.0.0', 8000)"
    (re.compile(r"bind on address \(['\"][^'\"]*['\"], (\d+)\)"), ("port",)),
    # the CUDA runtime's numbered error: "Error 803: system has unsupported display driver / cuda driver combination"
    (re.compile(r"\bError (\d{1,4}): [a-z]"), ("cuda_error_code",)),
    (re.compile(r"split_sizes to sum exactly to (\d+).*?split_sizes=\[([\d,\s]*)\]", re.S), ("split_sizes_expected_sum", "split_sizes")),
    (re.compile(r"batch size \((\d+)\) <= cudagraph capture sizes \((\d+)\), and number of tokens \((\d+)\)"),
     ("capture_num_reqs", "capture_size", "capture_num_tokens")),
    (re.compile(r"index (-?\d+) is out of bounds for dimension (\d+) with size (\d+)"), ("index", "index_dim", "index_size")),
    # each side on its own: an excerpt may cut the message after either
    (re.compile(r"max seq len \((\d+)\)"), ("max_model_len",)),
    (re.compile(r"\(?" + _FLOAT + r" ?GiB KV cache is needed"), ("kv_cache_needed_gib",)),
    (re.compile(r"available KV cache memory \(" + _FLOAT + r" ?GiB\)"), ("kv_cache_available_gib",)),
    (re.compile(r"estimated maximum model length is (\d+)"), ("estimated_max_model_len",)),
    # the API server's request validation: "This model's maximum context length is 65536 tokens. However, your
    # prompt contains at least 65537 input tokens" (older: "However, you requested 70000 tokens")
    (re.compile(r"maximum context length is (\d+) tokens\. However, (?:your prompt contains (?:at least )?|you requested )"
                r"(\d+)"), ("max_model_len", "prompt_tokens")),
    (re.compile(r"Tried to allocate " + _FLOAT + r" ?([GMK])iB"), ("oom_tried", "oom_unit")),
    (re.compile(r"total capacity of " + _FLOAT + r" GiB of which " + _FLOAT + r" ?([GM])iB is free"), ("gpu_total_gib", "gpu_free", "gpu_free_unit")),
    (re.compile(r"num_speculative_tokens:?\s*(\d+) must be divisible by n_predict=(\d+)"), ("num_speculative_tokens", "n_predict")),
    (re.compile(r"kernel_block_size (\d+) must divide kv_manager_block_size size (\d+)"), ("kernel_block_size", "kv_manager_block_size")),
    (re.compile(r"Aligned KV cache block size (\d+) is not supported"), ("aligned_block_size",)),
    (re.compile(r"Layer ([\w.]+): page size is not divisible"), ("layer_name",)),
    (re.compile(r"same number of block table entries, got \[([\d,\s]*)\]"), ("block_table_entries",)),
    (re.compile(r"Unexpected head dim size, (\d+)"), ("head_dim",)),
    (re.compile(r"Assertion error\s*\(([^)]*?([\w.\-]+\.(?:hpp|cuh|cu|h|cpp|cc))):(\d+)\)\s*:\s*(.+?)\s*$", re.S),
     ("kernel_assert_path", "kernel_assert_file", "kernel_assert_line", "kernel_assert_condition")),
    (re.compile(r"(?:Timeout|timeout)\(ms\)=(\d+)"), ("nccl_timeout_ms",)),
    # vLLM's start-up memory check: "Free memory on device (61.23/79.19 GiB) on startup is less than desired GPU
    # memory utilization (0.9, 71.27 GiB)"; later releases name the device ("Free memory on device cuda:0 (...)")
    (re.compile(r"Free memory on device(?: [\w:]+)? \(" + _FLOAT + r"/" + _FLOAT + r" ?GiB\) on startup is less than desired GPU memory "
                r"utilization \(" + _FLOAT + r", ?" + _FLOAT + r" ?GiB\)"),
     # (vLLM's own names: its worker's init_snapshot.free_memory / total_memory)
     ("free_memory_gib", "total_memory_gib", "gpu_memory_utilization", "requested_memory_gib")),
    # a token a message names by id ("... is trying to accept another token 151645", "token id 128001")
    (re.compile(r"\btoken(?: id| ID)?:? (\d{2,})\b(?!\.\d)"), ("token_id",)),
    (re.compile(r"ran for (\d+) milliseconds before timing out"), ("nccl_ran_ms",)),
    # the memory profiler's check that no other process freed memory meanwhile (gpu_worker.determine_available_memory)
    (re.compile(r"Initial free memory " + _FLOAT + r" ?GiB, current free memory " + _FLOAT + r" ?GiB"),
     ("initial_free_memory_gib", "current_free_memory_gib")),
]
# the rest of PyTorch's CUDA out-of-memory message (values in GiB)
_OOM_FIELDS = [
    ("process_memory_in_use_gib", re.compile(r"(?:this process|[Pp]rocess \d+) has " + _FLOAT + r" ?([GMK])iB memory in use")),
    ("allocated_by_pytorch_gib", re.compile(r"" + _FLOAT + r" ?([GMK])iB is allocated by PyTorch")),
    ("private_pool_gib", re.compile(r"" + _FLOAT + r" ?([GMK])iB allocated in private pools")),
    ("reserved_unallocated_gib", re.compile(r"" + _FLOAT + r" ?([GMK])iB is reserved by PyTorch but unallocated")),
    # PyTorch < 2.1 wrote the same numbers as "(GPU 0; 15.78 GiB total capacity; 14.56 GiB already allocated;
    # 3.19 MiB free; 14.70 GiB reserved in total by PyTorch)"
    ("gpu_total_gib", re.compile(r"" + _FLOAT + r" ?([GMK])iB total capacity")),
    ("allocated_by_pytorch_gib", re.compile(r"" + _FLOAT + r" ?([GMK])iB already allocated")),
    ("gpu_free_gib", re.compile(r"" + _FLOAT + r" ?([GMK])iB free\b")),
    ("reserved_by_pytorch_gib", re.compile(r"" + _FLOAT + r" ?([GMK])iB reserved in total by PyTorch")),
]
_TO_GIB = {"G": 1, "M": 1024, "K": 1024 * 1024}


def _gib(value: float, unit: str, out: dict[str, Any], name: str) -> None:
    """``name`` (``…_gib``) in GiB; a value the message gives in MiB / KiB also keeps its printed figure under
    ``…_mib`` / ``…_kib`` (a GiB rounding of a few MiB loses it)."""
    out[name] = value if unit == "G" else round(value / _TO_GIB[unit], 3)
    if unit != "G":
        out.setdefault(name[:-4] + "_" + unit.lower() + "ib", value)
_KV_PAIR = re.compile(r"\b([a-z][a-z0-9]*_[a-z0-9_]+|next_n|bs|k)\s*[=:]\s*(-?\d+(?:\.\d+)?)\b")
_NEXT_N_ALLOWED = re.compile(r"next_n\s*==\s*(\d+)")


def _num(value: str) -> int | float | str:
    v = value.replace(",", "").strip()
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return value.strip()


def message_numbers(message: str) -> dict[str, Any]:
    """The numbers a known error message carries (see the package docstring for the names)."""
    out: dict[str, Any] = {}
    msg = " ".join(message[:8000].split())  # a message hard-wrapped by the reporter reads as one line
    for rx, names in _NUM_PATTERNS:
        m = rx.search(msg)
        if not m:
            continue
        for name, val in zip(names, m.groups()):
            if val is None:
                continue
            if name in ("split_sizes", "block_table_entries"):
                out[name] = [int(x) for x in re.findall(r"\d+", val)]
            elif name in ("layer_name", "kernel_assert_path", "kernel_assert_file", "oom_unit", "gpu_free_unit"):
                out[name] = val
            elif name == "kernel_assert_condition":
                out[name] = " ".join(val.split()).rstrip("'\"")
                for k2, v2 in check_numbers("Check failed: (" + out[name] + ")").items():
                    out.setdefault(k2, v2)
            else:
                out[name] = _num(val)
    if "split_sizes_expected_sum" in out:  # the sum is the split tensor's rows ("input tensor's size at dimension 0")
        out.setdefault("tensor_rows", out["split_sizes_expected_sum"])
    if "oom_tried" in out:
        _gib(float(out.pop("oom_tried")), out.pop("oom_unit", "G"), out, "oom_tried_gib")
    if "gpu_free" in out:
        _gib(float(out.pop("gpu_free")), out.pop("gpu_free_unit", "G"), out, "gpu_free_gib")
    if "iB" in msg:
        for name, rx in _OOM_FIELDS:
            m = rx.search(msg) if name not in out else None
            if m:
                _gib(float(m.group(1)), m.group(2), out, name)
    allowed = sorted({int(x) for x in _NEXT_N_ALLOWED.findall(msg)})
    if allowed:
        out["next_n_allowed"] = allowed
    for name, val in _KV_PAIR.findall(msg):
        out.setdefault(name, _num(val))
    for name, val in _CAMEL_PAIR.findall(msg):  # C++ kernels' camelCase fields: qLenPerReq=5 -> q_len_per_req
        out.setdefault(re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower(), _num(val))
    return out


_CAMEL_PAIR = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+)\s*[=:]\s*(-?\d+(?:\.\d+)?)\b")


_STOP = {"the", "of", "a", "an", "to", "for", "in", "at", "with", "and", "is", "be", "must", "than", "but", "got", "has",
         "have", "that", "this", "its", "by", "on", "from", "was", "are", "should", "expected", "expects", "match"}
_PAREN_NUM = re.compile(r"([A-Za-z_][A-Za-z0-9_ .'-]{0,60}?)\s*\(=?\s*(-?\d+(?:\.\d+)?)\)")  # "(118)", "(=1037)"
_NAMED_LIST = re.compile(r"([A-Za-z_][A-Za-z0-9_ ]{0,40}?)\s*[:=]\s*[\[(]\s*(-?\d+(?:\s*,\s*-?\d+)*)\s*,?\s*[\])]")
_SHAPE_OF = re.compile(r"\bshape of (?:the )?([A-Za-z_][A-Za-z0-9_ ]{0,30}?)\s*\[\s*(-?\d+(?:\s*,\s*-?\d+)*)\s*,?\s*\]")
_OF_SHAPE = re.compile(r"([A-Za-z_][A-Za-z0-9_ ]{0,40}?)\s+of shape\s*[\[(]\s*(-?\d+(?:\s*,\s*-?\d+)*)\s*,?\s*[\])]")
_WEIGHT_LAYER = re.compile(r"\blayers\.(\d{1,3})\.")
_WORD_NUM = re.compile(r"\b(dimension|dim|index|size|rank|layer|group|step)\s+(-?\d+)\b")


# words of a message's instructions, not of the quantity ("Make sure batch size (32) ...")
_FILLER = {"make", "sure", "ensure", "please", "try", "provided", "note", "check"}


def _phrase_name(phrase: str) -> str | None:
    last = re.search(r"(?<![\w.])([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)\s*$", phrase)
    if last:  # a phrase ending in an identifier names the value by it: "divisible by cp_kv_cache_interleave_size (128)"
        return last.group(1).lower()
    words = [w for w in re.split(r"[^A-Za-z0-9_]+", phrase.lower()) if w and not w.isdigit()]
    words = [w for w in words if w not in _STOP][-3:]
    while words and words[0] in _FILLER:
        words = words[1:]
    words = ["num" if w == "number" else w for w in words]  # "number of tokens (128)" -> num_tokens, vLLM's naming
    name = "_".join(words).strip("_")
    return name if name and len(name) <= 60 and not name[0].isdigit() else None


def phrase_numbers(message: str) -> dict[str, Any]:
    """Numbers a message gives with words instead of ``name=value``: ``the existing size (118)`` ->
    ``existing_size: 118``; ``Target sizes: [128, 4]`` -> ``target_sizes: [128, 4]``; ``dimension 1`` ->
    ``dimension: 1``. The name is the last three words before the value (small words dropped)."""
    out: dict[str, Any] = {}
    msg = message[:4000]
    for phrase, val in _PAREN_NUM.findall(msg):
        if re.search(r"size of tensor [ab]\s*$", phrase):
            continue  # tensor_a_size / tensor_b_size (message_numbers)
        if re.search(r"\.\w+$", phrase):
            continue  # a method call's argument (q.size(1)), not a value
        name = _phrase_name(phrase)
        if name:
            out.setdefault(name, _num(val))
    for phrase, vals in _NAMED_LIST.findall(msg):
        name = _phrase_name(phrase)
        if name:
            out.setdefault(name, [int(x) for x in re.findall(r"-?\d+", vals)])
    for phrase, vals in _SHAPE_OF.findall(msg):  # "the shape of the mask [37]" -> mask_shape
        name = _phrase_name(phrase)
        if name:
            out.setdefault("_".join(name.split("_")[-2:]) + "_shape", [int(x) for x in re.findall(r"-?\d+", vals)])
    for phrase, vals in _OF_SHAPE.findall(msg):  # "value tensor of shape [3, 64]" -> value_tensor_shape
        name = _phrase_name(phrase)
        if name:
            out.setdefault("_".join(name.split("_")[-2:]) + "_shape", [int(x) for x in re.findall(r"-?\d+", vals)])
    for word, val in _WORD_NUM.findall(msg):
        out.setdefault(word, int(val))
    m = _PLANNED_GOT.search(msg)
    if m:  # "<quantity> ... planned with 6, got 8": both sides of the comparison under the quantity's name
        noun = "_".join(w for w in re.findall(r"[a-z0-9]+", (m.group(2) or "").lower()) if w not in _STOP)
        subject = _SUBJECT.search(msg)
        base = noun or (subject.group(1) if subject and subject.start() < m.start() else None)
        if not base:  # "Mismatch in number of requests when ... Expected 6, got 8." -> requests_expected / _got
            of = re.findall(r"\bnumbers? of ([a-z][a-z_]{2,30})", msg[:m.start()])
            base = of[-1] if of else None
        out.setdefault(f"{base}_expected" if base else "expected_value", _num(m.group(1)))
        out.setdefault(f"{base}_got" if base else "got_value", _num(m.group(3)))
    out.update({k: v for k, v in check_numbers(msg).items() if k not in out})
    out.update({k: v for k, v in copy_shape_numbers(msg).items() if k not in out})
    for val, noun in re.findall(r"(?<![\w.])(\d+) number of ([a-z][a-z_]{1,30})", msg):  # "Provided 10 number of heads"
        out.setdefault(f"num_{noun}", int(val))
    for name, val in _SIZE_CALL.findall(msg):  # "should be equal to source.size(dim) (96)" -> source_size
        out.setdefault(f"{name}_size", int(val))
    for m in _MEASURE_NUM.finditer(msg):  # "Scheduler metadata size 97 exceeds buffer size 65", "head size 256"
        words = re.findall(r"[a-z][a-z0-9_]*", m.group(1).lower())
        kept: list[str] = []
        for w in reversed(words[:-1]):
            if w in _STOP or w in _VERBS or len(kept) == 2:
                break
            kept.insert(0, w)
        if kept:  # (a bare "size 16" is _WORD_NUM's)
            out.setdefault("_".join(kept + [words[-1]]), _num(m.group(2)))
    msg = _JSON_POSITION.sub("", msg)  # ("line 1 column 59": no count of columns)
    for val, phrase in _NUM_NOUN.findall(msg):  # "declares 4 states" -> states: 4
        if phrase.split()[0] in _VERBS:  # "97 exceeds buffer size 65": the number belongs to the words before it
            continue
        words = []
        for w in phrase.split():
            if w in _STOP or w in _UNITS:
                break
            words.append(w)
        if words and words[0] != "number" and not words[0].endswith(("ed", "ing")):  # "10 number of heads": num_heads;
            # "0 based on", "3 remaining": a verb, not what the number counts
            out.setdefault("_".join(words), _num(val))
    for name, val in label_numbers(msg).items():
        out.setdefault(name, val)
    for name, val in shape_numbers(msg).items():
        out.setdefault(name, val)
    for name, val in source_lines(msg).items():
        out.setdefault(name, val)
    if "weight" in msg and (layers := sorted({int(n) for n in _WEIGHT_LAYER.findall(msg)})):
        # "Following weights were not initialized from checkpoint: {'model.layers.46.enorm.weight', ...}": the
        # layer the checkpoint lacks (an MTP / nextn layer a quantised export dropped)
        out.setdefault("weight_layer_index", layers[0] if len(layers) == 1 else layers)
    m = _CAPABILITY.search(msg) if "apability" in msg else None
    if m:  # "... compute capability of at least 8.0. Your Tesla V100 GPU has compute capability 7.0"
        for mm in _CAPABILITY.finditer(msg):
            name = "min_compute_capability" if mm.group(1) else "compute_capability"
            out.setdefault(name, float(mm.group(2)))
    return out


def named_numbers(message: str) -> dict[str, Any]:
    """Every number a message names: its known patterns (:func:`message_numbers`) first, then the values it gives
    in words (:func:`phrase_numbers`) -- the numbers of an error that is not the root (another attempt's, a refused
    request's)."""
    out = message_numbers(message)
    for name, val in phrase_numbers(message).items():
        out.setdefault(name, val)
    return out


# "Required: 98304, Hardware limit: 65536" (Triton), "Free memory: 3 GiB": a capitalised label and its number;
# "SeqNum=188342, NumelIn=14336" (NCCL's work record): PascalCase fields
_LABEL_NUM = re.compile(r"(?<![\w.])([A-Z][a-z]+(?: [a-z]+){0,2}):\s*(-?\d+(?:\.\d+)?)(?!\w|\.\d|[:/])")
_PASCAL_PAIR = re.compile(r"(?<![\w.])([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+)\s*=\s*(-?\d+(?:\.\d+)?)(?!\w|\.\d)")
_CAPABILITY = re.compile(r"[Cc]ompute [Cc]apability (?:of )?(at least |>= ?|below |less than )?(\d+\.\d+)")


_DIMS = r"(?:torch\.Size\(\s*)?[\[(]\s*(-?\d+(?:\s*,\s*-?\d+)*)\s*,?\s*[\])]\)?"
# "Expected query to have shape [4, 32, 128] but got [4, 32, 96]", "expected x.shape=torch.Size([16, 2048]) to equal
# (16, 4096)", "... to be: [32, 64] but got: [32, 128]": the two shapes of a failed comparison
_SHAPE_VS = re.compile(r"(?:[Ee]xpected|[Ee]xpecting|to be|to equal|must be|should be|to have shape)\s*:?\s*(?:shape\s*)?"
                       + _DIMS + r"[^\[(]{0,40}?\b(?:but )?(?:got|found|actual|received|is)\b\s*:?\s*(?:shape\s*)?" + _DIMS)
_SHAPE_VS_SUBJECT = re.compile(r"\b([A-Za-z_][\w.]{0,80}?)(?:\.shape)?\s+(?:to have|with|of)\s+(?:shape|size)s?\s*$")
# an expression and its value: "x.shape=torch.Size([16, 2048])", "query.shape[0]=37", "block_table.shape[1] (512)"
_EXPR_VALUE = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.\w+|\[-?\d+\]|\(-?\d*\))+)(?:\s*[=:]\s*|\s+\()(?:" + _DIMS + r"|(-?\d+(?:\.\d+)?)\)?)")
# PyTorch's view error: "shape '[8, -1, 64]' is invalid for input of size 5000"
_VIEW = re.compile(r"shape '\[([-\d,\s]+)\]' is invalid for input of size (\d+)")
# "mat1 and mat2 shapes cannot be multiplied (4x2048 and 4096x1024)"
_MATMUL = re.compile(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)")
# an identifier and its number in a message's prose: "num_qo_heads 28 must be divisible by num_kv_heads 8"
_IDENT_NUM = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s+(-?\d+(?:\.\d+)?)(?!\w|\.\d)")
# "<words> 576, but got 512": the value a message expected and the one it saw, named by the words before
_IDENT_IS = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s+(?:is|was|are|were)\s+(?:set to|now|currently|only|still)?\s*"
                       r"(-?\d+(?:\.\d+)?)(?!\w|\.\d)")
_UPPER_PAIR = re.compile(r"(?<![\w.\-])([A-Z][A-Z0-9]{0,4}|[A-Z][a-z]?[A-Z]?)\s*=\s*(-?\d+(?:\.\d+)?)(?!\w|\.\d)")
_NOUN_SIZE = re.compile(r"(?<![\w.\-])((?:block|page|batch|chunk|group|head|hidden|vocab|kernel|tile|window|beam|cache|"
                        r"state|conv|bucket|segment|step|world) size)\s+(?:of\s+)?(\d+)\b(?!\.\d)", re.I)
_NAMED_DICT = re.compile(r"([A-Za-z][A-Za-z_ ]{2,40}?)\s*[:=]\s*\{((?:\s*['\"][^'\"]{1,120}['\"]\s*:\s*-?\d+(?:\.\d+)?\s*,?)+)\s*\}")
_WORD_PAIR = re.compile(r"(?<![\w.\-/])([a-z][a-z0-9]{1,20})=(-?\d+(?:\.\d+)?)(?!\w|\.\d)")
_IDENT_GOT = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b[^,.;:()\[\]]{0,50}?,\s*(?:but )?got:?\s+(-?\d+(?:\.\d+)?)(?!\w|\.\d)")
_WORDS_COLON = re.compile(r"(?<![\w.])([a-z][a-z ]{2,40}?):\s*(-?\d+(?:\.\d+)?)(?!\w|\.\d|:)")
_MULTIPLE_OF = re.compile(r"\bmultiples? of (\d+)\b(?!\.\d)")
_BUT_GOT = re.compile(r"([A-Za-z_][\w ]{0,60}?)\s(-?\d+(?:\.\d+)?)\s*[,;]?\s*but (?:got|found|received|is|was)\s*:?\s*"
                      r"(-?\d+(?:\.\d+)?)(?!\w|\.\d)")


def _expr_name(expr: str) -> str:
    """``query.shape[0]`` -> ``query_shape_0``; ``x.size(1)`` -> ``x_size_1``; ``self.kv_cache.shape`` -> ``kv_cache_shape``."""
    name = re.sub(r"[^A-Za-z0-9]+", "_", expr).strip("_").lower()
    return re.sub(r"^self_", "", name)


def _dims(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text)]


def shape_numbers(message: str) -> dict[str, Any]:
    """Shapes and expression values of a message: both shapes of a failed shape comparison (``expected_shape``,
    ``got_shape``, and ``<subject>_shape`` = the one seen), ``x.shape=[...]`` / ``x.shape[0]=37`` /
    ``t.shape[1] (512)`` under the expression's name, PyTorch's view and matmul errors, ``num_qo_heads 28``, and
    ``<words> N, but got M`` as ``<words>_expected`` / ``<words>_got``."""
    out: dict[str, Any] = {}
    msg = message[:4000]
    if "[" in msg or "(" in msg:
        m = _SHAPE_VS.search(msg)
        if m:
            out["expected_shape"], out["got_shape"] = _dims(m.group(1)), _dims(m.group(2))
            subj = _SHAPE_VS_SUBJECT.search(msg[max(0, m.start() - 80):m.start() + 40].split("[")[0].split("(")[0])
            if subj:
                out[_expr_name(subj.group(1)) + "_shape"] = out["got_shape"]
        for m in _EXPR_VALUE.finditer(msg):
            name = _expr_name(m.group(1))
            if not name or name[0].isdigit() or name.startswith(("torch_", "np_")) or re.search(
                    r"_(?:cu|cuh|cpp|cc|cxx|h|hpp|c|py)$", name):  # a source position (xqa.cu:512), see source_lines
                continue
            out.setdefault(name, _dims(m.group(2)) if m.group(2) is not None else _num(m.group(3)))
        m = _VIEW.search(msg) if "is invalid for input of size" in msg else None
        if m:
            out["view_shape"], out["input_size"] = _dims(m.group(1)), int(m.group(2))
        m = _MATMUL.search(msg) if "mat1" in msg else None
        if m:
            out["mat1_shape"] = [int(m.group(1)), int(m.group(2))]
            out["mat2_shape"] = [int(m.group(3)), int(m.group(4))]
    if "_" in msg:
        for name, val in _IDENT_NUM.findall(msg):
            out.setdefault(name, _num(val))
        for name, val in _IDENT_IS.findall(msg):  # "max_num_scheduled_tokens is set to 0"
            out.setdefault(name, _num(val))
    if "=" in msg:
        for name, val in _UPPER_PAIR.findall(msg):  # "Got TP=4, PCP=2, DCP=8", "H=32, HV=64"
            out.setdefault(name.lower(), _num(val))
        for name, val in _WORD_PAIR.findall(msg):  # "existing=3, new=4", "topk=2048"
            if name not in ("line", "pid", "port", "rank", "cuda"):
                out.setdefault(name, _num(val))
    if "{" in msg:
        for phrase, body in _NAMED_DICT.findall(msg):  # "layer page sizes: {'layers.0.mixer': 2129920, ...}"
            name = _phrase_name(phrase)
            vals = [_num(v) for v in re.findall(r":\s*(-?\d+(?:\.\d+)?)", body)]
            if name and vals:
                out.setdefault(name, vals)
    if "got" in msg and "_" in msg:
        for name, val in _IDENT_GOT.findall(msg):  # "ple_conv_kernel_size must be positive, got 0"
            out.setdefault(f"{name}_got", _num(val))
            out.setdefault(name, _num(val))
    if ":" in msg:
        for phrase, val in _WORDS_COLON.findall(msg):  # "Too many total bad word tokens: 1037."
            name = _phrase_name(phrase)
            if name and name not in ("error", "line", "got", "found", "value", "values", "code", "rank", "status"):
                out.setdefault(name, _num(val))
    if " size " in msg:
        for phrase, val in _NOUN_SIZE.findall(msg):  # "for page size 64, batch size 17"
            out.setdefault("_".join(phrase.lower().split()), int(val))
    m = _MULTIPLE_OF.search(msg) if "multiple of" in msg else None
    if m:  # "after rounding to multiple of 4", "must be a multiple of 16"
        out.setdefault("multiple_of", int(m.group(1)))
    if "but " in msg:
        for phrase, want, got in _BUT_GOT.findall(msg):
            if re.search(r"\b(?:than|to|most|least|be|equal|is|of)\s*$", phrase):
                continue  # "must be less than or equal to 512, but is 1024": a check (check_numbers)
            name = _phrase_name(phrase)
            if name and not re.search(r"(?:^|_)(?:expected|got)$", name):
                out.setdefault(f"{name}_expected", _num(want))
                out.setdefault(f"{name}_got", _num(got))
    return out


# "shared memory segment /dev/shm/nccl-x (size 9637888)": a size in parentheses, named by the words before it
_PAREN_SIZE = re.compile(r"([A-Za-z][A-Za-z ]{0,60}?)\s+(?:[^\s()]*[/\\][^\s()]*\s+)?\((size|length|len|count|numel)\s*[=:]?\s*(\d+)\)")


# vLLM's own INFO/WARNING records that state a setting it used or changed: "Chunked prefill is enabled with
# max_num_batched_tokens=8192.", "Using max model len 32768", "Auto-fit max_model_len: reduced from 262144 to 98304",
# "Raising max_num_batched_tokens from 2048 to 8192", "Overriding draft model max model len from 4096 to 2048"
_LOG_PAIR = re.compile(r"(?<![\w.\-/])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s*=\s*(-?\d+(?:\.\d+)?)(?!\w|\.\d)")
_LOG_USING = re.compile(r"\bUsing (?:a |the )?((?:max |min )?[a-z][a-z_]*(?: [a-z_]+){0,3}?) (\d+)\b(?!\.\d)")
_LOG_FROM_TO = re.compile(r"\b(?:[Rr]educ|[Rr]ais|[Oo]verrid|[Cc]app|[Ll]ower|[Ii]ncreas|[Dd]ecreas|[Cc]hang|[Aa]djust|[Cc]lamp|"
                          r"[Rr]ound)\w*\s+(?:the\s+)?([A-Za-z_][\w ]{0,50}?)[:,]?\s+from (?:max )?(\d+) to (\d+)\b")


_LOG_NAME_FROM_TO = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s*:?\s*(?:was |is |been )?(?:reduced|raised|lowered|"
                               r"increased|decreased|changed|capped|clamped|rounded|adjusted|overridden) from (\d+) to (\d+)\b")


def logged_numbers(text: str) -> dict[str, Any]:
    """Settings a vLLM INFO/WARNING record states (see ``_LOG_PAIR`` / ``_LOG_USING`` / ``_LOG_FROM_TO``): ``name=N``
    pairs, ``Using <name> N`` and ``<name> from A to B`` (as ``<name>_from`` / ``<name>_to``)."""
    out: dict[str, Any] = {}
    if "=" in text and "_" in text:
        for name, val in _LOG_PAIR.findall(text):
            out.setdefault(name, _num(val))
    if "Using " in text:
        for phrase, val in _LOG_USING.findall(text):
            out.setdefault("_".join(phrase.split()), int(val))
    if " from " in text:
        for name, a, b in _LOG_NAME_FROM_TO.findall(text):  # "max_model_len: reduced from 262144 to 98304"
            out.setdefault(f"{name}_from", int(a))
            out.setdefault(f"{name}_to", int(b))
        for phrase, a, b in _LOG_FROM_TO.findall(text):
            words = [w for w in re.split(r"[^a-z0-9_]+", phrase.lower()) if w and w not in _STOP][-4:]
            if words:
                name = "_".join(words)
                out.setdefault(f"{name}_from", int(a))
                out.setdefault(f"{name}_to", int(b))
    return out


def continued_numbers(text: str) -> dict[str, Any]:
    """Values the later lines of a message name outright (``name=N``, ``name N``, ``N number of X``, ``Label: N``):
    lines that may also be the text after the message, so nothing is named from loose words."""
    out: dict[str, Any] = {}
    for name, val in _KV_PAIR.findall(text):
        out.setdefault(name, _num(val))
    for val, noun in re.findall(r"(?<![\w.])(\d+) number of ([a-z][a-z_]{1,30})", text):
        out.setdefault(f"num_{noun}", int(val))
    for rx in (_IDENT_NUM, _IDENT_IS):
        for name, val in rx.findall(text):
            out.setdefault(name, _num(val))
    for name, val in label_numbers(text).items():
        out.setdefault(name, val)
    return out


def label_numbers(text: str) -> dict[str, Any]:
    """Numbers under a capitalised label (``Required: 98304``) or a PascalCase field (``SeqNum=188342``), named in
    snake case (``required``, ``seq_num``), and a ``(size N)`` after a noun (``shared_memory_segment_size``)."""
    out: dict[str, Any] = {}
    if "(size" in text or "(length" in text or "(count" in text or "(numel" in text or "(len" in text:
        for phrase, kind, val in _PAREN_SIZE.findall(text):
            name = _phrase_name(phrase)
            if name:
                out.setdefault(f"{name}_{kind}", int(val))
    if ":" in text:
        for label, val in _LABEL_NUM.findall(text):
            name = "_".join(label.lower().split())
            if name not in ("line", "error", "pid", "port", "rank", "step", "version"):
                out.setdefault(name, _num(val))
    if "=" in text:
        for name, val in _PASCAL_PAIR.findall(text):
            out.setdefault(re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower(), _num(val))
    return out


# a count followed by what it counts ("4 states", "2 state copy funcs", "3 block tables"); units are no names
# a tensor's size call and its value in parentheses: PyTorch's "source.size(dim) (96)", "self.size(0) (8)"
_SIZE_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\.(?:size|numel)\((?:dim|-?\d)?\)\s*\((-?\d+)\)")
# a measure named before its number: "<words> size|count|length|width|limit|threshold N"
_MEASURE_NUM = re.compile(r"\b((?:[A-Za-z][A-Za-z0-9_]*\s+){0,4}(?:size|count|length|width|limit|threshold))\s+(-?\d+)\b(?!\.\d|\s*[x*/])")
# verbs a message puts between two measures ("97 exceeds buffer size 65", "needs", "requires")
_VERBS = {"exceeds", "exceed", "exceeded", "needs", "need", "requires", "require", "required", "must", "should", "is",
          "are", "was", "were", "vs", "versus", "over", "under", "above", "below", "allows", "supports", "support"}
_NUM_NOUN = re.compile(r"(?<![\w.\-(\[=:])(\d+)\s+([a-z][a-z_]{2,}(?: [a-z][a-z_]{2,}){0,2})")
_UNITS = {"gib", "mib", "kib", "gb", "mb", "kb", "bytes", "ms", "sec", "secs", "seconds", "minutes", "times", "percent",
          "not", "more", "less", "than", "or", "and", "but", "got"}


# "expected 4, got 7" / "planned with 6, got 8" / "must be 3 but got 5" / "is 12 (expected 11)"
_PLANNED_GOT = re.compile(r"\b(?:expected|expects|expecting|planned(?: with| for)?|must be|should be|set to|built for)\s+"
                          r"(-?\d+(?:\.\d+)?)\b\s*([A-Za-z][A-Za-z_ ]{0,30}?)?\s*[,;:]?\s*\(?(?:but )?"
                          r"(?:got|received|found|saw|is|has)\s+(-?\d+(?:\.\d+)?)\b", re.I)
# the quantity a message is about: its first snake_case identifier (q_len_per_req, num_decode_tokens)
_SUBJECT = re.compile(r"(?<![\w./])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w(])")
# a kernel's check macro or failed comparison against a constant: TVM_FFI_ICHECK_GT(num_tokens, 64),
# CHECK_LE(x, 8), "Check failed: (next_n <= 2)", "Assertion `q_len <= 4' failed", TORCH_CHECK(n % 64 == 0)
# (the first argument may be an expression: TVM_FFI_ICHECK_EQ(num_heads % 16, 0))
_CHECK_MACRO = re.compile(r"\b(?:TVM_FFI_|PADDLE_|FLASHINFER_)?I?CHECK_(GT|GE|LT|LE|EQ|NE)\(\s*([A-Za-z_](?:[^,()]|\([^(),]{0,20}\)){0,80}?)"
                          r"\s*,\s*(-?\d+)\s*\)")
# "Check failed: (x <= 2)", "Assertion `q_len <= 4' failed", "Assertion failed: qSeqLen <= 16" (TensorRT-LLM), and
# TORCH_CHECK / INTERNAL_ASSERT without a message: "Expected num_tokens <= 8192 to be true, but got false",
# "q.size(1) == 128 INTERNAL ASSERT FAILED at ..."
_CHECK_CMP = re.compile(r"(?:Check failed:?|TORCH_CHECK\(|Assertion failed:?|Assertion [`'\"]|[Aa]ssert(?:ion)?\s*\(?|"
                        r"\bExpected(?= [A-Za-z_][\w.\->\[\]()]{0,80}? ?(?:<=|>=|<|>|==|!=) ?-?\d+ to be true))\s*\(?\s*"
                        # (not a constant that an expression continues: "max_query_len == 1 + self.num_spec_tokens")
                        r"([A-Za-z_][\w.\->\[\]()]{0,80}?)\s*(<=|>=|<|>|==|!=)\s*(-?\d+)\b(?!\s*[-+*/%]\s*[\w(])")
# PyTorch's INTERNAL_ASSERT without a message: "q.size(1) == 128 INTERNAL ASSERT FAILED at ..." (searched only in such text)
_INTERNAL_ASSERT = re.compile(r"(?<![\w.])([A-Za-z_][\w.\->\[\]()]{0,80}?)\s*(<=|>=|<|>|==|!=)\s*(-?\d+) INTERNAL ASSERT")
_MUST_CMP = re.compile(r"(?<![\w.])([A-Za-z_][\w.\[\]()]{0,80}?)\s+(?:must|should|has to|needs to) be\s+(<=|>=|<|>|==|"
                       r"less than or equal to|greater than or equal to|at most|at least|less than|greater than|smaller than)"
                       r"\s*(-?\d+)\b(?:\s*[,;(]?\s*(?:but|got|is|was)\s+(?:got\s+|is\s+|was\s+)?(-?\d+))?")
_WORD_OP = {"less than or equal to": "<=", "at most": "<=", "greater than or equal to": ">=", "at least": ">=",
            "less than": "<", "smaller than": "<", "greater than": ">"}
_MACRO_OP = {"GT": ">", "GE": ">=", "LT": "<", "LE": "<=", "EQ": "==", "NE": "!="}


_EXPAND_MSG = re.compile(r"expanded size of the tensor \((\d+)\) must match the existing size \((\d+)\) at non-singleton "
                         r"dimension (\d+)")
_TARGET_TENSOR = re.compile(r"Target sizes: \[([\d,\s]+)\]\.?\s+Tensor sizes: \[([\d,\s]+)\]")


def copy_shape_numbers(message: str) -> dict[str, Any]:
    """Both sides of a failed copy into a buffer (PyTorch's expand error, ``buf[:n] = x``): the destination
    ("target", the expanded size) and the source ("existing", the tensor's size) of the mismatching dimension,
    named for what a dimension of a 2-D table is -- rows (dimension 0) or width (dimension 1) -- and the rows the
    two agree on when only the width differs."""
    out: dict[str, Any] = {}
    msg = " ".join(message.split())
    dim = None
    m = _EXPAND_MSG.search(msg)
    t = _TARGET_TENSOR.search(msg)
    target = [int(x) for x in re.findall(r"\d+", t.group(1))] if t else None
    source = [int(x) for x in re.findall(r"\d+", t.group(2))] if t else None
    if m:
        dim = int(m.group(3))
        pair = (int(m.group(1)), int(m.group(2)))
    elif target and source and len(target) == len(source):
        diff = [i for i, (a, b) in enumerate(zip(target, source)) if a != b]
        if len(diff) != 1:
            return out
        dim = diff[0]
        pair = (target[dim], source[dim])
    else:
        return out
    ndim = len(target) if target else None
    word = {0: "rows", 1: "width"}.get(dim) if ndim in (None, 1, 2) else None
    if word is None or (word == "width" and ndim == 1):
        return out
    out[f"target_{word}"], out[f"source_{word}"] = pair
    if word == "width" and target and source and target[0] == source[0]:
        out["rows"] = target[0]
    return out


def check_numbers(text: str) -> dict[str, Any]:
    """What a failed check compared with a constant: ``check_operand`` (the expression), ``check_op`` and
    ``check_threshold`` (the constant), from a C++/TVM check macro or a failed comparison's text."""
    m = _CHECK_MACRO.search(text)
    if m:
        return {"check_operand": m.group(2), "check_op": _MACRO_OP[m.group(1)], "check_threshold": int(m.group(3))}
    m = _MUST_CMP.search(text) if " be " in text else None
    if m:  # "q_len_per_req must be <= 4, but got 6"
        out = {"check_operand": m.group(1), "check_op": _WORD_OP.get(m.group(2), m.group(2)), "check_threshold": int(m.group(3))}
        if m.group(4) is not None and re.fullmatch(r"[A-Za-z_]\w*", m.group(1)):
            out[m.group(1)] = int(m.group(4))
        return out
    m = _CHECK_CMP.search(text)
    if m is None and "INTERNAL ASSERT" in text:
        m = _INTERNAL_ASSERT.search(text)
    if m:
        out = {"check_operand": m.group(1), "check_op": m.group(2), "check_threshold": int(m.group(3))}
        # the value the check saw, where its text says it ("... is false: ... got 6"): under the operand's name
        got = re.search(r"\bgot\s+(-?\d+)\b", text[m.end():m.end() + 300])
        if got and re.fullmatch(r"[A-Za-z_]\w*", m.group(1)):
            out[m.group(1)] = int(got.group(1))
        return out
    return {}


# a C++/CUDA source position in an error text: "Cuda error /workspace/csrc/custom_all_reduce.cuh:368 '...'",
# "CUDA error at ../csrc/moe/topk.cu:120"; a glog prefix "[E1208 ... ProcessGroupNCCL.cpp:688]" is where the
# message was logged, not the failure
_SRC_POS = re.compile(r"(?<![\w.\-])(?:[\w.\-]*/)*([A-Za-z_][\w\-]*)\.(?:cu|cuh|cpp|cc|hpp|h|cxx|c)\"?:(\d+)(?![\d\]])")


def source_lines(text: str) -> dict[str, int]:
    """``<file stem>_line`` for the C++/CUDA source positions an error text names (see ``_SRC_POS``)."""
    out: dict[str, int] = {}
    if ".c" not in text and ".h" not in text:
        return out
    for m in _SRC_POS.finditer(text[:4000]):
        if len(out) < 8:
            out.setdefault(f"{m.group(1).replace('-', '_')}_line", int(m.group(2)))
    return out


_KERNEL_SOURCE = re.compile(r"\.(?:cu|cuh|cpp|cc|hpp|h|cxx)$")
_NOT_VLLM_FRAME = re.compile(r"^<|[/\\](?:torch|triton|transformers|ray|uvloop|asyncio|concurrent|multiprocessing|"
                             r"contextlib|threading|functools)[/\\]|_contextlib\.py$|/lib/python3[\d.]*/[^/]+\.py$")


def _known_vllm_file(path: str) -> bool:
    """A trimmed path (``.../v1/worker/x.py``, ``x.py``) whose file name is one of vLLM's (the catalog's files)."""
    from ..catalog import load

    return bool(load().in_file(path.rsplit("/", 1)[-1]))


def _line_key(file: str) -> str | None:
    """``<file stem>_line`` for a frame's file, or None where the stem is no identifier."""
    stem = re.split(r"[/\\]", file)[-1].rsplit(".", 1)[0]
    return f"{stem.replace('-', '_')}_line" if re.fullmatch(r"[A-Za-z_][\w-]*", stem) else None


def frame_line_numbers(f: LogFacts, raw: list | None = None) -> dict[str, int]:
    """``<file stem>_line``: the line of the innermost printed frame in each vLLM file of the root traceback
    (and of traceback pieces without an exception line, the same failure in an excerpt), and of a kernel
    check's source file -- the line numbers an expert quotes to name the failing statement and the release."""
    out: dict[str, int] = {}
    # frames of a process shutting down after the failure say where it stopped, not where it failed
    root_in_teardown = f.root is not None and raised_in_teardown(f.root)

    def aftermath(e) -> bool:
        return not root_in_teardown and raised_in_teardown(e)

    excs = ([f.root] if f.root is not None else []) + [e for e in f.exceptions
                                                       if e.exc_type == ORPHAN_TYPE and not aftermath(e)]
    fault = FAULT_NAME.search(f.root.message[:300]) if f.root is not None else None
    if fault:
        # an asynchronous CUDA fault is reported at the next sync point (a .tolist(), a copy); the same fault's
        # traceback from a synchronous rerun (CUDA_LAUNCH_BLOCKING=1) or another rank is the one that places it
        # (``raw``: the exceptions before duplicates are merged -- a rerun's traceback repeats the first message)
        excs += [e for e in (raw if raw is not None else f.exceptions)[:64]
                 if e is not f.root and e.frames and fault.group(0) in e.message[:300] and not aftermath(e)][:4]
    for e in excs:
        seen = 0
        for fr in reversed(e.frames):
            if not fr.line or not fr.file or _NOT_VLLM_FRAME.search(fr.file):
                continue
            if seen >= 8:  # the failing end of the stack; the entry frames (engine loop, API) say little
                break
            path = fr.file.replace("\\", "/")
            if _KERNEL_SOURCE.search(path):  # a kernel library's C++/CUDA source (FlashInfer, DeepGEMM, AITER)
                pass
            elif "/vllm/" not in path and not path.startswith("vllm/") and not (
                    not path.startswith("/") and _known_vllm_file(path)):
                continue  # the user's script, a library outside vLLM
            key = _line_key(fr.file)
            if key is not None and key not in out:
                out[key] = fr.line
                seen += 1
    if not out and f.root is not None and f.root.log_line is not None:
        # the root raised outside vLLM (Transformers refusing a model type, pydantic): the vLLM frames are in the
        # chained traceback printed next to it ("During handling of the above exception ...")
        near = [e for e in (raw if raw is not None else f.exceptions)[:64] if e is not f.root and e.log_line is not None
                and abs(e.log_line - f.root.log_line) <= 60 and e.process == f.root.process]
        for e in near:
            for fr in reversed(e.frames):
                path = (fr.file or "").replace("\\", "/")
                if fr.line and "/vllm/" in path and not _NOT_VLLM_FRAME.search(path) and (key := _line_key(path)):
                    out.setdefault(key, fr.line)
    kf, kl = f.numbers.get("kernel_assert_file"), f.numbers.get("kernel_assert_line")
    if isinstance(kf, str) and isinstance(kl, int):
        out.setdefault(f"{kf.rsplit('.', 1)[0].replace('-', '_')}_line", kl)
    for key, val in (f.startup.get("prose_source_lines") or {}).items():
        out.setdefault(key, val)  # the reporter naming the failing line in words ("gdn_attn.py line 725")
    return out

_ARG_PAIR = re.compile(r"(?<![\w.-])([a-z][a-z0-9]*_[a-z0-9_]+)=(-?\d+(?:\.\d+)?)(?![\w.])")
_TIGHT_PAIR = re.compile(r"(?<![\w.])([a-z][a-z0-9_]{1,30})[:=](-?\d+(?:\.\d+)?)(?!\w|\.\d|:)")  # not host:pid:tid
_XID = re.compile(r"\bXid\b(?:\s*\([^)]{0,40}\))?\s*:?\s*(\d{1,3})\b")  # "Xid 13", "Xid (PCI:0000:9d:00): 79"
_LAUNCH_DIMS = re.compile(r"<<<\(\s*([\d,\s]+)\)\s*,\s*\(\s*([\d,\s]+)\)")
_KERNEL_AT = re.compile(r"\(([\w.\-]+\.py):(\d+)\)|\bat\s+\S+\.py:(\d+)")
# metrics: Prometheus exposition (vllm:prefix_cache_queries_total 1131) and the spec-decode log line
_PROM = re.compile(r"\b(vllm:[a-z_]+)(?:\{[^}]*\})?\s+(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)\b")
_SPEC_METRICS = re.compile(r"(Mean acceptance length|Avg Draft acceptance rate|Draft acceptance rate|Accepted|Drafted)"
                           r"\s*:\s*(-?\d+(?:\.\d+)?)")
_NUM_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9_-]+)[ =](-?\d+(?:\.\d+)?)(?![\w.:/-])")


# AITER's MLA heuristics print the query length per request as ``qseqlen`` (its argument max_seqlen_q)
_KERNEL_FIELDS = {"qseqlen": "max_seqlen_q", "q_seqlen": "max_seqlen_q", "seqlen_q": "max_seqlen_q"}


def error_line_numbers(texts: list[str], numbers: dict[str, Any]) -> None:
    """``name=value`` pairs, Xid codes, kernel launch dimensions and kernel source lines of error lines
    stated outside a traceback (kernel checks, debugger and sanitizer reports), set into ``numbers`` where
    not set yet."""
    at_line = paren_line = None
    for text in texts:
        for name, val in _KV_PAIR.findall(text):
            numbers.setdefault(name, _num(val))
        for name, val in _TIGHT_PAIR.findall(text):  # kernel detail lines: "qseqlen:5 gqa:16"
            if name not in ("pid", "ip", "port", "line"):
                numbers.setdefault(name, _num(val))
                if name in _KERNEL_FIELDS:  # the kernel's short name for a quantity vLLM names
                    numbers.setdefault(_KERNEL_FIELDS[name], _num(val))
        for name, val in check_numbers(text).items():
            numbers.setdefault(name, val)
        m = _XID.search(text)
        if m:
            numbers.setdefault("xid", int(m.group(1)))
        for name, val in label_numbers(text).items():
            numbers.setdefault(name, val)
        for name, val in source_lines(text).items():
            numbers.setdefault(name, val)
        m = _LAUNCH_DIMS.search(text)
        if m:  # cuda-gdb: kernel<<<(grid),(block)>>>
            numbers.setdefault("kernel_grid", [int(x) for x in re.findall(r"\d+", m.group(1))])
            numbers.setdefault("kernel_block", [int(x) for x in re.findall(r"\d+", m.group(2))])
        for m in _KERNEL_AT.finditer(text):
            # cuda-gdb's frame "#0 kernel<<<...>>> () at file.py:94" is the faulting statement; the
            # "(file.py:93)" after "triggered at PC" names the kernel's definition line
            if m.group(3):
                at_line = at_line or int(m.group(3))
            else:
                paren_line = paren_line or int(m.group(2))
    if at_line or paren_line:
        numbers.setdefault("kernel_source_line", at_line or paren_line)
        if paren_line and at_line and paren_line != at_line:
            numbers.setdefault("kernel_definition_line", paren_line)


# page sizes a reporter printed while chasing a unification error (vLLM's message names none before 0.20):
# "page_sizes={73728, 28672}", "{'FullAttentionSpec(draft)': 65536, ...}", "the draft layer is 24576 bytes/page"
_PAGE_SET = re.compile(r"\bpage_sizes?(?:_bytes)?\s*[=:]\s*\{\s*(\d{3,10}(?:\s*,\s*\d{3,10})+)\s*\}")
_PAGE_SPEC = re.compile(r"'(\w*Spec)(?:\((\w+)\))?'\s*:\s*(\d{3,10})\b")
_PAGE_ROLE = re.compile(r"\b(draft(?:er)?|target|attention|attn|mla|mamba|gdn|linear[- ]attention|sliding[ _-]window|"
                        r"full[ _-]attention)\b(?: (?:model|head|layers?|specs?))?[^.;\n]{0,60}?"
                        r"(?:page_size_bytes|page[ _]size|bytes ?/ ?page|bytes per page)\D{0,24}?(\d{3,10})\b|"
                        r"\b(draft(?:er)?|target|attention|attn|mla|mamba|gdn)\b(?: (?:model|head|layers?))?[^.;\n\d]{0,60}?"
                        r"\b(?:is|are|come out at|at|of|=|:)\s*(\d{4,10})\s*(?:bytes|B)?\s*(?:/|per )\s*page\b", re.I)
_ROLE_NAME = {"drafter": "draft", "attn": "attention", "linear attention": "gdn", "linear-attention": "gdn"}


def quoted_page_sizes(text: str) -> dict[str, Any]:
    """The page sizes (bytes) a reporter quotes, by role: ``draft_page_size``, ``target_page_size``,
    ``attention_page_size``, ``mla_page_size``, ``mamba_page_size`` ...; a bare set of them as ``page_sizes``."""
    out: dict[str, Any] = {}
    m = _PAGE_SET.search(text)
    if m:
        out["page_sizes"] = [int(x) for x in re.findall(r"\d+", m.group(1))]
    for spec, role, val in _PAGE_SPEC.findall(text):
        name = (role or re.sub(r"(?<!^)([A-Z])", r"_\1", spec[:-4]).lower()).lower()
        out.setdefault(f"{_ROLE_NAME.get(name, name)}_page_size", int(val))
    for m in _PAGE_ROLE.finditer(text):
        role = (m.group(1) or m.group(3)).lower()
        role = _ROLE_NAME.get(role, re.sub(r"[ -]", "_", role))
        out.setdefault(f"{role}_page_size", int(m.group(2) or m.group(4)))
    return out


# the reporter's own page-size arithmetic: a role ("draft layer", "target attn", "MLA layer", "mamba layers") and the
# chain after it ("2 x 160 x 2 x 2 = 1280 B/token, with block 16 -> 20480 B", "-> 348,160 B/page", a table row's last
# cell)
_ARITH_ROLE = re.compile(r"(?<![._/])\b(?:(target|base|main)(?:\s+(?:model|full[- ]?attn|full[- ]attention|attention|attn|layers?))*|"
                         r"(draft(?:er)?|eagle\d*(?:[ _]draft)?)(?:[ _](?:model|layers?|head|attn|attention))*|(mla)|(mamba\d?)|"
                         r"(gdn|linear[- ]attention)|(attention|attn))\b", re.I)
_ARITH_NUM = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d{4,10})(?![\w.,]\d)")
# a number that is a factor or a size in tokens, not a page: "x528", "@400 tok", "block 16", "1280 B/token", "8 kv heads"
_ARITH_NOT_PAGE_BEFORE = re.compile(r"(?:[x*\u00d7@]|\bblock(?:_size)?\s*[=:]?|\bwith)\s*$", re.I)
_ARITH_NOT_PAGE_AFTER = re.compile(r"^\s*(?:(?:B|bytes?|\u0431\u0430\u0439\u0442\w*)?\s*/\s*(?:token|tok)|[- ]?tok(?:en)?s?\b|"
                                   r"kv\b|heads?\b|dim\b|layers?\b|x\b|\*|context\b|ctx\b|max\b|len\b|length\b)", re.I)
# the words of a line about pages at all (a role and a large number alone are a context length or a count)
_ARITH_CONTEXT = re.compile(r"page|block|B/tok|bytes|Spec\b|\d\s*B\b|\u0431\u0430\u0439\u0442", re.I)
_ARITH_RESULT_BEFORE = re.compile(r"(?:=|->|\u2192|:|\bis|\bare|\bbe)\s*$")
_ARITH_RESULT_AFTER = re.compile(r"^\s*(?:B|bytes|\u0431\u0430\u0439\u0442\w*)\b")
_ARITH_ROLE_NAME = {"base": "target", "main": "target", "drafter": "draft", "attn": "attention",
                    "linear attention": "gdn", "linear-attention": "gdn"}


def arithmetic_page_sizes(text: str) -> dict[str, int]:
    """``<role>_page_size`` for each role a line's own arithmetic ends on a page size (see ``_ARITH_ROLE``): the last
    number of the role's clause that is a result (after ``=``, ``->``, ``:``, before ``B``/``bytes``, or a large
    table cell) and no factor, token count or per-token size."""
    out: dict[str, int] = {}
    if not _ARITH_CONTEXT.search(text):
        return out
    roles = list(_ARITH_ROLE.finditer(text))
    for i, m in enumerate(roles):
        end = roles[i + 1].start() if i + 1 < len(roles) else len(text)
        clause = text[m.end():end]
        stop = re.search(r"[.;](?:\s|$)|\(\s*(?:mamba|padded)", clause)
        clause = clause[:stop.start()] if stop else clause
        best = None
        for n in _ARITH_NUM.finditer(clause):
            value = int(n.group(1).replace(",", ""))
            before, after = clause[max(0, n.start() - 12):n.start()], clause[n.end():n.end() + 12]
            if value < 1024 or _ARITH_NOT_PAGE_BEFORE.search(before) or _ARITH_NOT_PAGE_AFTER.match(after):
                continue
            if _ARITH_RESULT_BEFORE.search(before) or _ARITH_RESULT_AFTER.match(after) or value >= 4096:
                best = value
        if best is not None:
            word = next(g for g in m.groups() if g).lower()
            word = "draft" if word.startswith(("draft", "eagle")) else _ARITH_ROLE_NAME.get(word, word)
            out.setdefault(f"{word}_page_size", best)
    return out

