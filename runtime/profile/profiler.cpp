#include "runtime/profile/profiler.h"

#include <unistd.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <thread>

#include "runtime/comm/rank_group.h"
#include "runtime/memory/copy_engine.h"
#include "runtime/memory/thread_split.h"
#include "runtime/model/rope.h"
#include "runtime/optim/bench_adam.h"
#include "runtime/optim/cpu_adam.h"
#include "runtime/optim/host_passes.h"
#include "runtime/executor/runtime_plan.h"
#include "runtime/profile/background_load.h"
#include "runtime/profile/block_profile.h"
#include "runtime/profile/op_timer.h"
#include "runtime/profile/runtime_overhead.h"
#include "runtime/profile/stability_probe.h"
#include "traces/error.h"
#include "traces/plan.h"
#include "traces/kernel_kinds.h"

namespace protwin::rt {

namespace kk = traces::kernel_kinds;  // the kernel-kind registry

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Pointwise kinds only know their element count; rows of 256 (the small models' hidden size and
// sequence length divide it) give the row-wise kernels (norms, softmax) their real row length.
constexpr int64_t kRow = 256;

at::Tensor rows_of(int64_t n) {
  const int64_t r = n % kRow == 0 ? kRow : n;
  return at::randn({n / r, r});
}

}  // namespace

void flush_caches(int64_t bytes) {
  static std::vector<char> buf;
  if (bytes <= 0) return;
  if (static_cast<int64_t>(buf.size()) < bytes) buf.resize(static_cast<size_t>(bytes));
  static char value = 0;
  std::memset(buf.data(), ++value, static_cast<size_t>(bytes));
}

traces::OpTimeStats time_signature(const traces::OpSignature& sig, const ProfileOptions& o) {
  PROTWIN_CHECK(sig.dtype == "fp32", "profile: ", sig.key(), ": the emulated device runs fp32 only");
  if (traces::block_shape_of(sig)) return time_block(sig, o);
  const auto& s = sig.shape;
  const std::string& k = sig.kind;
  auto need = [&](size_t dims) {
    PROTWIN_CHECK(s.size() == dims, "profile: ", sig.key(), ": expected ", dims, " dimensions");
  };
  at::NoGradGuard no_grad;
  if (k == kk::kGemm) {
    need(3);
    at::Tensor a = at::randn({s[0], s[2]}), b = at::randn({s[2], s[1]});
    return time_runs([&] { at::mm(a, b); }, o);
  }
  if (k == kk::kAttention) {
    need(4);  // the runtime's attention_fwd without the softmax (a kernel of its own)
    at::Tensor q = at::randn({s[0], s[1], s[3]}), kk = at::randn({s[0], s[2], s[3]}), v = at::randn({s[0], s[2], s[3]});
    at::Tensor att = at::_softmax(at::randn({s[0], s[1], s[2]}), -1, false);
    at::Tensor future = at::ones({s[1], s[2]}, at::kBool).triu_(1);
    const double scale = 1.0 / std::sqrt(static_cast<double>(s[3]));
    return time_runs([&] {
      at::Tensor sc = at::matmul(q, kk.transpose(-2, -1)).mul_(scale);
      sc.masked_fill_(future, -std::numeric_limits<double>::infinity());
      at::matmul(att, v);
    }, o);
  }
  if (k == kk::kRope || k == "rope_backward") {
    need(3);  // {b*heads, s, d}: the runtime's rotate-half RoPE on the heads' strided view
    const at::Tensor x = at::randn({s[1], s[0], s[2]}).transpose(0, 1);  // [b*heads, s, d], strided
    const at::Tensor dy = at::randn({s[0], s[1], s[2]});                  // gradients come contiguous
    const at::Tensor cos = at::randn({s[1], s[2]}), sin = at::randn({s[1], s[2]});
    if (k == kk::kRope) return time_runs([&] { rope_forward(x, cos, sin); }, o);
    return time_runs([&] { rope_backward(dy, cos, sin); }, o);
  }
  if (k == kk::kCrossEntropy) {
    need(2);
    at::Tensor logits = at::randn({s[0], s[1]});
    at::Tensor tgt = at::randint(0, s[1], {s[0]}, at::kLong);
    return time_runs([&] { at::nll_loss(at::_log_softmax(logits, -1, false), tgt); }, o);
  }
  if (k == "attention_backward") {
    need(4);  // the runtime's attention_bwd without the softmax backward (its own entry)
    at::Tensor q = at::randn({s[0], s[1], s[3]}), kk = at::randn({s[0], s[2], s[3]}), v = at::randn({s[0], s[2], s[3]});
    at::Tensor dy = at::randn({s[0], s[1], s[3]}), att = at::_softmax(at::randn({s[0], s[1], s[2]}), -1, false);
    at::Tensor ds = at::randn({s[0], s[1], s[2]});
    return time_runs([&] {
      at::matmul(dy, v.transpose(-2, -1));
      at::matmul(att.transpose(-2, -1), dy);
      at::matmul(ds, kk);
      at::matmul(ds.transpose(-2, -1), q);
    }, o);
  }
  if (k == "cross_entropy_backward") {
    need(2);  // d logits = (softmax - onehot) / rows
    at::Tensor logp = at::_log_softmax(at::randn({s[0], s[1]}), -1, false);
    at::Tensor tgt = at::randint(0, s[1], {s[0], 1}, at::kLong);
    return time_runs([&] {
      at::Tensor d = logp.exp();
      d.scatter_add_(1, tgt, at::full({s[0], 1}, -1.0f));
      d.mul_(1.0 / static_cast<double>(s[0]));
    }, o);
  }
  need(1);
  const int64_t n = s[0];
  PROTWIN_CHECK(n > 0, "profile: ", sig.key(), ": expected elements > 0");
  if (k == "softmax_backward") {
    at::Tensor y = at::_softmax(rows_of(n), -1, false), dy = at::randn(y.sizes());
    return time_runs([&] { at::_softmax_backward_data(dy, y, -1, at::kFloat); }, o);
  }
  if (k == "layernorm_backward") {
    at::Tensor x = rows_of(n), dy = at::randn(x.sizes());
    at::Tensor w = at::ones({x.size(1)}), b = at::zeros({x.size(1)});
    auto fwd = at::native_layer_norm(x, {x.size(1)}, w, b, 1e-5);
    return time_runs([&] {
      at::native_layer_norm_backward(dy, x, {x.size(1)}, std::get<1>(fwd), std::get<2>(fwd), w, b, {true, true, true});
    }, o);
  }
  if (k == "rmsnorm_backward") {
    at::Tensor x = rows_of(n), dy = at::randn(x.sizes()), w = at::ones({x.size(1)});
    at::Tensor rstd = at::rsqrt(x.pow(2).mean(-1, true).add_(1e-5));
    return time_runs([&] {
      at::Tensor g = dy * w;
      (g - x * rstd.pow(2) * (g * x).mean(-1, true)).mul_(rstd);
      (dy * x * rstd).sum(0);
    }, o);
  }
  if (k == "gelu_backward") {
    at::Tensor x = at::randn({n}), dy = at::randn({n});
    return time_runs([&] { at::gelu_backward(dy, x, "tanh"); }, o);
  }
  if (k == "swiglu_backward") {
    at::Tensor g = at::randn({n}), u = at::randn({n}), dy = at::randn({n});
    return time_runs([&] {
      dy * at::silu(g);
      at::silu_backward(dy * u, g);
    }, o);
  }
  if (k == "elementwise_backward" || k == "dropout_backward" || k == "relu_backward") {
    at::Tensor a = at::randn({n}), b = at::randn({n});
    return time_runs([&] { at::add(a, b); }, o);
  }
  if (k == "embedding_backward") {
    at::Tensor grad = at::zeros({256, kRow});
    const int64_t rows = n % kRow == 0 ? n / kRow : 1;
    at::Tensor tok = at::randint(0, 256, {rows}, at::kLong), dy = at::randn({rows, kRow});
    return time_runs([&] { grad.index_add_(0, tok, dy); }, o);
  }
  if (k == kk::kSoftmax) {
    at::Tensor x = rows_of(n);
    return time_runs([&] { at::_softmax(x, -1, false); }, o);
  }
  if (k == kk::kLayernorm) {
    at::Tensor x = rows_of(n);
    at::Tensor w = at::ones({x.size(1)}), b = at::zeros({x.size(1)});
    return time_runs([&] { at::native_layer_norm(x, {x.size(1)}, w, b, 1e-5); }, o);
  }
  if (k == kk::kRmsnorm) {
    at::Tensor x = rows_of(n);
    at::Tensor w = at::ones({x.size(1)});
    return time_runs([&] { x.mul(at::rsqrt(x.pow(2).mean(-1, true).add_(1e-5))).mul_(w); }, o);
  }
  if (k == kk::kGelu) {
    at::Tensor x = at::randn({n});
    return time_runs([&] { at::gelu(x, "tanh"); }, o);
  }
  if (k == kk::kSwiglu) {
    at::Tensor g = at::randn({n}), u = at::randn({n});
    return time_runs([&] { at::silu(g).mul_(u); }, o);
  }
  if (k == kk::kElementwise || k == kk::kDropout || k == kk::kRelu) {
    at::Tensor a = at::randn({n}), b = at::randn({n});
    return time_runs([&] { at::add(a, b); }, o);
  }
  if (k == kk::kEmbedding) {
    at::Tensor table = at::randn({256, kRow});
    const int64_t rows = n % kRow == 0 ? n / kRow : 1;
    at::Tensor tok = at::randint(0, 256, {rows}, at::kLong);
    return time_runs([&] { at::embedding(table, tok); }, o);
  }
  PROTWIN_CHECK(false, "profile: ", sig.key(), ": no benchmark for kind \"", k, "\"");
  return {};
}

namespace {

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t c = line.find(':');
      if (c != std::string::npos) return line.substr(c + 2);
    }
  return "unknown";
}

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// Seconds of one throttled copy of `bytes` (mean of `reps`).
double copy_seconds(double gbps, size_t bytes, int reps) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  CopyEngine e(gbps);
  e.copy(dst.data(), src.data(), bytes);
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) e.copy(dst.data(), src.data(), bytes);
  return seconds_since(t0) / reps;
}

