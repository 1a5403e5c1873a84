"""A log's root error matched to vLLM's own failure sites (the catalog): the diagnosis from a matched site,
the category of the innermost vLLM frames by the catalog's rules, and the weak hint of a function's sites."""

from __future__ import annotations

import re
from typing import Any

from ..model import Evidence, LogException, LogFacts
from ..rules.workspace_locked import attention_allocation
from .configuration import GEMM_FRAMES, HYBRID_FRAMES, MLA_FRAMES, REQUEST_COUNT_CHECK, Setup, precondition_fails
from .diagnosis import Diagnosis, exc_evidence, title_of

TOKEN_COUNT_CHECK = re.compile(r"num_decode_tokens|num_decodes|num_tokens|num_reqs|num_requests|num_actual_tokens|"
                                r"q\.shape\[0\]|query|seq_lens|block_table|batch|rows|topk_lens|next_n|q_len|"
                                r"token_to_req|decode_lens", re.I)
MODEL_SHAPE_CHECK = re.compile(r"dtype|device|contiguous|stride|heads|head_dim|ndim|\.dim\(\)|hidden|compress_ratio|"
                                r"kv_lora|rope|quant|scale", re.I)


_PYDANTIC_HEAD = re.compile(r"^\d+ validation errors? for \w+$")
_PYDANTIC_ITEM = re.compile(r"^(?:Value error|Assertion failed),\s*|\s*\[type=\w+.*$")
_SHAPE_TUPLE = re.compile(r"\((\d+(?:\s*,\s*\d+)+)\)")


def _rows_differ(message: str) -> bool:
    """A shape check whose message prints the shape it got and the one it expected, alike in their trailing (model)
    dimensions and different in the leading ones -- the rows (tokens, requests) disagree, not the model's heads:
    "LSE shape: (16, 3, 32), expected (46, 32)"."""
    tuples = [[int(x) for x in m.group(1).split(",")] for m in _SHAPE_TUPLE.finditer(message[:400])]
    if len(tuples) < 2:
        return False
    got, want = tuples[0], tuples[1]
    return got[-1] == want[-1] and got[:-1] != want[:-1]


def site_text(site) -> str:
    if site.kind == "assert":
        what = f"assert {site.condition}" + (f", \"{site.message[:120]}\"" if site.message else "")
    elif site.kind == "kernel":
        what = f"check {site.condition or site.message}"
    else:
        what = f"raise {site.exc}" + (f"(\"{site.message[:120]}\")" if site.message else "")
    return what


def frame_category(exc: LogException, message: str) -> tuple[str, str, Any] | None:
    """The category of the innermost vLLM frames (the catalog's rules), with the frame that decided."""
    from ..catalog.categorize import categorize
    from ..catalog.match import vllm_path

    frames = list(exc.frames)
    seen = 0
    for fr in reversed(frames):
        path = vllm_path(fr.file)
        if not ("vllm/" in path or path.count("/") <= 2):  # torch / triton / site-packages internals
            continue
        seen += 1
        if seen > 5:
            break
        cat, rid = categorize({"file": path, "function": fr.function, "condition": fr.code or "",
                               "message": message, "exc": exc.exc_type})
        if cat != "other":
            return cat, rid, fr
        if rid.startswith("other_") and rid not in ("other_type_narrowing", "other_duplicate_layer"):
            return "other", rid, fr
    return None


def function_hint(exc: LogException) -> tuple[str, Any] | None:
    """Sites in the frames' functions: the category most of them have (weak)."""
    from ..catalog import load
    from ..catalog.match import vllm_path

    cat = load()
    for depth, fr in enumerate(reversed(exc.frames[-6:])):
        path = vllm_path(fr.file)
        sites = cat.in_function(path, fr.function)
        parent = path.rsplit("/", 2)[-2] if path.count("/") >= 1 else ""
        if parent.strip("."):
            # files of one name in several folders (layers/kda.py, models/<family>/nvidia/kda.py): the frame's own
            sites = [s for s in sites if s.file.rsplit("/", 2)[-2:-1] == [parent]]
        cats: dict[str, int] = {}
        for s in sites:
            if s.category != "other":
                cats[s.category] = cats.get(s.category, 0) + 1
        if cats and sum(cats.values()) * 2 >= len(sites):
            return max(cats, key=cats.get), fr
    return None


_ROW_CHECK = re.compile(r"\bbatch\w*\s*==\s*[\w.]*ind\w*\.(?:shape\[0\]|size\(0\))|"
                        r"[\w.]*ind\w*\.(?:shape\[0\]|size\(0\))\s*==\s*batch\w*\b")
