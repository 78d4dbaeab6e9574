#include "sim/distributed/mpi_transport.h"

#include <mpi.h>

#include <time.h>

#include <climits>
#include <cstdlib>
#include <vector>

namespace {

// Completes a non-blocking request: MPI_Test, then a 20 us sleep, until done. A blocking MPI call
// would spin its core at 100 % while the peer rank computes (2 ranks often share 2 cores).
int complete(MPI_Request& request) {
  const timespec nap{0, 20000};
  for (;;) {
    int done = 0;
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return 1;
    if (done) return 0;
    nanosleep(&nap, nullptr);
  }
}

}  // namespace

extern "C" {

int protwin_mpi_init(int* rank, int* size) {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return 1;
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return 0;
}

int protwin_mpi_gather(const unsigned char* data, long long n, unsigned char** out, long long* lengths) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (MPI_Gather(&n, 1, MPI_LONG_LONG, lengths, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD) != MPI_SUCCESS) return 1;
  std::vector<int> counts, displs;
  long long total = 0;
  if (rank == 0) {
    for (int r = 0; r < size; ++r) {
      counts.push_back(static_cast<int>(lengths[r]));
      displs.push_back(static_cast<int>(total));
      total += lengths[r];
    }
  }
  // Every rank must take part in the Gatherv, so the root's verdict on the total is broadcast.
  int too_big = rank == 0 && total >= INT_MAX;
  MPI_Bcast(&too_big, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (too_big) return 2;
  unsigned char* buffer = nullptr;
  if (rank == 0) buffer = static_cast<unsigned char*>(std::malloc(total > 0 ? static_cast<size_t>(total) : 1));
  const int rc = MPI_Gatherv(data, static_cast<int>(n), MPI_UNSIGNED_CHAR, buffer, counts.data(), displs.data(),
                             MPI_UNSIGNED_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0) *out = buffer;
  return rc == MPI_SUCCESS ? 0 : 1;
}

int protwin_mpi_init_serialized(int* rank, int* size) {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) return 1;
  if (provided < MPI_THREAD_SERIALIZED) return 2;
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return 0;
}

int protwin_mpi_allgatherv_f32(float* buf, const int* counts, const int* displs) {
  MPI_Request request;
  if (MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, MPI_FLOAT, MPI_COMM_WORLD,
                      &request) != MPI_SUCCESS)
    return 1;
  return complete(request);
}

int protwin_mpi_alltoallv_f32(const float* send, const int* send_counts, const int* send_displs, float* recv,
                              const int* recv_counts, const int* recv_displs) {
  MPI_Request request;
  if (MPI_Ialltoallv(send, send_counts, send_displs, MPI_FLOAT, recv, recv_counts, recv_displs, MPI_FLOAT,
                     MPI_COMM_WORLD, &request) != MPI_SUCCESS)
    return 1;
  return complete(request);
}

int protwin_mpi_bcast_f32(float* buf, int n, int root) {
  MPI_Request request;
  if (MPI_Ibcast(buf, n, MPI_FLOAT, root, MPI_COMM_WORLD, &request) != MPI_SUCCESS) return 1;
  return complete(request);
}

int protwin_mpi_allgather_f64(double mine, double* all) {
  MPI_Request request;
  if (MPI_Iallgather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD, &request) != MPI_SUCCESS) return 1;
  return complete(request);
}

void protwin_mpi_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

void protwin_mpi_free(unsigned char* p) { std::free(p); }

void protwin_mpi_finalize(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // extern "C"
