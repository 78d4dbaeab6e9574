#include "runtime/memory/activation_store.h"

#include <ATen/ATen.h>

#include "traces/error.h"

namespace protwin::rt {

namespace {
// A contiguous copy of `t` made over `link` (a strided view is packed first, by the same worker).
at::Tensor copy_over(const at::Tensor& t, CopyEngine& link) {
  at::Tensor src = t.is_contiguous() ? t : t.contiguous();
  at::Tensor dst = at::empty(src.sizes(), src.options());
  link.copy(dst.data_ptr(), src.data_ptr(), src.nbytes());
  return dst;
}
}  // namespace

ActivationStore::ActivationStore(int64_t layers)
    : device_(static_cast<size_t>(layers)), host_(static_cast<size_t>(layers)) {}

void ActivationStore::keep_input_only(int64_t layer) {
  LayerActs& a = device(layer);
  at::Tensor input = a.input;
  a = LayerActs{};
  a.input = input;
}

void ActivationStore::swap_out(int64_t layer, CopyEngine& link) {
  LayerActs& d = device(layer);
  PROTWIN_ASSERT(d.act.defined(), "swap-out of layer ", layer, " before its forward");
  LayerActs h = d;  // same defined fields; each replaced by a host copy below
  for (at::Tensor* t : h.tensors()) *t = copy_over(*t, link);
  host_[static_cast<size_t>(layer)] = std::move(h);
  d = LayerActs{};
}

void ActivationStore::swap_in(int64_t layer, CopyEngine& link) {
  LayerActs& h = host_.at(static_cast<size_t>(layer));
  PROTWIN_ASSERT(h.act.defined(), "swap-in of layer ", layer, " that was not swapped out");
  LayerActs d = h;
  for (at::Tensor* t : d.tensors()) *t = copy_over(*t, link);
  device(layer) = std::move(d);
  h = LayerActs{};
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