# the state indices' rows checked against the batch's rows (N, batch, padded_batch), either way round
_BARE_ROWS_CHECK = re.compile(r"\w*ind\w*\.(?:shape\[0\]|size\(0\))\s*(?:>=|==)\s*(?:N|\w*batch\w*)\b|"
                              r"\b(?:N|\w*batch\w*)\s*(?:<=|==)\s*\w*ind\w*\.(?:shape\[0\]|size\(0\))|"
                              # causal_conv1d_update's "assert (batch,) == conv_state_indices.shape"
                              r"\(\s*\w*batch\w*\s*,\s*\)\s*==\s*\w*ind\w*\.shape\b")
_EXPECTED_ROWS = re.compile(r"\((\d+),\s*\*\)")
_GOT_2D = re.compile(r"(?:torch\.Size\(\[|\[|\()(\d+),\s*(\d+)(?:\]\)|\]|\))")


_EXPECTED_GOT = re.compile(r"Expected (\d+), got (\d+)")


def _padded_rows(message: str, setup: Setup) -> bool:
    """The request-count check failing with every request of the crash dump's step counted (``Expected`` = its
    requests, spec decodes included) and more state-index rows than that: the rows handed over are padded (a
    CUDA-graph batch), not the step's requests split two ways -- the state indices' rows, not the mixed batch."""
    m = _EXPECTED_GOT.search(message)
    reqs = (setup.batch or {}).get("num_reqs")
    return bool(m and reqs and int(m.group(1)) == reqs and int(m.group(2)) > reqs)


_SELECTED_INVALID = re.compile(r"Selected backend (?:AttentionBackendEnum\.)?(\w+) is not valid for this configuration\. "
                               r"Reason: \[([^\]]*)\]")
_REASONS = re.compile(r"(\w+): \[([^\]]*)\]")


def _backend_refuses_block_size(message: str) -> tuple[list[str], int | None] | None:
    """(backends, block size) when the attention-backend selection failed on the block size: the selected backend's
    reason, or every backend that loaded (not an ImportError) refusing the block size among its reasons."""
    if "block_size not supported" not in message:
        return None
    size = re.search(r"\bblock_size=(\d+)", message)
    m = _SELECTED_INVALID.search(message)
    if m:
        return ([m.group(1)], int(size.group(1)) if size else None) if "block_size" in m.group(2) else None
    tail = message.split("Reasons:", 1)[1] if "Reasons:" in message else ""
    loaded = [(name, why) for name, why in _REASONS.findall(tail) if "ImportError" not in why]
    if not loaded or not all("block_size not supported" in why for _, why in loaded):
        return None
    return [name for name, _ in loaded], int(size.group(1)) if size else None


def _told_mixed(facts: LogFacts, setup: Setup) -> bool:
    """The report calls the failing step's batch mixed, and the crash dump, where it has one, does not say otherwise:
    a dump of spec decodes beside prefill chunks only (their normal path) outweighs "mixed traffic" in the prose."""
    batch = setup.batch or {}
    if batch.get("mixed") is False and (batch.get("num_spec_decodes") or 0) > 0:
        return False
    return bool(facts.startup.get("mixed_prose"))


def _spec_rows_vs_batch(site, message: str, setup: Setup) -> tuple[int, int, int] | None:
    """A Mamba kernel's check that the state indices have one row per batch row (causal_conv1d_update's
    ``batch == conv_state_indices.shape[0]``) failing with 2-D indices of 1 + k columns -- the spec-decode rows'
    layout -- and another row count: (batch, rows, columns)."""
    if setup.spec_k <= 0 or not _ROW_CHECK.search(site.condition or ""):
        return None
    exp = _EXPECTED_ROWS.search(message)
    got = _GOT_2D.search(message[exp.end():] if exp else "")
    if exp is None or got is None:
        return None
    batch, rows, cols = int(exp.group(1)), int(got.group(1)), int(got.group(2))
    return (batch, rows, cols) if cols == setup.spec_k + 1 and rows != batch else None


def _prints_spec_query_len(message: str) -> bool:
    """The message states a per-request query length above 1 by name (the catalog rule spec_query_len_param), or is
    the TRTLLM-gen runner finding no kernel for the call's query tile (trtllm_kernel_selection)."""
    from ..catalog.categorize import categorize

    return categorize({"file": "", "function": "", "message": (message or "")[:2000], "exc": ""}) in (
        ("spec_kernel_limit", "spec_query_len_param"), ("spec_kernel_limit", "trtllm_kernel_selection"))


