"""What each hook does: read vLLM's objects, hand ``vllm_diag.model`` rows to the recorder, annotate
exceptions. Version differences live in ``probes/adapters``; this module only duck-types.

Contract of every wrapper: call the original with the same arguments and return its result
unchanged; the probe's own work runs in ``try/except`` blocks that log one line and switch the
failing part off (``_guard``); an exception *from vLLM* gets notes added (``add_note``) and
propagates as the same object.
"""

from __future__ import annotations

import re
import sys
import threading
import time
import traceback
from typing import Any, Callable

from vllm_diag.model import ErrorRecord

from . import extract
from .recorder import Recorder, log_once_line

_RECORDED = "__vllm_diag_recorded__"
ERROR_FLUSH_TIMEOUT_S = 10.0
_SHAPE_MISMATCH = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)"
                             r"(?: at non-singleton dimension (\d+))?")
_INDEX_OOB = re.compile(r"index (-?\d+) is out of bounds for dimension (\d+) with size (\d+)")
_NUMBERS_IN_SHAPE_MSG = re.compile(r"\[(\d+(?:,\s*\d+)*)\]|\((\d+)\)")


class Probe:
    def __init__(self, recorder: Recorder, version: str, planning_rows: bool = True):
        self.rec = recorder
        # Workers also plan a throwaway KV cache for CUDA-graph profiling (0.19+); their specs and
        # groups would duplicate the EngineCore's rows, so workers record them only on failure.
        self.planning_rows = planning_rows
        self.version = version
        self.tls = threading.local()
        self.step_index = 0
        self.draft_names: set[str] = set()
        self.disabled: set[str] = set()
        self._signatures: set[tuple] = set()
        self._groups_recorded = False
        self.block_tables: list = []
        self.buffers: list = []
        self.layer_specs: dict[str, Any] = {}
        self._builder_groups: dict[int, int | None] = {}
        self._builder_steps: dict[type, int] = {}
        self._wrapped_builders: set[type] = set()
        self.last_step = None
        self._builder_rows: dict[type, Any] = {}
        # Which failures this process diagnoses (vllm_diag.live): "engine" in the process that runs
        # the EngineCore (every failure, and at engine stop), "config" in an API-server/LLM process
        # whose engine runs elsewhere (only a configuration vLLM rejects before any EngineCore
        # exists), None in workers: one diagnosis per engine, not one per rank.
        self.diagnose_on: str | None = None
        self.prompt_lens: dict[str, int] = {}  # request id -> prompt length, for the step split

    def reset_after_fork(self) -> None:
        """Per-process state starts empty in a forked child (the wrappers stay installed)."""
        self.tls = threading.local()
        self.step_index = 0
        self.disabled = set()
        self._signatures = set()
        self._groups_recorded = False
        self.block_tables, self.buffers, self.layer_specs = [], [], {}
        self.prompt_lens = {}
        self._builder_groups, self._builder_steps, self._builder_rows = {}, {}, {}

    # ------------------------------------------------------------------ helpers

    def _guard(self, part: str, fn: Callable, *args: Any) -> Any:
        """Run probe code; on failure log once and switch ``part`` off (never raise)."""
        if part in self.disabled or not self.rec.enabled:
            return None
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001
            self.disabled.add(part)
            log_once_line(f"vllm-diag: probe '{part}' failed ({exc.__class__.__name__}: {exc}); it steps aside")
            return None

    def db_hint(self) -> str:
        db, sid = self.rec.db_path, self.rec.session.id
        return f"recorded in {db} (session {sid}, pid {self.rec.pid}); see `vllm-diag show {db} {sid}`"

    def _record_error(self, exc: BaseException, phase: str, notes: list[str], numbers: dict[str, Any]) -> None:
        """Record ``exc`` once (the innermost hook that sees it wins) and add our notes to it."""
        if getattr(exc, _RECORDED, False):
            return
        try:
            setattr(exc, _RECORDED, True)
        except Exception:
            pass
        notes = [n for n in notes if n]
        if isinstance(exc, AssertionError) and not str(exc):
            try:
                assert_note, values = bare_assert_details(exc)
            except Exception:  # noqa: BLE001
                assert_note, values = None, {}
            if assert_note:
                notes.insert(0, assert_note)
                numbers = {**numbers, "assert_values": values}
        if self.rec.enabled:
            notes.append(f"vllm-diag: {self.db_hint()}")
        for note in notes:
            try:
                exc.add_note(note)
            except Exception:
                pass
        if not self.rec.enabled:
            return
        try:
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            self.rec.add_error(
                ErrorRecord(
                    exc_type=_exc_type(exc),
                    message=str(exc),
                    phase=phase,
                    traceback=tb,
                    notes=notes,
                    numbers=extract.plain(numbers),
                    location=_location(exc),
                    at=time.time(),
                )
            )
        except Exception as err:  # noqa: BLE001
            log_once_line(f"vllm-diag: could not record {type(exc).__name__} ({err})")
            return
        if self.diagnose_on == "engine" or (self.diagnose_on == "config" and phase == "config"):
            self.rec.request_diagnosis("failure")
        # The error (and the rows before it) reach the file before the exception travels on: a
        # worker's failure is then on disk when the EngineCore, woken by it, diagnoses the engine;
        # and a process that dies of it loses nothing. Bounded; the engine is failing anyway.
        self.rec.flush(ERROR_FLUSH_TIMEOUT_S)

    def _spec_signature(self, stage: str, specs: dict[str, Any]) -> tuple:
        sig = []
        for name, s in specs.items():
            page, _ = extract.page_size(s)
            sig.append((name, type(s).__name__, extract.safe_attr(s, "block_size"), page,
                        extract.safe_attr(s, "page_size_padded")))
        return (stage, tuple(sig))

    def record_specs(self, specs: Any, stage: str, extra: dict[str, Any] | None = None) -> bool:
        if not isinstance(specs, dict):
            return False
        sig = self._spec_signature(stage, specs)
        if sig in self._signatures:
            return False
        self._signatures.add(sig)
        rows = extract.layer_specs(specs, stage, self.draft_names)
        if extra:
            for r in rows:
                r.extra.update(extra)
        if stage == "layer":
            self.layer_specs = dict(specs)
        self.rec.add_rows("layer_specs", rows)
        return True

    # ------------------------------------------------------------------ KV planning

    def wrap_executor_specs(self, orig: Callable) -> Callable:
        probe = self

        def get_kv_cache_specs(self_, *args, **kwargs):
            out = orig(self_, *args, **kwargs)
            probe._guard("executor_specs", probe._on_executor_specs, out)
            return out

        return get_kv_cache_specs

    def _on_executor_specs(self, out: Any) -> None:
        if isinstance(out, (list, tuple)) and out:
            first = out[0]
            differs = [i for i, s in enumerate(out[1:], 1) if self._spec_signature("x", s) != self._spec_signature("x", first)]
            extra = {"num_workers": len(out)}
            if differs:
                extra["workers_with_other_specs"] = differs
            self.record_specs(first, "layer", extra)
            self.rec.flush_soon()

    def wrap_get_kv_cache_groups(self, orig: Callable) -> Callable:
        probe = self

        def get_kv_cache_groups(*args, **kwargs):
            # (vllm_config, kv_cache_spec) -- or (builder, vllm_config, kv_cache_spec) for 0.33's
            # get_kv_cache_groups_from_builder: the spec dict is the dict argument
            specs = kwargs.get("kv_cache_spec", next((a for a in args if isinstance(a, dict)), None))
            depth = getattr(probe.tls, "groups_depth", 0)
            probe.tls.groups_depth = depth + 1
            if depth == 0:
                probe.tls.unify_called = False
                if probe.planning_rows:
                    probe._guard("groups", probe.record_specs, specs, "layer")
            try:
                groups = orig(*args, **kwargs)
            except BaseException as exc:
                if depth == 0:
                    if not probe.planning_rows:
                        probe._guard("groups", probe.record_specs, specs, "layer")
                    probe._record_error(exc, probe._phase(), [], {"num_layers": len(specs or {}) if isinstance(specs, dict) else None})
                raise
            finally:
                probe.tls.groups_depth = depth
            if depth == 0 and probe.planning_rows:
                probe._guard("groups", probe._on_groups, specs, groups)
            return groups

        return get_kv_cache_groups

    def _on_groups(self, specs: Any, groups: Any) -> None:
        if not getattr(self.tls, "unify_called", False) and isinstance(specs, dict):
            self.record_specs(specs, "unified", {"unify": "not called (uniform page size or single-type group)"})
        sig = ("groups", tuple((tuple(extract.safe_attr(g, "layer_names", ()) or ()), type(extract.safe_attr(g, "kv_cache_spec")).__name__,
                                extract.safe_attr(extract.safe_attr(g, "kv_cache_spec"), "block_size")) for g in groups or ()))
        if sig in self._signatures:
            return
        self._signatures.add(sig)
        self._groups_recorded = True
        self.rec.add_rows("kv_cache_groups", extract.kv_cache_groups(groups, self.draft_names))
        self.rec.flush_soon()

    def wrap_unify(self, orig: Callable) -> Callable:
        probe = self

        def unify_kv_cache_spec_page_size(*args, **kwargs):
            specs = kwargs.get("kv_cache_spec", args[0] if args else None)
            probe.tls.unify_called = True
            if probe.planning_rows:
                probe._guard("unify", probe.record_specs, specs, "layer")
            try:
                out = orig(*args, **kwargs)
            except BaseException as exc:
                if not probe.planning_rows:
                    probe._guard("unify", probe.record_specs, specs, "layer")
                probe._on_unify_error(exc, specs)
                raise
            if probe.planning_rows:
                probe._guard("unify", probe._on_unify_out, specs, out)
            return out

        return unify_kv_cache_spec_page_size

    def _on_unify_out(self, specs: Any, out: Any) -> None:
        if not isinstance(out, dict):
            return
        pages = {extract.page_size(s)[0] for s in out.values()}
        extra = {"unified_page_size": max(p for p in pages if p is not None) if pages - {None} else None}
        if isinstance(specs, dict):
            extra["changed_layers"] = sorted(n for n in out if n in specs and out[n] != specs[n])
        self.record_specs(out, "unified", extra)
        self.rec.flush_soon()

    def _on_unify_error(self, exc: BaseException, specs: Any) -> None:
        try:
            numbers, note = unify_failure_details(exc, specs)
        except Exception as err:  # noqa: BLE001
            numbers, note = {}, f"vllm-diag: could not read the unify state ({err.__class__.__name__})"
        self._record_error(exc, self._phase(), [note], numbers)
        self.rec.flush_soon()

    def _phase(self) -> str:
        return "profile" if getattr(self.tls, "profiling", False) else "init"

    # ------------------------------------------------------------------ engine core

    def wrap_initialize_kv_caches(self, orig: Callable) -> Callable:
        probe = self

        def _initialize_kv_caches(self_, vllm_config, *args, **kwargs):
            probe._guard("config", probe.record_config, vllm_config)
            try:
                out = orig(self_, vllm_config, *args, **kwargs)
            except BaseException as exc:
                probe._record_error(exc, "init", [], {})
                probe.rec.flush_soon()
                raise
            probe._guard("config", probe._after_kv_init, vllm_config, out)
            return out

        return _initialize_kv_caches

    def record_config(self, vllm_config: Any, extra: dict[str, Any] | None = None) -> None:
        cfg = extract.engine_config(vllm_config, self.version)
        if extra:
            cfg.update(extra)
        self.rec.set_items("engine_config", cfg)
        self.rec.update_session(model=cfg.get("model"), architecture=cfg.get("architecture"))

    def _after_kv_init(self, vllm_config: Any, kv_cache_config: Any) -> None:
        extra = {}
        nb = extract.safe_attr(kv_cache_config, "num_blocks")
        if isinstance(nb, int):
            extra["kv_cache_num_blocks"] = nb
        self.record_config(vllm_config, extra)
        groups = extract.safe_attr(kv_cache_config, "kv_cache_groups")
        if groups is not None and not self._groups_recorded:
            self._on_groups(None, groups)
        self.rec.flush_soon()

    def _diagnose_after(self, orig: Callable, diagnose_on: str, reason: str, flush_always: bool) -> Callable:
        """``orig``, then (even when it raises) the live diagnosis for ``reason`` where this process
        diagnoses ``diagnose_on``, and a flush."""
        probe = self

        def method(*args, **kwargs):
            try:
                return orig(*args, **kwargs)
            finally:
                mine = probe.diagnose_on == diagnose_on
                if mine:
                    probe._guard("flush", probe.rec.request_diagnosis, reason)
                if mine or flush_always:
                    probe._guard("flush", probe.rec.flush, 10.0)

        return method

    def wrap_step_failure(self, orig: Callable) -> Callable:
        """vLLM's crash dump (``dump_engine_exception``), called in the EngineCore inside the ``except`` of a
        failed step: the step's error as the EngineCore sees it (``Worker failed with error ...`` when the
        model runs in worker processes) is recorded there, which diagnoses the engine at once -- vLLM may
        kill this process while it waits for its workers, before the diagnosis at its stop."""
        probe = self

        def dump_engine_exception(*args, **kwargs):
            try:
                return orig(*args, **kwargs)
            finally:
                exc = sys.exc_info()[1]
                if isinstance(exc, Exception):
                    probe._guard("step_failure", probe._record_error, exc, "step", [], {})

        return dump_engine_exception

    def wrap_flush_after(self, orig: Callable) -> Callable:
        """EngineCore.shutdown: the engine stops -- diagnose it (live rules) and flush."""
        return self._diagnose_after(orig, "engine", "stop", flush_always=True)

    def wrap_engine_stopped(self, orig: Callable) -> Callable:
        """CoreEngineProcManager.shutdown in the API server / LLM process: the EngineCore processes
        are gone when it returns (terminated, or killed when their grace period ran out). An
        EngineCore killed before its own diagnosis at stop is diagnosed here, still once per engine."""
        return self._diagnose_after(orig, "config", "frontend-exit", flush_always=False)

    def wrap_config_build(self, orig: Callable) -> Callable:
        """EngineArgs.create_engine_config: a configuration vLLM rejects is recorded (with what the
        user asked for) in the process that asked, before any EngineCore exists."""
        probe = self

        def create_engine_config(self_, *args, **kwargs):
            try:
                return orig(self_, *args, **kwargs)
            except BaseException as exc:
                if not isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    requested = probe._guard("config", extract.requested_config, self_) or {}
                    if requested:
                        probe.rec.set_items("engine_config", requested)
                        probe.rec.update_session(model=requested.get("model"), architecture=requested.get("architecture"))
                    probe._record_error(exc, "config", [], {"requested": requested})
                raise

        return create_engine_config

    def wrap_idle_flush(self, orig: Callable) -> Callable:
        """EngineCoreProc's input wait: when the engine is about to go idle with steps still in
        the buffer, flush them now (the engine has nothing else to do), so a process that vLLM
        terminates right after its last request has everything on disk."""
        probe = self

        def _process_input_queue(self_, *args, **kwargs):
            rec = probe.rec
            if rec.enabled and rec._steps:
                try:
                    if not self_.has_work():
                        rec.flush(2.0)
                except Exception:  # noqa: BLE001
                    pass
            return orig(self_, *args, **kwargs)

        return _process_input_queue

    def wrap_phase(self, phase: str) -> Callable[[Callable], Callable]:
        """Factory for hooks that only record errors (e.g. model load)."""
        probe = self

        def factory(orig: Callable) -> Callable:
            def method(*args, **kwargs):
                try:
                    return orig(*args, **kwargs)
                except BaseException as exc:
                    probe._record_error(exc, phase, [], {})
                    raise

            return method

        return factory

    # ------------------------------------------------------------------ worker / model runner

    def wrap_runner_kv_spec(self, orig: Callable) -> Callable:
        probe = self

        def get_kv_cache_spec(self_, *args, **kwargs):
            try:
                out = orig(self_, *args, **kwargs)
            except BaseException as exc:
                probe._record_error(exc, "init", [], {})
                raise
            probe._guard("runner_specs", probe._on_runner_specs, self_, out)
            return out

        return get_kv_cache_spec

    def _on_runner_specs(self, runner: Any, specs: Any) -> None:
        self._collect_draft_names(runner)
        if isinstance(specs, dict):
            self.layer_specs = dict(specs)

    def _collect_draft_names(self, runner: Any) -> None:
        for holder in (extract.safe_attr(runner, "drafter"), extract.safe_attr(runner, "speculator")):
            for attr in ("_draft_attn_layer_names", "draft_attn_layer_names", "attn_layer_names"):
                names = extract.safe_attr(holder, attr)
                if isinstance(names, (set, list, tuple, frozenset)):
                    self.draft_names.update(str(n) for n in names)

    def wrap_runner_initialize_kv_cache(self, orig: Callable) -> Callable:
        probe = self

        def initialize_kv_cache(self_, kv_cache_config, *args, **kwargs):
            depth = getattr(probe.tls, "init_depth", 0)
            profiling = bool(kwargs.get("is_profiling", args[0] if args and isinstance(args[0], bool) else False))
            if not profiling and depth == 0:
                profiling = _called_from("_init_minimal_kv_cache_for_profiling")
            probe.tls.init_depth = depth + 1
            prev_profiling = getattr(probe.tls, "profiling", False)
            probe.tls.profiling = profiling or prev_profiling
            try:
                out = orig(self_, kv_cache_config, *args, **kwargs)
            except BaseException as exc:
                probe._record_error(exc, "profile" if profiling else "init", [], {})
                raise
            finally:
                probe.tls.init_depth = depth
                probe.tls.profiling = prev_profiling
            if depth == 0:
                # the profiling cache too: CUDA-graph capture on it is where shape mismatches fail
                probe._guard("block_tables", probe._after_runner_kv_init, self_, kv_cache_config,
                             "profile" if profiling else "init")
            return out

        return initialize_kv_cache

    def _after_runner_kv_init(self, runner: Any, kv_cache_config: Any, phase: str = "init") -> None:
        """Block tables and builder buffers as soon as the runner has built them -- for the
        minimal KV cache of CUDA-graph memory profiling (``phase="profile"``, vLLM 0.19+) and
        again for the serving cache (``"init"``) -- and on disk before capture runs on them."""
        self._collect_draft_names(runner)
        self._update_rank()
        tables = extract.block_tables(runner, self.version, phase)
        buffers, scalars = extract.builder_buffers(runner, self.version, phase)
        self.block_tables, self.buffers = tables, buffers
        self.rec.add_rows("block_tables", tables)
        self.rec.add_rows("builder_buffers", buffers)
        cc = extract.safe_attr(runner, "cache_config")
        comp = extract.dig(runner, "vllm_config.compilation_config")
        worker_cfg = {
            # the worker's own view: hybrid alignment (0.20+) happens here, not in the engine core
            "mamba_page_size_padded": extract.safe_attr(cc, "mamba_page_size_padded"),
            "mamba_block_size": extract.safe_attr(cc, "mamba_block_size"),
            "worker_block_size": extract.safe_attr(cc, "block_size"),
            "worker_num_blocks": extract.safe_attr(kv_cache_config, "num_blocks"),
            "cudagraph_capture_sizes": extract.plain(extract.safe_attr(comp, "cudagraph_capture_sizes")),
            "max_cudagraph_capture_size": extract.safe_attr(comp, "max_cudagraph_capture_size"),
            "cudagraph_mode": extract.plain(extract.safe_attr(comp, "cudagraph_mode")),
            "runner_class": type(runner).__name__,
        }
        if scalars:
            worker_cfg["builder_limits"] = scalars
            bs = {k: v["decode_cudagraph_max_bs"] for k, v in scalars.items() if "decode_cudagraph_max_bs" in v}
            if bs:
                worker_cfg["decode_cudagraph_max_bs"] = bs
        ksz = extract.safe_attr(runner, "_kernel_block_sizes")
        if ksz is not None:
            worker_cfg["kernel_block_sizes"] = extract.plain(ksz)
        if self.draft_names:
            worker_cfg["draft_layer_names"] = sorted(self.draft_names)
        self.rec.set_items("engine_config", {k: v for k, v in worker_cfg.items() if v is not None})
        if phase == "init":
            self._wrap_builders(runner)
        self.rec.flush(5.0)

    def _update_rank(self) -> None:
        rank = None
        try:
            from vllm.distributed import parallel_state as ps

            group = getattr(ps, "_WORLD", None)
            if group is not None:
                rank = group.rank
        except Exception:
            rank = None
        role = self.rec.process.role
        if role in ("other",):
            role = "worker"
        self.rec.update_process(rank=rank, role=role)

    def _wrap_builders(self, runner: Any) -> None:
        from .adapters.common import wrap_attr

        for gi, b in extract.iter_builders(runner):
            self._builder_groups[id(b)] = gi
            cls = type(b)
            if cls in self._wrapped_builders:
                continue
            self._wrapped_builders.add(cls)
            owner = next((k for k in cls.__mro__ if "build" in k.__dict__), None)
            if owner is not None and owner is not object:
                if owner is not cls:
                    # wrap on the concrete class so siblings sharing a base are told apart
                    setattr(cls, "build", owner.__dict__["build"])
                wrap_attr(cls, "build", self.wrap_build)

    def wrap_build(self, orig: Callable) -> Callable:
        probe = self

        def build(self_, *args, **kwargs):
            md = orig(self_, *args, **kwargs)
            cls = type(self_)
            step = probe.step_index
            if (probe._builder_steps.get(cls) != step and "build" not in probe.disabled and probe.rec.enabled
                    and not getattr(probe.tls, "warmup", False)):
                probe._builder_steps[cls] = step
                try:
                    row = extract.step_from_metadata(step, cls.__name__, probe._builder_groups.get(id(self_)), md, time.time())
                    if row is not None:
                        probe.rec.add_step(row)
                        probe._builder_rows[cls] = row
                except Exception as exc:  # noqa: BLE001
                    probe.disabled.add("build")
                    log_once_line(f"vllm-diag: probe 'build' failed ({exc}); it steps aside")
            return md

        return build

    def wrap_runner_phase(self, phase: str) -> Callable[[Callable], Callable]:
        """Factory for runner methods whose failures need the runner's shapes: CUDA-graph capture
        (``capture_model``) and memory profiling (``profile_run``, ``profile_cudagraph_memory``).
        On failure the note lists the block tables / builder tensors *of that moment* (e.g. the
        minimal profiling KV cache) whose size matches the mismatch."""
        probe = self

        def factory(orig: Callable) -> Callable:
            def method(self_, *args, **kwargs):
                try:
                    return orig(self_, *args, **kwargs)
                except BaseException as exc:
                    if not isinstance(exc, (KeyboardInterrupt, SystemExit)) and not getattr(exc, _RECORDED, False):
                        notes, numbers = [], {}
                        try:
                            tables = extract.block_tables(self_, probe.version) or probe.block_tables
                            buffers = extract.builder_buffers(self_)[0] or probe.buffers
                            numbers["block_tables"] = [extract.plain(t) for t in tables]
                            numbers["builder_buffers"] = [extract.plain(b) for b in buffers]
                            note, match = shape_mismatch_details(str(exc), tables, buffers)
                            if note:
                                notes.append(note)
                                numbers.update(match)
                        except Exception:  # noqa: BLE001
                            pass
                        probe._record_error(exc, phase, notes, numbers)
                        probe.rec.flush_soon()
                    raise

            return method

        return factory

    def wrap_warmup(self, orig: Callable) -> Callable:
        """Model Runner V2's kernel warm-up runs ``execute_model`` on synthetic scheduler outputs
        (vLLM 0.26 gpu/warmup.py): those are not the engine's steps, so they are not recorded."""
        probe = self

        def warmup(*args, **kwargs):
            prev = getattr(probe.tls, "warmup", False)
            probe.tls.warmup = True
            try:
                return orig(*args, **kwargs)
            finally:
                probe.tls.warmup = prev

        return warmup

    def wrap_execute_model(self, orig: Callable) -> Callable:
        probe = self

        def execute_model(self_, scheduler_output, *args, **kwargs):
            step = None
            if (probe.rec.enabled and "steps" not in probe.disabled and not kwargs.get("dummy_run")
                    and not getattr(probe.tls, "warmup", False)):
                try:
                    if scheduler_output.total_num_scheduled_tokens:
                        probe.step_index += 1
                        step = extract.step_from_scheduler_output(probe.step_index, scheduler_output, None, time.time(),
                                                                  probe.prompt_lens)
                        probe.rec.add_step(step)
                except Exception as exc:  # noqa: BLE001
                    probe.disabled.add("steps")
                    log_once_line(f"vllm-diag: probe 'steps' failed ({exc.__class__.__name__}: {exc}); it steps aside")
            if step is not None:
                probe.last_step = step
            try:
                return orig(self_, scheduler_output, *args, **kwargs)
            except BaseException as exc:
                probe._on_step_error(exc, step)
                raise

        return execute_model

    def wrap_sample_tokens(self, orig: Callable) -> Callable:
        """The second half of a step since vLLM split it (``sample_tokens``: sampling, and the drafter's proposals
        for the next step): an error there -- an asynchronous fault surfacing at its sync, a drafter's own -- is the
        step's error, recorded with the batch ``execute_model`` saw."""
        probe = self

        def sample_tokens(*args, **kwargs):
            try:
                return orig(*args, **kwargs)
            except BaseException as exc:
                if not getattr(probe.tls, "warmup", False):
                    probe._on_step_error(exc, probe.last_step)
                raise

        return sample_tokens

    def _on_step_error(self, exc: BaseException, step: Any) -> None:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            return
        numbers: dict[str, Any] = {}
        notes: list[str] = []
        try:
            if step is not None:
                numbers["step"] = extract.plain(step)
                notes.append(
                    f"vllm-diag: step {step.step_index}: {step.num_reqs} requests = {step.num_prefills} prefills "
                    f"({step.num_prefill_tokens} tokens), {step.num_decodes} decodes, {step.num_spec_decodes} spec decodes "
                    f"({step.num_spec_decode_tokens} tokens{', drafts ' + str(step.spec_tokens_per_req) if step.spec_tokens_per_req else ''})"
                )
            if step is not None:
                seen = [extract.plain(r) for r in self._builder_rows.values() if r.step_index == step.step_index]
                if seen:
                    numbers["builder_steps"] = seen
            if self.block_tables:
                numbers["block_tables"] = [extract.plain(t) for t in self.block_tables]
            match_note, match_numbers = shape_mismatch_details(str(exc), self.block_tables, self.buffers)
            if match_note:
                notes.append(match_note)
                numbers.update(match_numbers)
        except Exception:  # noqa: BLE001
            pass
        self._record_error(exc, "step", notes, numbers)


