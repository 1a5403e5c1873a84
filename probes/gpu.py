"""GPU facts through NVML (nvidia-ml-py), nvitop style: every query returns a value or ``NA``.

Nothing here raises: no GPU, no driver, no ``pynvml`` module, or a query the device does not
support all give ``NA`` (a falsy singleton whose ``str`` is ``"N/A"``). ``gpu_facts()`` turns
the result into plain JSON-safe data with ``"not available"`` where NVML said nothing.
"""

from __future__ import annotations

import threading
from typing import Any

NOT_AVAILABLE = "not available"


class _NAType:
    """The "not applicable / not available" sentinel (falsy, JSON-encodes as None via ``value``)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NA"

    def __str__(self) -> str:
        return "N/A"

    def __reduce__(self):
        return (_NAType, ())


NA = _NAType()

_lock = threading.Lock()
_state: dict[str, Any] = {"initialised": None, "error": None}


def _nvml():
    """The pynvml module, initialised once per process; ``NA`` if unusable."""
    with _lock:
        if _state["initialised"] is False:
            return NA
        try:
            import pynvml  # nvidia-ml-py
        except Exception as exc:  # ImportError, or a broken install
            _state.update(initialised=False, error=f"nvidia-ml-py not importable ({exc.__class__.__name__})")
            return NA
        if _state["initialised"] is None:
            try:
                pynvml.nvmlInit()
            except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
                _state.update(initialised=False, error=f"NVML unavailable ({_nvml_error_text(exc)})")
                return NA
            _state["initialised"] = True
        return pynvml


def _nvml_error_text(exc: BaseException) -> str:
    try:
        return str(exc) or exc.__class__.__name__
    except Exception:
        return exc.__class__.__name__


def nvml_query(fn_name: str, *args: Any) -> Any:
    """Call ``pynvml.<fn_name>(*args)``; any failure gives ``NA``."""
    nvml = _nvml()
    if nvml is NA:
        return NA
    fn = getattr(nvml, fn_name, None)
    if fn is None:
        return NA
    try:
        value = fn(*args)
    except Exception:
        return NA
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return value


def unavailable_reason() -> str | None:
    _nvml()
    return _state["error"]


def device_count() -> int | _NAType:
    n = nvml_query("nvmlDeviceGetCount")
    return n if isinstance(n, int) else NA


def device_facts(index: int) -> dict[str, Any]:
    """Name, compute capability, memory and driver facts of one device (``NA`` where unknown)."""
    handle = nvml_query("nvmlDeviceGetHandleByIndex", index)
    if handle is NA:
        return {"index": index, "name": NA}
    cc = nvml_query("nvmlDeviceGetCudaComputeCapability", handle)
    mem = nvml_query("nvmlDeviceGetMemoryInfo", handle)
    total = getattr(mem, "total", NA) if mem is not NA else NA
    used = getattr(mem, "used", NA) if mem is not NA else NA
    major, minor = (cc if isinstance(cc, tuple) and len(cc) == 2 else (NA, NA))
    facts = {
        "index": index,
        "name": nvml_query("nvmlDeviceGetName", handle),
        "uuid": nvml_query("nvmlDeviceGetUUID", handle),
        "compute_capability": f"{major}.{minor}" if major is not NA else NA,
        "memory_total_bytes": total,
        "memory_used_bytes": used,
        "power_limit_mw": nvml_query("nvmlDeviceGetPowerManagementLimit", handle),
        "pci_bus_id": _pci_bus_id(handle),
    }
    facts["is_hopper"] = (major == 9) if major is not NA else NA
    return facts


def _pci_bus_id(handle) -> Any:
    info = nvml_query("nvmlDeviceGetPciInfo", handle)
    if info is NA:
        return NA
    bus = getattr(info, "busId", NA)
    return bus.decode(errors="replace") if isinstance(bus, bytes) else bus


def _plain(value: Any) -> Any:
    if value is NA:
        return NOT_AVAILABLE
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def gpu_facts() -> dict[str, Any]:
    """JSON-safe GPU facts: ``{"gpu_count": n, "gpus": [...], "driver_version": ..., ...}``.

    Without a GPU (or NVML) every value is ``"not available"`` and ``gpu_unavailable_reason``
    says why; this function never raises.
    """
    try:
        count = device_count()
        facts: dict[str, Any] = {
            "gpu_count": count,
            "driver_version": nvml_query("nvmlSystemGetDriverVersion"),
            "cuda_driver_version": _cuda_driver_version(),
            "gpus": [device_facts(i) for i in range(count)] if isinstance(count, int) else NA,
        }
        if count is NA:
            facts["gpu_unavailable_reason"] = unavailable_reason() or "no GPU reported by NVML"
        return _plain(facts)
    except Exception as exc:  # belt and braces: GPU facts must never break a probe
        return {"gpu_count": NOT_AVAILABLE, "gpus": NOT_AVAILABLE, "gpu_unavailable_reason": repr(exc)}


def _cuda_driver_version() -> Any:
    v = nvml_query("nvmlSystemGetCudaDriverVersion")
    if isinstance(v, int) and v > 0:
        return f"{v // 1000}.{(v % 1000) // 10}"
    return NA
