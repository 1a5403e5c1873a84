"""A kernel library's own check as the innermost frame: FlashInfer (and other TVM-FFI / C++ kernels) print the
failing check's source line as a traceback frame of a ``.cu`` / ``.cuh`` / ``.cpp`` file, with the check
macro as its code (``TVM_FFI_ICHECK_LE(seqlen_q, 4)``), often with no exception line in an excerpt.

The check macro is the failing statement; what it compares (the operand against a constant) and where it is
(the kernel's file: MLA / sparse-attention / decode kernels) classify it with the catalog's rules -- the same
rules that class the catalog's extracted FlashInfer checks -- so a check of a FlashInfer release newer than the
catalog's is still read for what it is.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import LogException

KERNEL_SOURCE = re.compile(r"\.(?:cu|cuh|cpp|cc|hpp|h|cxx)$")
_MACRO = re.compile(r"\b(?:TVM_FFI_|FLASHINFER_|TLLM_|PADDLE_)?I?CHECK_(GT|GE|LT|LE|EQ|NE)\(\s*(.+?)\s*,\s*(.+?)\s*\)\s*;?"
                    r"\s*(?:<<.*)?$")
_BARE = re.compile(r"\b(?:TVM_FFI_|FLASHINFER_|TLLM_|TORCH_)?I?CHECK(?:_WITH_INFO)?\(\s*(.+?)\s*(?:,\s*\".*)?\)\s*;?\s*$")
_OPS = {"GT": ">", "GE": ">=", "LT": "<", "LE": "<=", "EQ": "==", "NE": "!="}


def check_condition(code: str) -> str | None:
    """``TVM_FFI_ICHECK_LE(seqlen_q, 4)`` -> ``seqlen_q <= 4``; ``TORCH_CHECK(x.is_contiguous(), "...")`` ->
    ``x.is_contiguous()``; None for a statement that is no check."""
    code = code.strip()
    m = _MACRO.search(code)
    if m:
        return f"{m.group(2)} {_OPS[m.group(1)]} {m.group(3)}"
    m = _BARE.search(code)
    if m:
        return m.group(1)
    return None


def kernel_check_frame(exc: LogException) -> tuple[str, str, Any, str] | None:
    """(category, rule id, frame, condition) when the innermost frame printed is a kernel source file whose code
    is a check macro; the rules see the kernel file's path (inside its package) and the condition."""
    if not exc.frames:
        return None
    fr = exc.frames[-1]
    path = (fr.file or "").replace("\\", "/")
    if not KERNEL_SOURCE.search(path) or not fr.code:
        return None
    cond = check_condition(fr.code)
    if cond is None:
        return None
    from ..catalog.categorize import categorize

    i = max(path.rfind("/flashinfer/"), path.rfind("/deep_gemm/"), path.rfind("/flash_mla/"), path.rfind("/aiter/"))
    inner = path[i + 1:] if i >= 0 else path.rsplit("/", 3)[-1] if path.count("/") > 3 else path
    cat, rid = categorize({"file": inner.lower(), "function": fr.function or "", "condition": cond, "message": "",
                           "exc": exc.exc_type if not exc.exc_type.startswith("(") else "RuntimeError"})
    return cat, rid, fr, cond