# ---------------------------------------------------------------------------------------------


def _exc_type(exc: BaseException) -> str:
    t = type(exc)
    mod = t.__module__
    return t.__qualname__ if mod in ("builtins", "__main__") else f"{mod}.{t.__qualname__}"


def _location(exc: BaseException) -> str | None:
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return f"{code.co_filename}:{tb.tb_lineno} in {code.co_name}"


def _called_from(func_name: str, limit: int = 6) -> bool:
    try:
        f = sys._getframe(2)
    except ValueError:
        return False
    for _ in range(limit):
        if f is None:
            return False
        if f.f_code.co_name == func_name:
            return True
        f = f.f_back
    return False


def _frame_locals(exc: BaseException, func_name: str) -> dict[str, Any] | None:
    tb = exc.__traceback__
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_name == func_name:
            found = tb.tb_frame.f_locals
        tb = tb.tb_next
    return found


_NAME = re.compile(r"(?<![\w.'\"])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
_KEYWORDS = {"assert", "and", "or", "not", "is", "in", "None", "True", "False", "if", "else", "lambda", "len", "max",
             "min", "all", "any", "isinstance", "self"}


def _simple(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value if len(value) <= 200 else value[:200] + "..."
    if isinstance(value, (tuple, list)) and len(value) <= 16 and all(isinstance(v, (int, float, str, bool)) for v in value):
        return list(value)
    if type(value).__name__ == "Size":  # torch.Size
        return [int(v) for v in value]
    if type(value).__name__ == "dtype":
        return extract.dtype_name(value)
    return _NOT_SIMPLE


_NOT_SIMPLE = object()


def bare_assert_details(exc: BaseException) -> tuple[str | None, dict[str, Any]]:
    """For a bare ``assert`` (no message): the assert's source line and the values of the names and
    attribute chains in it, read from the failing frame (e.g. ``self.page_size_padded`` and
    ``page_size`` for ``assert self.page_size_padded >= page_size``)."""
    import linecache

    tb = exc.__traceback__
    if tb is None:
        return None, {}
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    line = linecache.getline(frame.f_code.co_filename, tb.tb_lineno).strip()
    if not line.startswith("assert"):
        return None, {}
    values: dict[str, Any] = {}
    for dotted in _NAME.findall(line):
        parts = dotted.split(".")
        if parts[0] in _KEYWORDS and len(parts) == 1:
            continue
        if parts[0] in frame.f_locals:
            obj = frame.f_locals[parts[0]]
        elif parts[0] in frame.f_globals:
            continue  # module-level names (functions, classes): not values
        else:
            continue
        for i, part in enumerate(parts[1:], 1):
            obj = extract.safe_attr(obj, part, _NOT_SIMPLE)
            if obj is _NOT_SIMPLE:
                break
            if _simple(obj) is not _NOT_SIMPLE:
                values[".".join(parts[: i + 1])] = _simple(obj)
        if len(parts) == 1 and _simple(obj) is not _NOT_SIMPLE:
            values[dotted] = _simple(obj)
        elif len(parts) == 1 and obj is not None:
            values[dotted] = type(obj).__name__
    if not values:
        return None, {}
    shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
    return f"vllm-diag: `{line}` failed with {shown}", values


def unify_failure_details(exc: BaseException, specs: Any) -> tuple[dict[str, Any], str]:
    """Numbers behind a failed ``unify_kv_cache_spec_page_size`` and a one-paragraph note.

    Reads the failing frame's locals (``layer_name``, ``layer_spec``, ``new_spec``,
    ``max_page_size``) -- exactly what the bare ``assert new_spec.page_size_bytes == max_page_size``
    does not print -- and falls back to recomputing from the input specs.
    """
    loc = _frame_locals(exc, "unify_kv_cache_spec_page_size") or {}
    pages: dict[str, int | None] = {}
    for name, s in (specs or {}).items():
        pages[name] = extract.page_size(s)[0]
    known = [p for p in pages.values() if p is not None]
    max_page = loc.get("max_page_size", max(known) if known else None)
    layer = loc.get("layer_name")
    layer_spec = loc.get("layer_spec")
    new_spec = loc.get("new_spec")
    if layer is None:
        smaller = [n for n, p in pages.items() if p is not None and max_page is not None and p != max_page]
        layer = smaller[0] if smaller else None
        layer_spec = (specs or {}).get(layer) if layer else None
    numbers: dict[str, Any] = {
        "max_page_size": max_page,
        "page_sizes": pages,
        "offending_layer": layer,
        "max_page_layers": sorted(n for n, p in pages.items() if p == max_page),
    }
    if layer_spec is not None:
        numbers["offending_spec_type"] = type(layer_spec).__name__
        numbers["offending_page_size"] = extract.page_size(layer_spec)[0]
        numbers["offending_block_size"] = extract.safe_attr(layer_spec, "block_size")
        numbers["offending_page_size_padded"] = extract.safe_attr(layer_spec, "page_size_padded")
    if new_spec is not None and new_spec is not layer_spec:
        numbers["new_block_size"] = extract.safe_attr(new_spec, "block_size")
        numbers["new_page_size"] = extract.page_size(new_spec)[0]
        numbers["new_page_size_padded"] = extract.safe_attr(new_spec, "page_size_padded")
    by_page: dict[Any, list[str]] = {}
    for n, p in pages.items():
        by_page.setdefault(p, []).append(n)
    summary = "; ".join(
        f"{p} B: {len(ns)} layer{'s' if len(ns) != 1 else ''} ({', '.join(ns[:3])}{', ...' if len(ns) > 3 else ''})"
        for p, ns in sorted(by_page.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))
    )
    parts = [f"vllm-diag: unify_kv_cache_spec_page_size failed on layer {layer!r}"]
    if layer_spec is not None:
        parts.append(f" ({numbers['offending_spec_type']}, page {numbers['offending_page_size']} B, block_size {numbers['offending_block_size']})")
    if "new_page_size" in numbers:
        parts.append(
            f": after the rewrite its page is {numbers['new_page_size']} B (block_size {numbers['new_block_size']}, "
            f"page_size_padded {numbers['new_page_size_padded']})"
        )
    parts.append(f", but the largest page is {max_page} B (layers {', '.join(numbers['max_page_layers'][:3])})")
    if numbers.get("offending_spec_type") == "MambaSpec" and "new_block_size" in numbers:
        parts.append(". A MambaSpec page comes from its state shapes, not block_size, so scaling block_size cannot reach the maximum")
    parts.append(f". Page sizes: {summary}.")
    return numbers, "".join(parts)


def shape_mismatch_details(message: str, tables: list, buffers: list) -> tuple[str | None, dict[str, Any]]:
    """For ``size of tensor a (X) must match the size of tensor b (Y)`` errors: the block tables and
    builder buffers of this process that have a dimension X or Y."""
    m = _SHAPE_MISMATCH.search(message)
    oob = _INDEX_OOB.search(message) if not m else None
    if not m and not oob:
        return None, {}
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        dim = int(m.group(3)) if m.group(3) else None
        sizes = {a, b}
        numbers: dict[str, Any] = {"tensor_a_size": a, "tensor_b_size": b, "dimension": dim}
        what = f"shape mismatch {a} vs {b}" + (f" (dimension {dim})" if dim is not None else "")
    else:
        idx, dim, size = int(oob.group(1)), int(oob.group(2)), int(oob.group(3))
        sizes = {size}
        numbers = {"index": idx, "dimension": dim, "size": size}
        what = f"index {idx} out of bounds for a dimension of size {size}"
    hits = []
    for t in tables:
        if sizes & {t.rows, t.columns}:
            hits.append(f"block table of group {t.group_index} [{t.rows}, {t.columns}] ({t.derivation})")
    for buf in buffers:
        if sizes & set(buf.shape):
            hits.append(f"{buf.builder}.{buf.name} {list(buf.shape)} (group {buf.group_index})")
    numbers["matching_tensors"] = hits
    if not hits:
        return f"vllm-diag: {what}; no recorded block table or builder buffer has a dimension of that size", numbers
    return f"vllm-diag: {what}; recorded tensors with a dimension of that size: " + "; ".join(hits[:8]), numbers
