#include "runtime/memory/host_allocator.h"

#include <unistd.h>

#include <cstdlib>

namespace protwin::runtime {

void keep_freed_host_memory(char** argv) {
#if defined(__GLIBC__)
  constexpr const char* kMarker = "PROTWIN_HOST_ALLOCATOR";
  if (std::getenv(kMarker)) return;  // already re-executed (or the user opted out by setting it)
  ::setenv(kMarker, "1", 1);
  ::setenv("MALLOC_MMAP_THRESHOLD_", "4294967296", 0);   // every block from the heap
  ::setenv("MALLOC_TRIM_THRESHOLD_", "17179869184", 0);  // never give the heap top back
  ::setenv("MALLOC_TOP_PAD_", "268435456", 0);           // grow it 256 MiB at a time
  ::execv("/proc/self/exe", argv);                       // returns only on failure: run as is
#else
  (void)argv;
#endif
}

}  // namespace protwin::runtime
