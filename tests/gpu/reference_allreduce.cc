// A minimal two-process NCCL all-reduce loop, written directly against nccl.h and the CUDA runtime,
// to check the probe's bandwidth figure against the plainest possible use of NCCL.
//
//   reference_allreduce RANK NRANKS ID_FILE BYTES WARMUP ITERS
// Rank 0 writes the unique id to ID_FILE (atomically, via a rename); the other ranks wait for it.
// Prints one line: "rank R bytes B time_us T algbw_GBps A busbw_GBps W check ok|bad".
// The environment (NCCL_NET, NCCL_HOSTID, ...) is the caller's.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#define CHECK_CUDA(x)                                              \
  do {                                                             \
    cudaError_t e = (x);                                           \
    if (e != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); \
      return 1;                                                    \
    }                                                              \
  } while (0)
#define CHECK_NCCL(x)                                              \
  do {                                                             \
    ncclResult_t r = (x);                                          \
    if (r != ncclSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, ncclGetErrorString(r)); \
      return 1;                                                    \
    }                                                              \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s RANK NRANKS ID_FILE BYTES WARMUP ITERS\n", argv[0]);
    return 2;
  }
  int rank = std::atoi(argv[1]);
  int nranks = std::atoi(argv[2]);
  std::string id_file = argv[3];
  size_t bytes = std::strtoull(argv[4], nullptr, 10);
  int warmup = std::atoi(argv[5]);
  int iters = std::atoi(argv[6]);
  size_t count = bytes / sizeof(float);

  ncclUniqueId id;
  if (rank == 0) {
    CHECK_NCCL(ncclGetUniqueId(&id));
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

  CHECK_CUDA(cudaSetDevice(0));
  float* send = nullptr;
  float* recv = nullptr;
  CHECK_CUDA(cudaMalloc(&send, count * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&recv, count * sizeof(float)));
  std::vector<float> host(count, static_cast<float>(rank + 1));
  CHECK_CUDA(cudaMemcpy(send, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));

  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  for (int i = 0; i < warmup; ++i) {
    CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream));
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream));
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;

  CHECK_CUDA(cudaMemcpy(host.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost));
  float want = static_cast<float>(nranks * (nranks + 1) / 2);
  bool ok = true;
  for (float v : host) ok = ok && v == want;
  double algbw = static_cast<double>(bytes) / seconds / 1e9;
  double busbw = algbw * 2.0 * (nranks - 1) / nranks;
  std::printf("rank %d bytes %zu time_us %.1f algbw_GBps %.3f busbw_GBps %.3f check %s\n", rank,
              bytes, seconds * 1e6, algbw, busbw, ok ? "ok" : "bad");
  ncclCommDestroy(comm);
  cudaFree(send);
  cudaFree(recv);
  return ok ? 0 : 1;
}