struct AdamBuf {
  std::vector<float> p, g, m, v;
  explicit AdamBuf(int64_t n) : p(n, 0.1f), g(n, 0.01f), m(n, 0.f), v(n, 0.f) {}
  void step(int threads) {
    AdamBuffers b;
    b.params = p.data();
    b.grads = g.data();
    b.exp_avg = m.data();
    b.exp_avg_sq = v.data();
    b.n = static_cast<int64_t>(p.size());
    adam_step_cpu(AdamConfig{}, 1, b, threads);
  }
};

// With ranks (ProfileOptions::ranks), waits until every rank is here (an all-gather of one value):
// the ranks then time the same thing at once, as the ranks of a step compute in step.
void together(const ProfileOptions& o) {
  if (o.ranks && o.ranks->size() > 1) o.ranks->all_gather(0.0);
}

struct Beside {
  double compute_slowdown = 1;  // ref's time beside the background work / alone
  double background_run_s = 0;  // one run of the background work while ref ran beside it
  double background_cpu_share = 0;  // the background thread's CPU time over its wall time
  double background_tests_per_s = 0;  // its MPI completion tests (wake-ups) per second
};

// `ref` timed alone and beside the work `start` begins (on its own thread) in alternating windows
// (alone, beside, alone, ...): a shared machine's speed drifts within seconds, and alternation lets
// the drift reach both sides alike. The slowdown is the ratio of the windows' medians. With ranks,
// every window starts on all ranks together (an all-gather of one value), so each rank is timed
// with its peers in the same state.
Beside time_beside_load(const traces::OpSignature& ref, const std::function<std::unique_ptr<BackgroundLoad>()>& start,
                        const ProfileOptions& o, int windows = 6) {
  ProfileOptions w = o;
  w.min_seconds = 0.06;
  std::vector<double> alone, beside;
  double bg_wall = 0, bg_cpu = 0;
  long bg_runs = 0;
  long long bg_tests = 0;
  for (int i = 0; i < windows; ++i) {
    together(o);
    alone.push_back(time_signature(ref, w).mean);
    together(o);
    const auto t0 = Clock::now();
    std::unique_ptr<BackgroundLoad> bg = start();
    beside.push_back(time_signature(ref, w).mean);
    bg->stop();
    bg_wall += seconds_since(t0);
    bg_runs += bg->runs();
    bg_cpu += bg->cpu_s();
    bg_tests += bg->tests();
  }
  return {traces::median(beside) / traces::median(alone), bg_wall / static_cast<double>(std::max(1L, bg_runs)),
          bg_cpu / std::max(1e-9, bg_wall), static_cast<double>(bg_tests) / std::max(1e-9, bg_wall)};
}

