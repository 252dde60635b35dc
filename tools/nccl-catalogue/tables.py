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


# ---------------------------------------------------------------------------------------------
# NCCL's diagnostics reports (2.31+: NCCL_RUN_DIAGNOSTICS=1, RAS diagnostics), read from the
# string table of libnccl.so (diagstrings.py). Every line is printed as "%s:%d NCCL DIAG <text>";
# the RAS report lines are built apart and passed as the <text>.

# Strings that start a RAS report line (checked at the start of the string). A string that
# contains " in comm 0x%lx" and does not start with "RAS " is a report line too (the catch-all:
# a new check of a later release lands in the catalogue and must then pass the tables below).
DIAG_REPORT_STARTS = re.compile(
    r"GPU inventory:|CUDA driver version:|ECC:|NVLink:|NCCL environment:|Net device[ :]|"
    r"net device type=|IOMMU mode:|IOMMU groups:|ATS state:|rdma_topo check[: ]|Paths:|Xid |SXid |"
    r"Xid/SXid:|%s: diagnostics incomplete|%s: incomplete for comm|=== .*Diagnostics ===$|"
    r"RAS diagnostics completed in ")

# Internal errors of the RAS diagnostics code ("RAS diagnostics ... received invalid reporter",
# "... malformed data size"): WARN/INFO texts of NCCL's own, not report lines; left out.
DIAG_INTERNAL = re.compile(r"RAS ")

# Report text -> check. Searched in order at the start of the format; first match wins. The
# version checks of 2.32 print "%s: ..." with the name as an argument ("CUDA driver version",
# "NVIDIA graphics driver version", in ras/diagnostics_gpu.cc): they are the three formats
# "%s: %s across", "%s: %s consistent across" and "%s: mismatch across ... rank(s)".
DIAG_CHECKS = [
    (r"=== .* ===$|NCCL diagnostics completed in |RAS diagnostics completed in |"
     r"INFO RAS diagnostics skipped", "header"),
    (r"(\[\w*\] |%s)?p2p: ", "p2p"),
    (r"(\[\w*\] |\[%s\] )?net bw: ", "net_bw"),
    (r"\[\w+\] transport ", "transport"),
    (r"GPU inventory: ", "gpu_inventory"),
    (r"CUDA driver version: |%s: (%s (consistent )?across|mismatch across) %d ranks in comm ",
     "driver_version"),
    (r"ECC: ", "ecc"),
    (r"NVLink: ", "nvlink"),
    (r"NCCL environment: ", "nccl_env"),
    (r"Net device[ :]|net device type=", "net_device"),
    (r"IOMMU (mode|groups): ", "iommu"),
    (r"ATS state: ", "ats"),
    (r"rdma_topo check[: ]", "rdma_topo"),
    (r"Paths: ", "paths"),
    (r"Xid |SXid |Xid/SXid: ", "xid"),
    (r"%s: (diagnostics incomplete|incomplete for comm)", "incomplete"),
]

DIAG_SEVERITIES = ("ok", "problem", "info")

