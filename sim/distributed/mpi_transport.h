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
// ---- for the runtime (`mpirun -np N protwin train`: runtime/comm/rank_group.h) ----
// MPI_Init_thread with MPI_THREAD_SERIALIZED: the plan's collective stream thread and the main
// thread (checkpoints, losses) call MPI, never at the same time. 0 on success.
int protwin_mpi_init_serialized(int* rank, int* size);
// 1 when large messages move in one copy (Open MPI's CMA), read once at init: then a rank waiting
// for a collective backs off from 20 us naps to 250 us (poll_backoff.h); else the naps stay 20 us.
int protwin_mpi_single_copy(void);
// MPI_Test calls made so far by this process's collectives (each one a wake-up of the calling
// thread, except the first of each collective).
long long protwin_mpi_tests(void);
// The collectives below are non-blocking MPI calls completed by polling with naps (above), so a
// rank waiting for its peers leaves its core to its compute and copy threads. 0 on success.
// In-place all-gather of fp32 blocks: rank r contributes buf[displs[r], displs[r] + counts[r]).
int protwin_mpi_allgatherv_f32(float* buf, const int* counts, const int* displs);
// MPI_Alltoallv of fp32 blocks.
int protwin_mpi_alltoallv_f32(const float* send, const int* send_counts, const int* send_displs, float* recv,
                              const int* recv_counts, const int* recv_displs);
// Broadcast of n fp32 values from `root`.
int protwin_mpi_bcast_f32(float* buf, int n, int root);
// One double from every rank, in rank order (all has one entry per rank).
int protwin_mpi_allgather_f64(double mine, double* all);
// MPI_Abort of every rank with `code` (a rank that failed while its peers wait in a collective).
void protwin_mpi_abort(int code);
// MPI_Finalize, unless already finalised.
void protwin_mpi_finalize(void);
}