Beside time_beside(const traces::OpSignature& ref, const std::function<void()>& work, const ProfileOptions& o) {
  return time_beside_load(ref, [&] { return std::make_unique<LocalLoad>(work); }, o);
}

}  // namespace

ProfileResult run_profile(const ProfileOptions& opts) {
  ProfileOptions o = opts;
  if (o.signatures.empty()) {
    for (const auto& m : default_profile_models()) merge_signatures(o.signatures, model_signatures(m));
    merge_signatures(o.signatures, backward_signatures(o.signatures));
  }
  ProfileResult r;
  HostMeasurements& h = r.host;
  h.cores = ThreadSplit::host_cores();
  h.compute_threads = o.compute_threads > 0 ? o.compute_threads : ThreadSplit::choose(h.cores, true).compute;
  h.cpu = cpu_name();
  h.memory_bytes = static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  h.link_throttle_GBps = o.link_gbps;
  h.when = now_iso();
  const long total = std::max(1, o.rounds) + 5;
  long done = 0;
  auto tick = [&] { if (o.progress) o.progress(++done, total); };

  // 1. Ops at the compute split.
  set_compute_threads(h.compute_threads);
  r.profile = traces::OpProfile("emulated (host CPU): " + h.cpu, "measured",
                                "protwin profile (runtime/profile/profiler.cpp), " + h.when);
  ProfileOptions per_round = o;
  per_round.min_seconds = o.min_seconds / std::max(1, o.rounds);
  per_round.min_repeats = std::max(1, o.min_repeats / std::max(1, o.rounds));
  // The reference probe beside every op: the machine's speed while the profile was taken, so
  // that measured steps can be expressed at the same speed (issue 22).
  std::vector<double> probe_gflops, copy_probe_gbps, adam_probe_mps;
  for (int round = 0; round < std::max(1, o.rounds); ++round) {
    for (const auto& sig : o.signatures) {
      // Every rank times the same op at once: a rank ahead would otherwise time its last ops (the
      // plans' whole blocks) beside its peer's next section (the all-core DRAM rate, sleeping copies).
      together(o);
      probe_gflops.push_back(reference_gemm_gflops());
      copy_probe_gbps.push_back(reference_copy_gbps(o.link_gbps));
      adam_probe_mps.push_back(reference_adam_mparams_per_s());
      traces::OpProfileEntry e;
      e.sig = sig;
      e.us = time_signature(sig, per_round);
      e.source = "protwin profile: ATen on the emulated device, " + std::to_string(h.compute_threads) + " thread(s)";
      r.profile.add(e);  // rounds pool into one entry
    }
    tick();
  }
  for (const auto& e : r.profile.entries())
    if (e.sig.kind == kk::kGemm) {
      const double gflop = 2e-9 * static_cast<double>(e.sig.shape[0]) * e.sig.shape[1] * e.sig.shape[2];
      h.gemm.push_back({gflop, gflop * 1e-3 / (e.us.mean * 1e-6)});
    }
  together(o);
  // 2. Memory-bound rate vs bytes (elementwise add: 3 x 4 bytes per element) and launch floor.
  // The output is preallocated (add_out): this is bandwidth, not first-touch page faults.
  auto add_gbps = [&](int64_t n) {
    at::Tensor a = at::randn({n}), b = at::randn({n}), c = at::empty({n});
    const traces::OpTimeStats s = time_runs([&] { at::add_out(c, a, b); }, o);
    return 12.0 * static_cast<double>(n) / (s.mean * 1e-6) * 1e-9;
  };
  for (int64_t n : {int64_t{1} << 10, int64_t{1} << 14, int64_t{1} << 18, int64_t{1} << 20, int64_t{1} << 22,
                    int64_t{1} << 24})
    h.memory.push_back({12.0 * static_cast<double>(n), add_gbps(n)});
  h.launch_floor_us = time_signature({kk::kElementwise, {1}, "fp32"}, o).mean;
  set_compute_threads(h.cores);
  h.dram_GBps = add_gbps(int64_t{1} << 24);
  set_compute_threads(h.compute_threads);
  tick();

  together(o);
  // 3. Copies through the runtime's copy engine at the throttle.
  const size_t big = size_t{16} << 20, small = 4096;
  const double t_big = copy_seconds(o.link_gbps, big, 3);
  h.h2d_GBps = h.d2h_GBps = static_cast<double>(big) / t_big * 1e-9;
  h.d2h_GBps = static_cast<double>(big) / copy_seconds(o.link_gbps, big, 3) * 1e-9;
  const double t_small = copy_seconds(o.link_gbps, small, 50);
  h.h2d_latency_us = h.d2h_latency_us = std::max(0.0, (t_small - small / (h.h2d_GBps * 1e9)) * 1e6);
  for (size_t b : {size_t{64} << 10, size_t{256} << 10, size_t{1} << 20, size_t{4} << 20, big}) {
    const double t = copy_seconds(o.link_gbps, b, 3) - h.h2d_latency_us * 1e-6;
    h.copy_size.push_back({static_cast<double>(b), static_cast<double>(b) / t * 1e-9 / h.h2d_GBps});
  }
  {
    std::vector<char> s1(big, 1), d1(big), s2(big, 1), d2(big);
    const auto t0 = Clock::now();
    std::thread a([&] { CopyEngine(o.link_gbps).copy(d1.data(), s1.data(), big); });
    std::thread b([&] { CopyEngine(o.link_gbps).copy(d2.data(), s2.data(), big); });
    a.join();
    b.join();
    h.duplex_fraction = std::min(1.0, t_big / seconds_since(t0));
  }
  tick();

  together(o);
  // 4. CPU Adam: one thread (the runtime's optimizer worker) and all cores.
  {
    AdamBuf buf(int64_t{4} << 20);
    const double n = static_cast<double>(buf.p.size());
    h.adam_params_per_s_1t = n / (time_runs([&] { buf.step(1); }, o).mean * 1e-6);
    h.adam_params_per_s_all = n / (time_runs([&] { buf.step(h.cores); }, o).mean * 1e-6);
    h.adam_torch_slowdown = bench_adam(int64_t{4} << 20, 1, 2).speedup;
    AdamBuf tiny(1024);
    h.adam_fixed_us = time_runs([&] { tiny.step(1); }, o).mean;
  }
  // DeepSpeed's step passes, as the chunk store runs them on the optimizer's worker (whose ATen
  // ops use the compute split's intra-op threads).
  {
    const int64_t n = int64_t{4} << 20;
    at::Tensor g = at::randn({n}), master = at::randn({n}), half = at::empty({n}, at::kHalf);
    bool sink = false;
    auto ns_per_elem = [&](const std::function<void()>& f) { return time_runs(f, o).mean * 1e3 / static_cast<double>(n); };
    h.overflow_scan_ns_per_elem = ns_per_elem([&] { sink = sink || has_non_finite(g); });
    h.unscale_ns_per_elem = ns_per_elem([&] { unscale(g, 1.0); });
    h.fp16_copy_ns_per_elem = ns_per_elem([&] { copy_to_half(half, master); });
    PROTWIN_ASSERT(!sink, "profile: non-finite values in a randn tensor");
  }
  tick();

  together(o);
  // 5. Contention on the shared cores: a 512x1024x1024 GEMM beside both copy workers / CPU Adam,
  // and under mpirun beside this rank's collectives (each rank's collective stream runs on the
  // host cores too, as the copy workers do).
  {
    const traces::OpSignature ref{kk::kGemm, {512, 1024, 1024}, "fp32"};
    const double copy_alone = copy_seconds(o.link_gbps, big, 2);
    std::vector<char> s1(big, 1), d1(big), s2(big, 1), d2(big);
    const Beside c = time_beside(ref, [&] {
      std::thread second([&] { CopyEngine(o.link_gbps).copy(d2.data(), s2.data(), big); });
      CopyEngine(o.link_gbps).copy(d1.data(), s1.data(), big);
      second.join();
    }, o);
    h.compute_slowdown_with_copies = c.compute_slowdown;
    h.copy_slowdown_with_compute = c.background_run_s / copy_alone;
    AdamBuf buf(int64_t{4} << 20);
    const double adam_alone = time_runs([&] { buf.step(1); }, o).mean * 1e-6;
    AdamBuf bg(int64_t{4} << 20);
    const Beside a = time_beside(ref, [&] { bg.step(1); }, o);
    h.compute_slowdown_with_adam = a.compute_slowdown;
    h.adam_slowdown_with_compute = a.background_run_s / adam_alone;
    if (o.ranks && o.ranks->size() > 1) {
      const Beside k =
          time_beside_load(ref, [&] { return std::make_unique<CollectiveLoad>(*o.ranks, o.collective_bytes); }, o);
      h.compute_slowdown_with_collectives = k.compute_slowdown;
      h.collective_thread_cpu_share = k.background_cpu_share;
      h.collective_tests_per_s = k.background_tests_per_s;
      h.collective_single_copy = o.ranks->single_copy();
    }
  }
  // 6. The runtime's own work per plan op and per step, outside the ops' bodies.
  {
    const RuntimeOverhead ro = measure_runtime_overhead();
    h.runtime_op_us = ro.op_us;
    h.runtime_step_us = o.step_plan.empty()
                            ? ro.step_us
                            : replayer_step_us(make_runtime_plan(traces::read_plan(o.step_plan), o.step_plan), o.link_gbps);
  }
  tick();
  nlohmann::json prov = {{"kind", "measured"},
                         {"source", "protwin profile (runtime/profile/profiler.cpp), " + h.when},
                         {"note", "fp32 ATen ops on the emulated device (this host's CPU), " +
                                      std::to_string(h.compute_threads) + " compute thread(s); attention = "
                                      "QK^T, mask and PV (softmax is its own entry); row-wise kernels over rows of 256"},
                         {"compute_threads", h.compute_threads},
                         {"link_GBps", h.link_throttle_GBps},
                         {"reference_probe",
                          {{"what", "60 x fp32 GEMM 256^3 beside every op (runtime/profile/stability_probe.h)"},
                           {"samples", probe_gflops.size()},
                           {"median_gflops", traces::median(probe_gflops)}}},
                         {"reference_copy_probe",
                          {{"what", "1 MiB through the copy engine at the link throttle beside every op "
                                    "(runtime/profile/stability_probe.h)"},
                           {"samples", copy_probe_gbps.size()},
                           {"median_GBps", traces::median(copy_probe_gbps)}}},
                         {"reference_adam_probe",
                          {{"what", "CPU Adam on 2^18 fp32 parameters, 1 thread, beside every op "
                                    "(runtime/profile/stability_probe.h)"},
                           {"samples", adam_probe_mps.size()},
                           {"median_mparams_per_s", traces::median(adam_probe_mps)}}},
                         {"contention",
                          {{"compute_slowdown_with_copies", h.compute_slowdown_with_copies},
                           {"compute_slowdown_with_adam", h.compute_slowdown_with_adam},
                           {"copy_slowdown_with_compute", h.copy_slowdown_with_compute},
                           {"adam_slowdown_with_compute", h.adam_slowdown_with_compute}}}};
  if (h.compute_slowdown_with_collectives > 0) {
    prov["contention"]["compute_slowdown_with_collectives"] = h.compute_slowdown_with_collectives;
    prov["contention"]["ranks"] = o.ranks->size();  // measured with this many ranks in step
    // Not a rule: how much of a core the collective thread itself used (a slowdown above
    // 1 + share / compute threads is more than the thread's own CPU time).
    prov["contention"]["collective_thread_cpu_share"] = h.collective_thread_cpu_share;
    // Nor these: the collective thread's MPI_Test wake-ups per second meanwhile, and whether it
    // backed off (single-copy transfers, sim/distributed/poll_backoff.h).
    prov["contention"]["collective_tests_per_s"] = h.collective_tests_per_s;
    prov["contention"]["collective_single_copy"] = h.collective_single_copy;
  }
  r.profile.set_provenance(prov);
  tick();
  return r;
}

}  // namespace protwin::rt