# (check, pattern searched in the format, severity): the first entry of the row's check whose
# pattern is found wins. ok: the check passed; problem: it found a fault; info: neither (skipped,
# unavailable, a detail, the check's own trouble, or a verdict that is an argument: "[%s] net bw",
# "%sp2p: %s ... verified"). A format no entry covers stops the generator: decide, then add it.
DIAG_SEVERITY = [
    ("header", r".", "info"),
    # p2p (2.31: per-edge failure details; 2.32: one summary line)
    ("p2p", r"verified P2P access in both directions between every GPU pair", "ok"),
    ("p2p", r"only %llu/%llu GPU-to-GPU peer accesses passed verification", "problem"),
    ("p2p", r"p2p: (write|read) mismatch |p2p: peer-memory import failed |"
     r"p2p: topology check failed ", "problem"),
    ("p2p", r"p2p: %s directed GPU P2P edges verified", "info"),
    ("p2p", r"^\[INFO\] p2p: ", "info"),
    # net bw
    ("net_bw", r">30%% off median", "problem"),
    ("net_bw", r"failed: no usable IB device|failed: cannot resolve the selected IB device",
     "problem"),
    ("net_bw", r"^\[OK\] net bw: skipped ", "info"),
    ("net_bw", r"^\[%s\] net bw: ", "info"),
    ("net_bw", r"^\[INFO\] net bw: ", "info"),
    ("transport", r"^\[INFO\] ", "info"),
    ("gpu_inventory", r"mismatch across .* differ from rank", "problem"),
    ("gpu_inventory", r" consistent across ", "ok"),
    ("gpu_inventory", r"^GPU inventory: unavailable via NVML", "info"),
    ("driver_version", r"mismatch across .* differ from rank", "problem"),
    ("driver_version", r" consistent across ", "ok"),
    ("driver_version", r"^(CUDA driver version: unavailable|%s: %s across) ", "info"),
    ("ecc", r"^ECC: no uncorrected volatile errors ", "ok"),
    ("ecc", r"^ECC: (uncorrected|corrected) volatile errors .*on rank\(s\)", "problem"),
    ("ecc", r"^ECC: unavailable via NVML", "info"),
    ("nvlink", r"mismatch across|^NVLink: inactive link|^NVLink: inconsistent link speeds",
     "problem"),
    ("nvlink", r", all active ", "ok"),
    # The count of differing settings repeats the lines that name each of them: no check of its own.
    ("nccl_env", r"env var\(s\) differ across", "info"),
    ("nccl_env", r"mismatch across |^NCCL environment: %s=%s on rank", "problem"),
    ("nccl_env", r"env vars consistent across ", "ok"),
    ("nccl_env", r"comparison may be partial", "info"),
    ("net_device", r"differ from rank|reported on only %d of %d nodes|differs within", "problem"),
    ("net_device", r"NIC configuration consistent across ", "ok"),
    ("net_device", r"^Net device: (skipped|not inspected) |^net device type=|"
     r"^Net device %s:%d: %s across %d nodes in comm 0x%lx", "info"),
    ("iommu", r"^IOMMU groups: GPU and NIC groups differ ", "problem"),
    ("iommu", r"^IOMMU groups: GPU and NIC groups match on ", "ok"),
    ("iommu", r"^IOMMU groups: (comparison )?unavailable |^IOMMU mode: (%s|unable to identify) ",
     "info"),
    ("ats", r"^ATS state: (disabled on|ATSCtl disabled on) ", "problem"),
    ("ats", r"^ATS state: enabled on ", "ok"),
    ("ats", r"^ATS state: (unable to identify|PCIe capabilities|unavailable|ATSCtl unavailable|"
     r"lspci (unavailable|output truncated)|network device selection) ", "info"),
    ("rdma_topo", r"^rdma_topo check: failed on ", "problem"),
    ("rdma_topo", r"^rdma_topo check: passed on ", "ok"),
    ("rdma_topo", r"^rdma_topo check:? (not usable|mixed results) ", "info"),
    ("paths", r"could not locate the rank's own GPU", "problem"),
    ("paths", r"^Paths: %s across %d ranks", "info"),
    ("xid", r"^S?Xid %u detected .*No user action or further investigation is required", "info"),
    ("xid", r"^S?Xid %u detected ", "problem"),
    ("xid", r"^Xid/SXid: no events requiring immediate attention ", "ok"),
    ("xid", r"^Xid/SXid: (recent-event scan was truncated|no kernel-log source) ", "info"),
    ("incomplete", r"^%s: diagnostics incomplete, gathered ", "problem"),
    ("incomplete", r"^%s: incomplete for comm .*data was unavailable", "info"),
]


def diag_check(fmt):
    """The check of a diagnostics report format, or None when no entry of DIAG_CHECKS names it."""
    for pat, check in DIAG_CHECKS:
        if re.match(pat, fmt):
            return check
    return None


def diag_severity(check, fmt):
    """ok / problem / info of a report format of `check`, or None when no entry covers it."""
    for c, pat, sev in DIAG_SEVERITY:
        if c == check and re.search(pat, fmt):
            return sev
    return None
