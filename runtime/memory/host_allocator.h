// How the runtime's process allocates host memory.
//
// LibTorch's CPU allocator is glibc malloc. By default glibc serves large blocks with mmap and gives
// freed memory back to the OS (munmap, heap trimming), so every training step's activations and
// temporaries are page-faulted in again: measured on gpt2-tiny, a block's forward ran ~10 % slower
// than the identical recompute inside backward, whose buffers were still mapped. A GPU does not
// behave like that (its caching allocator keeps freed blocks), and the op profile measures kernels
// on warm, reused buffers. So the runtime keeps freed memory in the process: no mmap'd blocks, no
// trimming, the heap grown in large steps. The emulated device's capacity is still enforced by its
// own byte ledger (PoolLedger).
//
// The settings are glibc's MALLOC_* environment variables, which take effect only at process start
// (mallopt() from main() came too late: the forward/recompute gap stayed), so the runtime binary
// re-executes itself once with them set. A variable the user set is left alone.
#pragma once

namespace protwin::runtime {

// Re-executes the current program (argv) with the allocator variables set, unless they are
// already in effect. Returns only when no re-execution was needed or it failed.
void keep_freed_host_memory(char** argv);

}  // namespace protwin::runtime
