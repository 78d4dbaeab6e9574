#include "sim/distributed/mpi_transport.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <vector>

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

void protwin_mpi_free(unsigned char* p) { std::free(p); }

void protwin_mpi_finalize(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // extern "C"
