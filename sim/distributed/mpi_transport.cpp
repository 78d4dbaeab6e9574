#include "sim/distributed/mpi_transport.h"

#include <mpi.h>

#include <time.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sim/distributed/poll_backoff.h"

namespace {

// How a rank waits for its collectives (poll_backoff.h). With Open MPI's single-copy transfers
// (CMA) a large message is a handful of handshakes, so a rank can back off while it waits; without
// them (btl_vader_single_copy_mechanism=none, or not known) every 32 KiB fragment needs a test on
// both ranks, and backing off would slow the transfer itself (measured: a 4 MiB all-to-all took
// 15 ms instead of 2.8 ms), so the naps stay at 20 us.
protwin::sim::PollBackoff g_backoff{20e-6, 20e-6};
std::atomic<long long> g_tests{0};
int g_single_copy = 0;

// Completes a non-blocking request by MPI_Test and naps (g_backoff). A blocking MPI call would
// spin its core at 100 % while the peer rank computes (2 ranks often share 2 cores).
int complete(MPI_Request& request) {
  const long tests = protwin::sim::poll_until_done(
      g_backoff,
      [&] {
        int done = 0;
        if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
        return done ? 1 : 0;
      },
      [](double s) {
        const timespec nap{static_cast<time_t>(s), static_cast<long>((s - static_cast<double>(static_cast<time_t>(s))) * 1e9)};
        nanosleep(&nap, nullptr);
      });
  if (tests < 0) return 1;
  g_tests.fetch_add(tests, std::memory_order_relaxed);
  return 0;
}

// 1 when Open MPI's shared-memory transport copies large messages in one step (CMA, XPMEM, KNEM):
// the value of the control variable btl_vader_single_copy_mechanism after MPI_Init, which the
// transport sets to "none" when the host forbids it. 0 when it is "none" or cannot be read.
int read_single_copy() {
  int provided = 0, index = 0, ok = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return 0;
  if (MPI_T_cvar_get_index("btl_vader_single_copy_mechanism", &index) == MPI_SUCCESS) {
    char name[256], desc[8];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity = 0, binding = 0, scope = 0, value = -1, count = 0;
    MPI_Datatype type;
    MPI_T_enum enumtype = MPI_T_ENUM_NULL;
    MPI_T_cvar_handle handle;
    if (MPI_T_cvar_get_info(index, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len, &binding,
                            &scope) == MPI_SUCCESS &&
        enumtype != MPI_T_ENUM_NULL && MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
      if (type == MPI_INT && count == 1 && MPI_T_cvar_read(handle, &value) == MPI_SUCCESS) {
        int items = 0, item_value = 0;
        char enum_name[64];
        int enum_len = sizeof enum_name;
        if (MPI_T_enum_get_info(enumtype, &items, enum_name, &enum_len) == MPI_SUCCESS)
          for (int i = 0; i < items; ++i) {
            char item[64];
            int item_len = sizeof item;
            if (MPI_T_enum_get_item(enumtype, i, &item_value, item, &item_len) == MPI_SUCCESS && item_value == value)
              ok = std::strcmp(item, "none") != 0;
          }
      }
      MPI_T_cvar_handle_free(&handle);
    }
  }
  MPI_T_finalize();
  return ok;
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
  // The least capable rank's transport decides (one rank without single copy needs the fragments'
  // tests from its peers too).
  int single_copy = read_single_copy(), all = 0;
  if (MPI_Allreduce(&single_copy, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS) return 1;
  g_single_copy = all;
  if (g_single_copy) g_backoff.cap_s = 250e-6;
  return 0;
}

int protwin_mpi_single_copy(void) { return g_single_copy; }

long long protwin_mpi_tests(void) { return g_tests.load(std::memory_order_relaxed); }

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
