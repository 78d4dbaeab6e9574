#include "runtime/memory/activation_store.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "traces/error.h"

namespace protwin::rt {

namespace {
// Strides of a dense tensor with t's dimension order (largest stride outermost), as
// empty_like(t, at::MemoryFormat::Preserve) lays it out. A swapped activation comes back with the
// same dimension order, so backward's matmuls see the same transposes: a BLAS whose kernel depends
// on them (OpenBLAS's AVX-512 SGEMM) then rounds exactly as without the swap.
std::vector<int64_t> dense_strides_like(const at::Tensor& t) {
  std::vector<int64_t> order(static_cast<size_t>(t.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); });
  std::vector<int64_t> strides(order.size());
  int64_t s = 1;
  for (auto d = order.rbegin(); d != order.rend(); ++d) {
    strides[static_cast<size_t>(*d)] = s;
    s *= std::max<int64_t>(t.size(*d), 1);
  }
  return strides;
}
}  // namespace

ActivationStore::ActivationStore(int64_t layers, DeviceOps& device)
    : dev_(device), device_(static_cast<size_t>(layers)), host_(static_cast<size_t>(layers)) {}

void ActivationStore::keep_input_only(int64_t layer) {
  LayerActs& a = device(layer);
  at::Tensor input = a.input;
  a = LayerActs{};
  a.input = input;
}

void ActivationStore::swap_out(int64_t layer) {
  LayerActs& d = device(layer);
  PROTWIN_ASSERT(d.act.defined(), "swap-out of layer ", layer, " before its forward");
  LayerActs h = d;  // same defined fields; each replaced by a host copy below
  for (at::Tensor* t : h.tensors()) {
    at::Tensor src = *t;
    if (!src.is_non_overlapping_and_dense()) {  // packed by this op, keeping the dimension order
      src = at::empty_strided(t->sizes(), dense_strides_like(*t), t->options());
      src.copy_(*t);
    }
    dev_.used_here(src);
    at::Tensor dst = dev_.host_empty({src.numel()}, src.scalar_type()).as_strided(src.sizes(), src.strides());
    dev_.copy(dst, src, Link::kD2H);
    *t = dst;
  }
  for (at::Tensor* t : d.tensors()) dev_.used_here(*t);  // freed only after the copies
  host_[static_cast<size_t>(layer)] = std::move(h);
  d = LayerActs{};
}

void ActivationStore::swap_in(int64_t layer) {
  LayerActs& h = host_.at(static_cast<size_t>(layer));
  PROTWIN_ASSERT(h.act.defined(), "swap-in of layer ", layer, " that was not swapped out");
  LayerActs d = h;
  for (at::Tensor* t : d.tensors()) {
    at::Tensor dst = dev_.device_empty({t->numel()}, t->scalar_type()).as_strided(t->sizes(), t->strides());
    dev_.copy(dst, *t, Link::kH2D);
    dev_.used_by_compute(dst);  // read by backward
    *t = dst;
  }
  device(layer) = std::move(d);
  h = LayerActs{};  // pinned blocks are reused only after the copies (CUDA's host allocator)
}

void ActivationStore::drop(int64_t layer) { device(layer) = LayerActs{}; }

void ActivationStore::clear() {
  for (LayerActs& a : device_) a = LayerActs{};
  for (LayerActs& a : host_) a = LayerActs{};
}

int64_t ActivationStore::device_bytes() {
  int64_t n = 0;
  for (LayerActs& a : device_) n += a.bytes();
  return n;
}

int64_t ActivationStore::host_bytes() {
  int64_t n = 0;
  for (LayerActs& a : host_) n += a.bytes();
  return n;
}

}  // namespace protwin::rt
