"""Near misses: root errors whose cause is outside the hybrid / spec-decode families (memory, weights,
tokenizers, unsupported architectures, NCCL, host syncs during capture, Triton / GPU generation)."""

from __future__ import annotations

import re

# the GPU itself lost, in its own words (a CUDA error's text or the driver's kernel-log line)
LOST_GPU = re.compile(r"uncorrectable ECC error|fallen off the bus", re.I)

CONNECTION_CUT = "connection cut between client and server"
# the client's words for a stream that stopped mid-body (httpx / h11 / aiohttp): also a symptom the prose reads
STREAM_CUT = r"peer closed connection without sending complete message body|incomplete chunked read"

# near misses: errors whose cause is outside the hybrid / spec-decode families
NEAR_MISS: list[tuple[str, re.Pattern[str]]] = [
    ("out of memory", re.compile(r"out of memory|OutOfMemoryError|CUDA_ERROR_OUT_OF_MEMORY|hipErrorOutOfMemory|"
                                 r"No available memory for the cache blocks|KV cache is needed, which is larger than the "
                                 r"available KV cache memory|Insufficient memory|not enough memory|"
                                 # the host's memory: the kernel's OOM killer ended the process (a container's
                                 # memory limit while the weights load: Kubernetes' "OOMKilled", exit code 137)
                                 r"\bOOMKilled\b|\boom[-_]kill(?:er)?\b|Killed process \d+", re.I)),
    ("model type unknown to Transformers", re.compile(r"Transformers does not recognize this architecture|"
                                                      r"Unrecognized model in \S+\. Should have a `model_type` key")),
    ("missing or mismatched weights", re.compile(r"weights? (?:were |was )?not (?:initialized|found|loaded)|"
                                                 r"Following weights were not|KeyError: '[\w.]*(?:weight|bias|scale)'|"
                                                 r"size mismatch for|safetensors|checkpoint|Cannot find any of|"
                                                 r"does not appear to have a file named", re.I)),
    # vLLM's check of a model or draft path (transformers_utils/config.py): no config file it recognises there -- an
    # unfinished copy, a path typo, an offline hub
    ("missing model files", re.compile(r"Invalid repository ID or local directory specified|"
                                       r"contains a recognized configuration file", re.I)),
    ("tokenizer", re.compile(r"tokenizer|chat template", re.I)),
    ("unsupported architecture", re.compile(r"architectures? .{0,40}(?:not supported|are not supported|has no vLLM implementation)|"
                                            r"Model architectures? \[|not supported for now|trust_remote_code|"
                                            # an architecture vLLM dropped (registry.py's removed-model message)
                                            r"was supported in vLLM until v?\d", re.I)),
    ("distributed set-up (NCCL)", re.compile(r"NCCL|Watchdog caught|ProcessGroup|ncclInternalError|"
                                             r"collective operation timeout|Connection refused|RayActorError", re.I)),
    # the GPU's own memory or link failing (the error is sticky and asynchronous like an illegal access, so it
    # surfaces in whatever vLLM frame synchronises next): double-bit ECC (Xid 48/94/95), a lost GPU (Xid 79)
    ("GPU hardware fault (ECC, lost device)", re.compile(LOST_GPU.pattern + r"|cudaErrorECCUncorrectable|"
                                                        r"hipErrorECCNotCorrectable|cudaErrorDevicesUnavailable|"
                                                        r"cudaErrorHardwareStackError|hardware stack error", re.I)),
    ("host synchronisation during CUDA-graph capture", re.compile(r"operation not permitted when stream is capturing|"
                                                                   r"cudaErrorStreamCaptureUnsupported|"
                                                                   r"stream is capturing", re.I)),
    # the host's file system: a disk (a torch.compile / Triton cache, a download) full, over quota or read-only, or
    # the process out of file descriptors
    ("host file system (disk full, quota, read-only, open files)", re.compile(
        r"No space left on device|\[Errno (?:28|122|30|24)\]|\bENOSPC\b|Disk quota exceeded|Read-only file system|"
        r"Too many open files")),
    # the HTTP connection cut between the client and the server (a proxy's or gateway's timeout, an idle-connection
    # reset): the client's transport error, with no engine error behind it
    (CONNECTION_CUT, re.compile(
        STREAM_CUT + r"|Server disconnected without sending a response|RemoteProtocolError|ClientPayloadError|"
        r"upstream request timeout|upstream connect error or disconnect/reset", re.I)),
    # the API server's port (or a distributed rendezvous port) already taken by another process
    ("server address already in use", re.compile(r"Address already in use|EADDRINUSE|\[Errno 98\]")),
    # a kernel built just in time (FlashInfer, DeepGEMM, Triton) in an image without the compilers it needs: no CUDA
    # toolkit (nvcc), no C compiler, no Python headers
    ("JIT toolchain missing (nvcc, C compiler, headers)", re.compile(
        r"Could not find nvcc|nvcc(?:: command)? not found|\bcuda_home=\S* doesn'?t exist|CUDA_HOME environment variable "
        r"is not set|Failed to find C compiler|Python\.h: No such file", re.I)),
    # the driver older than the CUDA toolkit the image (or a JIT-built kernel) was compiled with
    ("driver too old for the CUDA toolkit", re.compile(
        r"provided PTX was compiled with an unsupported toolchain|cudaErrorUnsupportedPtxVersion|CUDA_ERROR_UNSUPPORTED_PTX|"
        r"driver version is insufficient for CUDA runtime version|cudaErrorInsufficientDriver|"
        r"unsupported display driver / cuda driver combination|forward compatibility was attempted on non supported HW",
        re.I)),
    ("Triton / GPU generation", re.compile(r"triton\.compiler|CompilationError|fp8e4nv not supported|"
                                           r"type fp8e4nv not supported|PTXASError|no kernel image is available|"
                                           # a build without this GPU's architecture (ROCm's gfx targets)
                                           r"invalid device function|(?:hip|cuda)ErrorInvalidDeviceFunction|"
                                           r"Unsupported architecture|not supported on (?:this|your) GPU|"
                                           r"compute capability|sm_?\d{2,3}\b.{0,40}not supported|"
                                           # a Triton kernel's tile needs more shared memory / registers than
                                           # this GPU has (the GDN/FLA kernels on T4/V100/consumer cards)
                                           r"OutOfResources|out of resource: (?:shared memory|registers)|"
                                           # Triton's MLIR pipeline failing to lower a kernel for this GPU
                                           # ("PassManager::run failed", "TritonGPUAccelerateMatmul")
                                           r"PassManager::run failed|MLIR pass pipeline", re.I)),
]


def near_miss(text: str) -> str | None:
    for name, rx in NEAR_MISS:
        if rx.search(text):
            return name
    return None
