// A two-process NCCL all-reduce loop that can be made to hang, for recording what NCCL's RAS port
// says about a hung job (tests/gpu/ras-hang.sh).
//
//   ras_hang_loop RANK NRANKS ID_FILE BYTES
// Runs all-reduces forever, one at a time (each one synchronised), printing "rank R iter N"
// every 200. SIGUSR1 stalls the main thread before the next all-reduce (a rank stuck in its own
// code while NCCL's threads, RAS included, keep answering); SIGUSR2 resumes it. The environment
// (NCCL_HOSTID, NCCL_RAS_ADDR, ...) is the caller's.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

static volatile std::sig_atomic_t g_stall = 0;

#define CHECK(x, ok, msg)                                  \
  do {                                                     \
    if (!(ok)) {                                           \
      std::fprintf(stderr, "%s: %s\n", #x, msg);           \
      return 1;                                            \
    }                                                      \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s RANK NRANKS ID_FILE BYTES\n", argv[0]);
    return 2;
  }
  const int rank = std::atoi(argv[1]);
  const int nranks = std::atoi(argv[2]);
  const std::string id_file = argv[3];
  const size_t count = std::strtoull(argv[4], nullptr, 10) / sizeof(float);
  std::signal(SIGUSR1, [](int) { g_stall = 1; });
  std::signal(SIGUSR2, [](int) { g_stall = 0; });

  ncclUniqueId id;
  if (rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    CHECK(ncclGetUniqueId, r == ncclSuccess, ncclGetErrorString(r));
    std::string tmp = id_file + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(id.internal, sizeof(id.internal));
    std::rename(tmp.c_str(), id_file.c_str());
  } else {
    for (int i = 0; i < 600; ++i) {
      std::ifstream in(id_file, std::ios::binary);
      if (in && in.read(id.internal, sizeof(id.internal))) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  cudaError_t ce = cudaSetDevice(0);
  CHECK(cudaSetDevice, ce == cudaSuccess, cudaGetErrorString(ce));
  float* buf = nullptr;
  ce = cudaMalloc(&buf, count * sizeof(float));
  CHECK(cudaMalloc, ce == cudaSuccess, cudaGetErrorString(ce));
  cudaStream_t stream;
  ce = cudaStreamCreate(&stream);
  CHECK(cudaStreamCreate, ce == cudaSuccess, cudaGetErrorString(ce));
  ncclComm_t comm;
  ncclResult_t nr = ncclCommInitRank(&comm, nranks, id, rank);
  CHECK(ncclCommInitRank, nr == ncclSuccess, ncclGetErrorString(nr));
  for (long iter = 1;; ++iter) {
    if (g_stall) {
      std::printf("rank %d stalls before all-reduce %ld\n", rank, iter);
      std::fflush(stdout);
      while (g_stall) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    nr = ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, stream);
    CHECK(ncclAllReduce, nr == ncclSuccess, ncclGetErrorString(nr));
    ce = cudaStreamSynchronize(stream);
    CHECK(cudaStreamSynchronize, ce == cudaSuccess, cudaGetErrorString(ce));
    if (iter % 200 == 0) {
      std::printf("rank %d iter %ld\n", rank, iter);
      std::fflush(stdout);
    }
  }
}
