"""Slowdowns (and lost capacity) whose cause the report shows in the platform the engine runs on, outside the
hybrid/spec-decode families: the host's CPUs held back, the GPU's clocks held down, another process on the GPU, a MIG
slice, WSL2, ROCm without AITER, NCCL over sockets -- one table of what each fact means, read by one function."""

from __future__ import annotations

from ..model import LogFacts
from .diagnosis import Diagnosis
from .quietmisses import said_slow, slow_from, kv_cache_idle, raised_block_holds_requests


# the platform starving the engine, as the report shows it: (the fact read from the report, what it does, the title,
# what would confirm it, whether it also takes the engine's memory)
_STARVED = {
    "cpu": ("cpu_starved_prose",
            "shows the host's CPUs as the bottleneck ('{said}'): the API server, the engine's scheduling loop, its "
            "workers and a CPU-side drafter each need their cores, so the GPUs wait on the host",
            "Slow from the host CPU (a container's CPU limit or a saturated API-server process)",
            "the same load with more CPU cores for the pod (at least one per GPU worker plus the API server)", False),
    "gpu": ("gpu_throttled_prose",
            "shows the GPU's clocks held down ('{said}'): a power cap or a thermal / hardware slowdown slows every kernel, "
            "whatever the engine's configuration",
            "Slow from throttled GPUs (power cap or thermal slowdown)",
            "nvidia-smi -q -d PERFORMANCE,POWER,CLOCK on a fast node beside the slow one, and the slow node with its "
            "default power limit restored", False),
    "tenant": ("cotenant_prose",
               "shows another process using the engine's GPU ('{said}'): vLLM sizes its KV cache from the memory free "
               "while it profiles and shares the GPU's compute with that process, so fewer requests fit and each runs "
               "slower whatever the engine's configuration",
               "Another process on the same GPU (its memory and compute come out of the engine's)",
               "the same start on GPUs nothing else uses (nvidia-smi's process list empty before vLLM starts)", True),
    "mig": ("mig_prose",
            "shows the engine on a MIG slice of the GPU ('{said}'): vLLM sees that slice's memory and SMs, a fraction "
            "of the card's, so the KV cache and the throughput are the slice's whatever the engine's configuration",
            "A MIG slice, not the whole GPU (its memory and SMs are a fraction of the card's)",
            "the same start on a whole GPU (nvidia-smi -L without MIG devices)", True),
    "wsl": ("wsl_prose",
            "runs the engine under Windows' WSL2 ('{said}'): vLLM turns pinned host memory off there, and the GPU is "
            "reached through the Windows driver layer (which spills to shared system memory once the card's memory is "
            "full), so copies and kernel launches run slower whatever the engine's configuration",
            "Slow under WSL2 (no pinned memory, the Windows driver layer)",
            "the same model and flags on native Linux on that GPU", False),
    "aiter": ("aiter_dropped_prose",
              "says the ROCm deployment runs without VLLM_ROCM_USE_AITER ('{said}'): vLLM uses AMD's AITER kernels "
              "(attention, MLA, MoE, GEMMs) only when that variable is 1, so every layer runs the slower Triton "
              "fallbacks, with or without drafts",
              "Slow on ROCm without AITER (VLLM_ROCM_USE_AITER unset: the Triton fallback kernels)",
              "the same load with VLLM_ROCM_USE_AITER=1 (and the 'Using ... backend' line naming an AITER backend)", False),
    "net": ("socket_network_prose",
            "shows NCCL between the nodes going over TCP sockets ('{said}'): every step's all-reduce or pipeline "
            "hand-off crosses an Ethernet link, so decode waits on the network whatever the engine's configuration",
            "Slow from collectives between nodes over TCP sockets (no InfiniBand / RDMA)",
            "the same model on one node (or with the nodes on InfiniBand / RoCE: NCCL's 'NET/IB : Using' line)", False),
}


def _held_at_a_cap(facts: LogFacts) -> bool:
    """Requests wait while the running count sits at a ceiling: max_num_seqs, or the same count on every stats line (a
    running count that moves with the load is a slower engine's queue, not a cap)."""
    st = facts.startup
    if not (st.get("num_requests_waiting_max") or 0) > 0:
        return False
    top, cap = st.get("num_requests_running_max"), facts.args.get("max_num_seqs")
    if isinstance(top, int) and isinstance(cap, int) and not isinstance(cap, bool) and top >= cap:
        return True
    first = st.get("num_requests_running_first", st.get("num_requests_running"))
    return first == st.get("num_requests_running") == top


def _starved_slowdown(facts: LogFacts, base_numbers: dict, kind: str) -> Diagnosis | None:
    fact, cause, title, missing, takes_memory = _STARVED[kind]
    slow = said_slow(facts) or facts.startup.get("capacity_prose")
    said = facts.startup.get(fact)
    if takes_memory and not said_slow(facts) and raised_block_holds_requests(facts):
        return None  # (fewer requests than expected, each holding a few of a hybrid's raised blocks: the block's count)
    if not slow or not said or takes_memory and kv_cache_idle(facts) and not facts.startup.get("degraded_over_time_prose") \
            and (not said_slow(facts) or _held_at_a_cap(facts)):
        # another process's memory holds back no request while the KV cache stays mostly empty, and requests that wait
        # beside an empty cache are held by a scheduler limit, not by a GPU shared for compute (unless serving slowed
        # down with time under the same settings: what changed is the neighbour)
        return None
    return slow_from(facts, base_numbers, slow, cause=cause.format(said=said), title=title,
                      evidence=(fact, "command"), missing=missing)


def cpu_starved_slowdown(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slow, and the report shows the container's CPUs cut by its limit (a cgroup's throttling
    count, a Kubernetes CPU limit of a few cores): the API server, the engine's scheduling loop, the workers and any
    CPU-side drafter (n-gram) share those cores, so the host loop is the bottleneck -- outside the families."""
    return _starved_slowdown(facts, base_numbers, "cpu")


def gpu_throttled_slowdown(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slow, and the report shows the GPU's clocks held down (nvidia-smi's clock event reasons: a
    software power cap, a thermal or hardware slowdown): every kernel runs slower whatever vLLM computes -- the
    platform, outside the families."""
    return _starved_slowdown(facts, base_numbers, "gpu")


def cotenant_gpu_slowdown(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slow or fewer requests fitting, and the report shows another process on the engine's GPU (a
    service sharing the card, a foreign pid in nvidia-smi): its memory comes out of the KV budget vLLM measures while
    profiling, its kernels out of the engine's -- the platform, outside the families."""
    return _starved_slowdown(facts, base_numbers, "tenant")


def wsl_slowdown(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slow, and the engine runs under WSL2 (vLLM's own warning, or the report's words): the platform,
    outside the families."""
    return _starved_slowdown(facts, base_numbers, "wsl")


def rocm_without_aiter(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slow, and the report says the ROCm deployment lost VLLM_ROCM_USE_AITER: the Triton fallback
    kernels, the platform's setting -- outside the families."""
    return _starved_slowdown(facts, base_numbers, "aiter")


def mig_slice_limits(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slow or fewer requests fitting, and the engine runs on a MIG slice: the slice's memory and SMs
    are what it has -- the platform, outside the families."""
    return _starved_slowdown(facts, base_numbers, "mig")


def socket_network_slowdown(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slow, and the run spans nodes whose NCCL traffic goes over TCP sockets (NCCL's own 'NET/Socket'
    lines, or the reporter's Ethernet link): the collectives of every step wait on the network -- the platform,
    outside the families."""
    return _starved_slowdown(facts, base_numbers, "net")