def from_site(facts: LogFacts, root: LogException, best, matches, setup: Setup, base_numbers: dict,
               batch_ev: list[Evidence], weak: bool = False) -> Diagnosis:
    site = best.site
    nums = dict(base_numbers)
    nums.update(facts.numbers)
    nums.update(best.numbers)
    cat = site.category
    how = {"message": "its message template", "condition": "the frame's assert condition",
           "raise": "the frame's raise", "kernel": "the kernel check's text",
           "config_assert": f"its condition, false on the command's own flags ({best.note})",
           "line": f"the innermost frame's line ({best.note or 'its statement in a scanned release'})"
           }.get(best.how, best.how)
    where = f"{site.file}:{site.function}" if site.function else site.file
    rel = (f"present in vLLM {site.version_text()}" if site.versions
           else f"{site.package or 'kernel'} check" + (f" ({site.source})" if site.source else ""))
    basis = f"matched vLLM failure site {where} ({site_text(site)[:160]}) by {how}; {rel}"
    if best.version_ok is False and facts.vllm_version:
        basis += f"; not at this place in {facts.vllm_version} as released (a fork or a patched build)"
    others = sorted({m.site.category for m in matches if m.score >= 0.75 and m.site.category != cat})
    if others:
        basis += f"; the same text also exists as a {', '.join(others)} site"
    if cat == "other" and site.kind == "kernel" and setup.spec_k != 0 and (setup.mla or MLA_FRAMES.search(site.file)) \
            and not GEMM_FRAMES.search(f"{site.file} {site.function or ''}") \
            and re.search(r"num_tokens|seqlen|q_len|qo_len|next_n|batch|num_heads|topk|shape|size|contiguous",
                          f"{site.condition or ''} {site.message or ''}") \
            and not re.search(r"arch|dtype|sm_?\d|capability|device", site.condition or "", re.I):
        cat = "spec_kernel_limit"
        basis += ("; a shape check of an MLA / sparse-attention kernel failing under speculative decoding: the "
                  "multi-token decode shape is outside what the kernel was built for")
    elif cat == "other" and site.kind == "kernel" and setup.spec_k != 0 and _prints_spec_query_len(root.message):
        # a kernel library's lookup / check whose message prints the kernel's parameter tuple with a query length
        # per request above 1 (FlashInfer's "Missing TRTLLM-GEN kernel (decode): ... qSeqLen=4", AITER's
        # "max_seqlen_q=4"): the kernel table has no variant for the 1 + k query tokens a speculative decode carries
        cat = "spec_kernel_limit"
        basis += ("; the kernel's message prints its parameters with a query length per request above 1, the "
                  "1 + k tokens of a speculative decode: no kernel variant for that decode width")
    elif cat == "other" and site.kind != "kernel" and (site.rule or "default") == "default" and setup.spec_k != 0 \
            and MLA_FRAMES.search(site.file) and not HYBRID_FRAMES.search(site.file) \
            and TOKEN_COUNT_CHECK.search(f"{site.condition or ''} {site.message or ''}") \
            and (not MODEL_SHAPE_CHECK.search(f"{site.condition or ''} {site.message or ''}")
                 or _rows_differ(root.message or "")):
        cat = "spec_kernel_limit"
        basis += ("; a check of token / request counts in MLA / sparse-indexer code failing under speculative "
                  "decoding: a decode carries 1 + k query tokens per request, which this path sizes per request")
    elif cat == "other" and site.kind != "kernel" and setup.spec_k != 0 and MLA_FRAMES.search(site.file) \
            and not HYBRID_FRAMES.search(site.file) \
            and re.fullmatch(r"(?:attn_metadata\.)?decode(?:_metadata)? is not None", (site.condition or "").strip()):
        # an MLA backend's forward found decode tokens but no decode metadata: its builder counts a request as a
        # decode by query length (the reorder threshold), and the 1 + k tokens of a speculative decode fall on the
        # other side of it than the forward expects -- the backend's decode-query-length limit under drafts
        cat = "spec_kernel_limit"
        basis += ("; an MLA backend's decode path without decode metadata under speculative decoding: the builder and "
                  "the forward disagree on which requests are decodes once a decode carries 1 + k query tokens")
    elif cat == "other" and setup.hybrid and setup.spec_k != 0 \
            and re.search(r"num_accepted_tokens\s*<=\s*(?:self\.)?num_spec_tokens", site.condition or ""):
        # the scheduler's draft statistics see more accepted tokens than a request had drafts: on a Mamba/GDN hybrid the
        # sampled rows of a mixed step were attributed to the wrong requests -- the accepted-token bookkeeping of a
        # mixed batch (D), which the recurrent states then follow
        cat = "mixed_batch"
        basis += ("; more tokens accepted than drafted on a hybrid under speculative decoding: the step's sampled rows "
                  "were attributed to the wrong requests, the accepted-token bookkeeping of a mixed batch")
    elif cat == "mixed_batch" and (site.function or "").endswith("build_for_cudagraph_capture") \
            and HYBRID_FRAMES.search(site.file) and re.search(r"max_query_len\s*<=", site.condition or "") \
            and str(facts.args.get("cudagraph_mode") or "").upper() == "FULL":
        # a linear-attention / Mamba builder's query-length check raised while a CUDA graph is captured, with
        # cudagraph_mode FULL: that mode captures mixed prefill-decode batches as full graphs too, and their dummy
        # batch is longer than the 1 + k the builder takes under drafts -- the capture's shape against the drafts, not
        # a batch the engine served (without FULL, the check's rows are a mixed batch's)
        cat = "cudagraph_shape"
        basis += ("; raised while capturing a CUDA graph: the capture's dummy batch has a longer query than the 1 + k "
                  "tokens the builder takes under drafts (FULL graphs capture mixed batches too), no served batch")
    elif cat == "other" and (refused := _backend_refuses_block_size(root.message or "")) is not None:
        # the attention-backend selection (platforms/*.py get_attn_backend_cls) failing on the KV block size: the
        # reasons it prints name the block size for every backend it could otherwise load -- the backend's block-size
        # limit, the alignment sibling (a hybrid's block size is raised to cover its Mamba page, an MLA backend needs
        # its own kernel block size)
        cat = "block_size_alignment"
        backends, size = refused
        size = size or facts.args.get("block_size")
        basis += (f"; the reasons vLLM prints refuse the KV block size{f' {size}' if size else ''} for "
                  + (f"the selected backend {backends[0]}" if len(backends) == 1 and "Selected backend" in root.message
                     else f"{', '.join(backends)} (every backend that loaded)")
                  + ": the backends' block-size limits")
        if isinstance(size, int):
            nums["block_size"] = size
    elif cat == "other" and "dummy_run" in (site.function or "") \
            and re.search(r"num_tokens\w*\s*(?:<=|<)\s*(?:self\.)?(?:scheduler_config\.)?max_num_(?:batched_)?tokens\b",
                          site.condition or "") \
            and any(re.search(r"capture", f.function or "") for f in root.frames):
        # the same check fails for the profiling run (a bug) and for a CUDA-graph capture: called from the capture,
        # the dummy batch is a capture size -- in tokens, up to max_num_seqs x (1 + k) with drafts -- above the budget
        cat = "cudagraph_shape"
        mx, k = facts.args.get("max_num_seqs"), max(setup.spec_k, 0)
        basis += ("; called from the CUDA-graph capture: the dummy batch is a capture size above the token budget "
                  "(max_num_batched_tokens)" + (f"; capture sizes run to max_num_seqs x (1 + k) = {mx * (1 + k)} tokens"
                                                if isinstance(mx, int) else ""))
        if isinstance(mx, int):
            nums.setdefault("decode_tokens_max", mx * (1 + k))
    elif cat == "other" and setup.spec_k != 0 and (site.file or "").endswith("sched/scheduler.py") \
            and re.search(r"total_num_scheduled_tokens\s*<=\s*(?:self\.)?(?:max_num_scheduled_tokens|"
                          r"scheduler_config\.max_num_batched_tokens)\b", site.condition or ""):
        # the scheduler's own budget check: the step scheduled more tokens than max_num_batched_tokens. With drafts a
        # running request takes 1 + k tokens, which the budget must hold for every request it schedules -- the spec
        # tokens vs the token budget (without drafts the same check is a scheduler bug outside the families)
        cat = "token_budget"
        mx, budget, k = facts.args.get("max_num_seqs"), facts.args.get("max_num_batched_tokens"), max(setup.spec_k, 0)
        basis += ("; under speculative decoding each running request schedules 1 + k tokens: the step's tokens with "
                  "the drafts overran the token budget (max_num_batched_tokens"
                  + (f" {budget}" if isinstance(budget, int) else "") + ")"
                  + (f"; max_num_seqs x (1 + k) = {mx * (1 + k)} tokens" if isinstance(mx, int) and k else ""))
        if isinstance(mx, int) and k:
            nums.setdefault("decode_tokens_max", mx * (1 + k))
    rows = _spec_rows_vs_batch(site, root.message or "", setup) if cat == "state_index" else None
    if rows is not None:
        batch, spec_rows, width = rows
        cat = "mixed_batch"
        basis += (f"; the state indices have 1 + k = {width} columns (the spec-decode rows' layout) but {spec_rows} rows "
                  f"for a batch of {batch}: the rows differ, not the columns -- the builder's split of the step into "
                  f"spec decodes and plain decodes disagrees with the rows the kernel runs on (a mixed batch)")
        nums.update({"batch": batch, "spec_rows": spec_rows, "state_index_width": width})
    elif cat == "state_index" and setup.spec_k > 0 and _told_mixed(facts, setup) and (
            _ROW_CHECK.search(site.condition or "") or _BARE_ROWS_CHECK.search(site.condition or "")):
        # the state indices' rows against the batch's rows, on a step the report tells as mixed (drafted rows beside
        # rows without drafts or a prefill chunk): the builder's split of the step, not an index width
        cat = "mixed_batch"
        basis += (f"; the check compares the state indices' rows with the batch's rows, and the report says the failing "
                  f"batch mixed kinds of rows ('{facts.startup['mixed_prose']}'): the builder's split of one step into "
                  "spec decodes, plain decodes and prefills disagrees with the rows the kernel runs on (a mixed batch)")
    elif cat == "state_index" and setup.spec_k > 0 and not root.message.strip() and _BARE_ROWS_CHECK.search(
            site.condition or ""):
        # a bare assert that the state indices have a row for every row of the batch (selective_state_update's
        # ``state_batch_indices.shape[0] >= N``): under drafts the kernel's N counts tokens (1 + k a spec decode)
        # where the builder gave one state row per request -- the step's rows counted two ways, not an index width
        cat = "mixed_batch"
        basis += ("; the assert compares the state indices' rows with the batch's rows under speculative decoding "
                  f"(k = {setup.spec_k}): a kernel counting 1 + k tokens per spec decode meets one state row per "
                  "request -- the batch's rows counted two ways (a mixed batch), not the indices' width")
    elif cat == "state_index" and REQUEST_COUNT_CHECK.search(site.condition or ""):
        if setup.prefix_cached_states and _told_mixed(facts, setup):
            # the report tells the step's batch: plain decodes beside spec decodes -- the builder's split of one step
            cat = "mixed_batch"
            basis += (f"; the report says the failing batch mixed kinds of rows ('{facts.startup['mixed_prose']}'): "
                      "the step's requests counted two ways by the builder, not an index width")
        elif setup.prefix_cached_states:
            # with prefix caching the rows come through the block table: the state indices (writers and real reports
            # alike, a mixed crash dump or not)
            if _padded_rows(root.message or "", setup):
                basis += ("; every request of the crash dump's step is counted (Expected = its "
                          f"{setup.batch['num_reqs']} requests, spec decodes included) and the state indices have more "
                          "rows: padded rows handed to the Mamba group (a CUDA-graph batch), not the step split two ways")
        else:
            # the requests of the step counted two ways (the metadata built for one group vs the rows handed to
            # another, padded for a CUDA graph or split otherwise): without prefix caching the state indices hold one
            # row per request, so the builder's accounting of the batch differs, not an index -- the mixed-batch class
            cat = "mixed_batch"
            basis += ("; the check counts the step's requests (prefills + decodes) against the state indices' rows with "
                      "no prefix caching (one state row per request): the batch's requests counted two ways by the "
                      "builder" + (f" under speculative decoding (k = {setup.spec_k})" if setup.spec_k else "")
                      + ", not an index width")
    if cat == "cudagraph_shape" and facts.args.get("cudagraph_capture_sizes") == [] \
            and re.search(r"capture_sizes\W.{0,40}\bat least one\b", root.message or ""):
        # the command itself gave an empty list of capture sizes (the spec-decode rounding that empties a list given
        # with sizes is the class; an empty list given is an invalid value)
        cat = "other"
        basis += ("; the command passes cudagraph_capture_sizes: [] itself -- an invalid value (use cudagraph_mode "
                  "NONE or --enforce-eager to capture no graphs), not sizes the spec-decode rounding emptied")
    caller = attention_allocation(root.message or "") if site.file.endswith("worker/workspace.py") else None
    if cat == "other" and caller and setup.spec_k:
        # the locked workspace asked for more by an attention kernel under drafts: its scratch was sized before capture
        # for single-token decodes, and a decode now carries 1 + k query rows (rule workspace_locked says the sizes)
        cat = "spec_kernel_limit"
        basis += (f"; the allocation comes from an attention kernel ({caller}) under speculative decoding "
                  f"(k = {setup.spec_k}): its scratch was sized for single-token decodes, a decode now carries 1 + k "
                  "query rows")
    if cat == "other" and site.function.endswith("get_new_blocks") and "block_pool" in site.file and setup.hybrid \
            and (setup.prefix_cached_states or setup.spec_k):
        # the block pool ran dry under a hybrid whose requests each hold several Mamba blocks (align mode's running
        # block plus one per speculative token): the scheduler admitted more requests than the pool has states for
        cat = "mamba_block_budget"
        basis += ("; the pool ran out of blocks on a Mamba/GDN hybrid where every request holds its own state blocks "
                  "(align mode's running block and the speculative blocks): more requests admitted than the pool "
                  "has states for -- max_num_seqs above the Mamba block budget")
    pre = precondition_fails(cat, setup, facts, site)
    if pre:
        basis += f"; but {pre}, so the check fired for another reason: not counted as {cat}"
        cat = "other"
    has_numbers = bool(best.numbers) or best.how in ("condition", "kernel", "config_assert")
    conf = "high" if best.score >= 0.9 and has_numbers and not weak else "medium"
    if best.how == "line" and best.score < 0.75:
        conf = "low"
    if weak:
        conf = "low" if best.score < 0.6 else "medium"
    if rows is not None and conf == "high":  # the site is certain, the class is read from its numbers
        conf = "medium"
    if conf == "high" and cat != site.category:  # the site is certain, the class is read from the configuration
        conf = "medium"
    if cat == "spec_kernel_limit" and setup.spec_k > 0:
        nums.setdefault("next_n", setup.spec_k + 1)
    ev = exc_evidence(root, 2)
    if best.frame is not None and all(e.line != best.frame.log_line for e in ev):
        ev.append(Evidence(text=f'File "{best.frame.file}", line {best.frame.line}, in {best.frame.function}'
                                + (f": {best.frame.code}" if best.frame.code else ""), line=best.frame.log_line, source="log"))
    ev.append(Evidence(text=f"catalog site {site.id}: {where} -- {site_text(site)[:200]} ({rel})", source="catalog"))
    ev += batch_ev
    title = (f"{title_of(cat, site.rule if cat == site.category else None)}: {site.exc.rsplit('.', 1)[-1]} in "
             f"{site.short_function or site.basename}")
    lines = root.message.strip().splitlines() or [""]
    if len(lines) > 1 and _PYDANTIC_HEAD.match(lines[0]):
        # pydantic's "1 validation error for VllmConfig" heads the validator's own text on the next line
        # ("  Value error, --mamba-block-size can only be set with ... [type=value_error, ...]")
        lines = [_PYDANTIC_ITEM.sub("", lines[1].strip())]
    msg = lines[0][:300] or f"bare {root.exc_type} at {site_text(site)[:120]}"
    if site.limit:
        msg += f" -- kernel limit: {site.limit}"
    if setup.batch:
        from .dump import describe

        msg += f" -- batch at the crash: {describe(setup.batch)}"
    d = Diagnosis(category=cat, confidence=conf, basis=basis, title=title, message=msg, numbers=nums, evidence=ev,
                  site_id=site.id, rule="failure_site")
    if best.how == "config_assert":
        from .bareassert import comparison

        comp = comparison(site.condition or "", best.values)
        if comp is not None:
            d.comparisons.append(comp)
    if site.kind == "assert" and not site.message and not best.numbers and not _operands_known(site.condition, nums):
        d.missing.append("the assertion carries no values; rerun with the vllm-diag probes on (VLLM_DIAG_DB=run.db) "
                         "to record the specs, block tables and buffers it compares")
    return d


def _operands_known(condition: str | None, numbers: dict) -> bool:
    """A bare assert's operands have values in the numbers (the probes' note "`assert x >= y` failed with
    x=..., y=..." in the log, or a recording): ``self.page_size_padded`` counts as ``page_size_padded``."""
    names = {n.rsplit(".", 1)[-1] for n in re.findall(r"[A-Za-z_][\w.]*", condition or "")}
    return any(isinstance(numbers.get(n), (int, float)) and not isinstance(numbers.get(n), bool) for n in names)
