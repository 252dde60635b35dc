"""Hand-kept tables of the catalogue: which NCCL source file is on which path, which wrapping
macro is on which path, and the accepted values of NCCL's enumerated settings."""
import re

# Third-party code vendored into NCCL's tree: not NCCL's messages.
_SKIP = re.compile(r"^(include/nvtx3/|.*/doca-gpunetio/|.*/nvtx_payload_schemas|device/)")


def nccl_skip(rel):
    return bool(_SKIP.match(rel))


# Wrapping macros (in headers) -> path. First matching prefix wins.
MACRO_PATHS = [
    ("CUDACHECK", "cuda"), ("CUCHECK", "cuda"), ("CUPFN", "cuda"), ("CUDA", "cuda"),
    ("NVMLCHECK", "cuda"), ("NVML", "cuda"), ("GDRCHECK", "cuda"),
    ("SYSCHECK", "alloc"), ("PTHREADCHECK", "alloc"), ("NEQCHECK", "alloc"),
    ("EQCHECK", "alloc"), ("ALLOC", "alloc"),
    ("IBV", "ib_verbs"), ("MLX5", "ib_verbs"), ("NCCL_IBV", "ib_verbs"),
    ("NCCLCHECK", "misc"), ("NCCLWAIT", "misc"),
]

# Source file (relative to src/) -> path. First matching pattern wins.
FILE_PATHS = [
    (r"misc/(ibvwrap|ibvsymbols|mlx5dvwrap|mlx5dvsymbols)\.cc$|include/(ibvwrap|ibvcore|ibvsymbols|mlx5/)", "ib_verbs"),
    (r"transport/net_ib", "net_ib"),
    (r"transport/(coll_net|collnet)|.*collnet|.*coll_net", "collnet"),
    (r"transport/net_socket\.cc$|misc/socket\.cc$|include/socket\.h$", "socket"),
    (r"bootstrap\.cc$|include/bootstrap\.h$", "bootstrap"),
    (r"misc/ipcsocket\.cc$", "p2p"),
    (r"misc/(cudawrap|gdrwrap|nvmlwrap|strongstream|cudaFree)|include/(cudawrap|gdrwrap|nvmlwrap)\.h$", "cuda"),
    (r"graph/|include/graph\.h$|mnnvl\.cc$", "topology"),
    (r"transport/shm\.cc$|misc/shmutils\.cc$|include/shm", "shm"),
    (r"transport/p2p\.cc$|include/p2p\.h$", "p2p"),
    (r"transport/nvls\.cc$|include/nvls|nvls", "nvls"),
    (r"plugin/(net|plugin_open)|^net\.cc$|include/(net|plugin/net)|transport/net\.cc$", "net_plugin"),
    (r"^proxy\.cc$|include/proxy\.h$", "proxy"),
    (r"^enqueue\.cc$|argcheck|^collectives|collectives\.cc$|^group\.cc$|^symmetric|^sym_|^register/|^api|^ce_coll", "api_usage"),
    (r"^ras/|include/ras", "ras"),
    (r"misc/param\.cc$|include/param|^param/|^env|misc/env", "env"),
    (r"include/alloc\.h$|allocator\.cc$|^alloc|misc/utils\.cc$", "alloc"),
    (r"^transport\.cc$|^transport/|^gin/|include/transport\.h$", "transport"),
]


def nccl_path(rel, macro=""):
    if macro:
        for prefix, path in MACRO_PATHS:
            if macro.startswith(prefix):
                return path
    for pat, path in FILE_PATHS:
        if re.search(pat, rel):
            return path
    return "misc"


# env -> (accepted values as NCCL parses them, the WARN it prints for a value it rejects).
# Filled by reading NCCL's parsing code; see the README for where each comes from.
PARAM_VALUES = {}
