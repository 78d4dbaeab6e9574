// Transparent huge pages for the simulator's big arrays. A 1M-op plan needs a few hundred MB of
// fresh arrays per run; with 4 KiB pages the kernel's page faults cost as much as the simulation
// itself. madvise(MADV_HUGEPAGE) on a freshly reserved, untouched buffer lets the kernel back it
// with 2 MiB pages. Only a hint: without THP (or off Linux) nothing changes.
#pragma once

#include <cstddef>
#include <vector>

namespace protwin::sim {

// Advises huge pages for the 2 MiB-aligned interior of [p, p + bytes) (no-op below 4 MiB).
void advise_huge_pages(void* p, size_t bytes);

// Reserves room for `n` elements, advises huge pages on it, then resizes to n copies of `value`.
template <typename T>
void resize_huge(std::vector<T>& v, size_t n, const T& value = T()) {
  v.clear();
  v.reserve(n);
  advise_huge_pages(v.data(), n * sizeof(T));
  v.resize(n, value);
}

// Reserves room for `n` elements (contents unchanged) and advises huge pages on the new buffer.
template <typename T>
void reserve_huge(std::vector<T>& v, size_t n) {
  if (v.capacity() >= n) return;
  v.reserve(n);
  advise_huge_pages(v.data(), n * sizeof(T));
}

}  // namespace protwin::sim
