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
    (r"graph/|^tuning/|include/graph\.h$|mnnvl\.cc$", "topology"),
    (r"transport/shm\.cc$|misc/shmutils\.cc$|include/shm", "shm"),
    (r"transport/p2p\.cc$|include/p2p\.h$", "p2p"),
    (r"transport/nvls\.cc$|include/nvls|nvls", "nvls"),
    (r"plugin/(net|gin|plugin_open)|^net\.cc$|include/(net|plugin/net)|transport/net\.cc$", "net_plugin"),
    (r"^proxy\.cc$|include/proxy\.h$", "proxy"),
    (r"^enqueue\.cc$|argcheck|^collectives|collectives\.cc$|^group\.cc$|^symmetric|^sym_|^register/|^register\.cc$|^api|^ce_coll", "api_usage"),
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
_PROTO_ALGO_SYNTAX = (
    "comma-separated names, case-insensitive (strcasecmp); a leading ^ disables the listed ones "
    "and enables the rest; from 2.24 also per-collective entries `func:list` separated by ';' "
    "(only the first entry may omit the prefix), e.g. ^LL128;allreduce:LL128. Before 2.24 an "
    "unknown name is silently ignored")
_PROTO_ALGO_WARN = ('from 2.24: WARN "Unrecognized element token \"%s\" when parsing \"%s\"", '
                    '"Unrecognized prefix token \"%s\" when parsing \"%s\"", '
                    '"All entries except the first must have a prefix: \"%s\"" (graph/tuning.cc)')
_PATH_LEVELS = ("LOC, NVL, NVB, C2C (2.25+), PIX, PXB, P2C (2.27+), PXN, PHB, SYS (exact, "
                "case-sensitive strcmp); or the old numbers 0-5 = LOC, PIX, PXB, PHB, SYS, SYS; "
                "anything else leaves NCCL's own choice")
_IFLIST = ("comma-separated interface/device prefixes; a leading ^ excludes them, a leading = "
           "makes them exact names")
PARAM_VALUES = {
    "NCCL_ALGO": ("Tree, Ring, CollNet (2.12-2.13) / CollNetDirect, CollNetChain (2.14+), NVLS "
                  "(2.17+), NVLSTree (2.18+), PAT (2.23+); " + _PROTO_ALGO_SYNTAX,
                  _PROTO_ALGO_WARN),
    "NCCL_PROTO": ("LL, LL128, Simple; " + _PROTO_ALGO_SYNTAX, _PROTO_ALGO_WARN),
    "NCCL_DEBUG": ("VERSION, WARN, INFO, ABORT, TRACE (case-insensitive); anything else is "
                   "ignored (no logging)", ""),
    "NCCL_DEBUG_SUBSYS": ("comma-separated INIT, COLL, P2P, SHM, NET, GRAPH, TUNING, ENV, ALLOC, "
                          "CALL, PROXY, NVLS, BOOTSTRAP, REG, PROFILE, RAS, ALL (case-insensitive, "
                          "the set grows with the release); a leading ^ excludes them; default "
                          "INIT (plus ENV in newer releases); unknown names are ignored", ""),
    "NCCL_DEBUG_TIMESTAMP_LEVELS": ("comma-separated ALL, VERSION, WARN, INFO, ABORT, TRACE; "
                                    "leading ^ excludes", ""),
    "NCCL_SOCKET_FAMILY": ("AF_INET or AF_INET6 (exact, case-sensitive); anything else means "
                           "any family", ""),
    "NCCL_SOCKET_IFNAME": (_IFLIST, ""),
    "NCCL_IB_HCA": (_IFLIST + "; each may carry :port", ""),
    "NCCL_IB_DISABLE": ("0 or 1 (integer; 1 disables the IB transport)", ""),
    "NCCL_P2P_DISABLE": ("0 or 1 (1 = level LOC, i.e. no P2P)", ""),
    "NCCL_SHM_DISABLE": ("0 or 1", ""),
    "NCCL_NVLS_ENABLE": ("0, 1, 2 (2 = auto in releases that have it)", ""),
    "NCCL_P2P_LEVEL": (_PATH_LEVELS, ""),
    "NCCL_NET_GDR_LEVEL": (_PATH_LEVELS, ""),
    "NCCL_SHM_LEVEL": (_PATH_LEVELS, ""),
    "NCCL_NET": ("name of a network the loaded plugins offer, case-insensitive (built in: IB, "
                 "Socket; plugins e.g. AWS Libfabric)",
                 'a name no loaded plugin offers: WARN "Failed to initialize any NET plugin"; '
                 'split comms: WARN "Comm config netName (%s) does not match the parent (%s)" '
                 '(plugin/net.cc, 2.28)'),
    "NCCL_CROSS_NIC": ("0, 1, 2 (2 = auto)", ""),
    "NCCL_IB_GID_INDEX": ("integer; -1 = automatic detection (2.21+)", ""),
    "NCCL_IB_ADDR_FAMILY": ("AF_INET or AF_INET6", ""),
    "NCCL_LAUNCH_MODE": ("PARALLEL or GROUP", ""),
}

# NCCL_ names that appear as bare literals but are not environment variables (message arguments
# naming a struct initialiser or a constant).
NOT_ENV = {"NCCL_COMM_PROPERTIES_INITIALIZER", "NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER",
           "NCCL_GIN_CONNECTION_RAIL"}

# The OS abstraction layer (src/os/, 2.29+) holds sockets, shared memory, topology reads and more
# in one file per OS: there the path comes from the message. First match wins; else the file's.
OS_FILE = re.compile(r"^os/")
OS_MESSAGE_PATHS = [
    (r"UDS:|IPC:|IpcSocket", "p2p"),
    (r"[Ss]ocket|connect|[Aa]ccept|Net :|WSA|ioctlsocket|[Aa]dapter", "socket"),
    (r"shared memory|SHM|fallocate|mkstemp|[Mm]ap(ping)? |map view|munmap|UnmapView|real path", "shm"),
    (r"NVML|nvml|libnvidia-ml", "cuda"),
    (r"PCI|Pci|[Aa]ffinity|Topology|Topo|SetupDi|SetupAPI", "topology"),
    (r"extend %s to", "shm"),
    (r"[Ss]tack size|environment variable", "env"),
]


def nccl_message_path(rel, macro, fmt):
    if OS_FILE.match(rel) and not macro:
        for pat, path in OS_MESSAGE_PATHS:
            if re.search(pat, fmt):
                return path
        if rel.endswith("socket_pair.cc"):
            return "socket"
    return nccl_path(rel, macro)

# How ncclLoadParam (misc/param.cc) reads an NCCL_PARAM integer.
INT_PARAM_REJECT = ("read with strtoll(str, NULL, 0) (decimal, 0x hex, 0 octal); text without "
                    "digits reads as 0 silently; on a range error INFO \"Invalid value %s for %s, "
                    "using default %lld.\" and the default is kept")
