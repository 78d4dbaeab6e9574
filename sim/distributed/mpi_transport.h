// The MPI plugin's C interface (libprotwin_mpi.so, built from mpi_transport.cpp against Open MPI's
// C API). evaluate_points.cpp opens the plugin only under mpirun, so protwin itself does not link
// libmpi and its start-up does not pay for loading it.
#pragma once

extern "C" {
// MPI_Init_thread (funneled: only the main thread calls MPI); this process's rank and the size of
// MPI_COMM_WORLD. 0 on success.
int protwin_mpi_init(int* rank, int* size);
// Gathers `n` bytes from every rank on rank 0: there *out receives every rank's bytes in rank
// order (free with protwin_mpi_free) and lengths[r] rank r's count (lengths has one entry per
// rank). 0 on success, 2 when the total exceeds what one MPI_Gatherv carries (2 GiB).
int protwin_mpi_gather(const unsigned char* data, long long n, unsigned char** out, long long* lengths);
void protwin_mpi_free(unsigned char* p);
// MPI_Finalize, unless already finalised.
void protwin_mpi_finalize(void);
}
