#include "sim/offload/compiler/knobs.h"

#include <algorithm>

#include <boost/algorithm/string/join.hpp>

#include "sim/offload/compiler/systems.h"
#include "traces/error.h"
#include "traces/json_reader.h"
#include "traces/units.h"

namespace protwin::sim::offload {

// Every knob under its member's name (host_work is set from the system, not a knob).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OffloadKnobs, chunk_bytes, n_persist, n_buffer, n_swap, n_checkpoint, swap_spacing,
                                   per_block_chunks, prefetch, buffer_reuse, cpu_adam_overlap, cpu_adam_impl,
                                   persistent_gpu_adam, offload, grad_reuses_param_buffer, host_grad_bytes,
                                   grad_roundtrip, step_host_passes, host_fp32_params, pinned_alloc)

nlohmann::json OffloadKnobs::to_json() const { return *this; }

int64_t host_grad_shard(const OffloadKnobs& k, int64_t chunk_elems, int64_t shard, int64_t ranks) {
  return k.host_grad_bytes > 0 ? (chunk_elems * k.host_grad_bytes + ranks - 1) / ranks : shard;
}

int64_t host_param_shard(const OffloadKnobs& k, int64_t chunk_elems, int64_t shard, int64_t ranks) {
  return k.host_fp32_params ? std::max(shard, 4 * ceil_div(chunk_elems, ranks)) : shard;
}

namespace {
// The allowed values of the string knobs.
const std::vector<std::string> kCpuAdamImpls = {"simd", "torch"};
const std::vector<std::string> kPinnedAllocs = {"exact", "torch_per_chunk", "torch_flat"};

void check_choice(const char* knob, const std::string& v, const std::vector<std::string>& allowed) {
  PROTWIN_CHECK(std::find(allowed.begin(), allowed.end(), v) != allowed.end(), "knob ", knob, "=\"", v,
                "\": expected one of \"", boost::algorithm::join(allowed, "\", \""), "\"");
}
}  // namespace

void check_choice_knobs(const OffloadKnobs& k) {
  check_choice("cpu_adam_impl", k.cpu_adam_impl, kCpuAdamImpls);
  check_choice("pinned_alloc", k.pinned_alloc, kPinnedAllocs);
}

namespace {
// A string knob must be one of `allowed`; the error names the file and the JSON pointer.
std::string one_of(const traces::JsonNode& root, const std::string& key, const std::string& fallback,
                   const std::vector<std::string>& allowed) {
  const std::string v = root.get_string(key, fallback);
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
    root.at(key).fail("expected one of " + boost::algorithm::join(allowed, ", ") + ", got \"" + v + "\"");
  return v;
}

// Counts of chunks, buffers and layers: far above any model's (layers are at most 2^16), and small
// enough that no sum of them overflows an int. Larger values are refused, never wrapped.
constexpr int64_t kMaxKnobCount = int64_t{1} << 24;
constexpr int64_t kMaxKnobBytes = int64_t{1} << 50;  // chunk_bytes: 1 PiB

int count_knob(const traces::JsonNode& root, const std::string& key, int fallback) {
  return root.has(key) ? static_cast<int>(root.get_int_in(key, 0, kMaxKnobCount)) : fallback;
}
}  // namespace

OffloadKnobs knobs_from_json(const nlohmann::json& j, const std::string& source) {
  auto file = std::make_shared<const std::string>(source);
  traces::JsonNode root(&j, file, "");
  if (!j.is_object()) root.fail("expected a policy object such as {\"system\": \"protrain\", \"n_persist\": 2}");
  OffloadKnobs k = base_knobs(one_of(root, "system", "protrain", system_names()));
  const nlohmann::json knobs = OffloadKnobs{}.to_json();  // named: items() only refers to it
  std::vector<std::string> known = {"system"};
  for (const auto& knob : knobs.items()) known.push_back(knob.key());
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      root.at(it.key()).fail("unknown knob; known knobs: " + boost::algorithm::join(known, ", "));
  k.chunk_bytes = root.has("chunk_bytes") ? root.get_int_in("chunk_bytes", 0, kMaxKnobBytes) : k.chunk_bytes;
  k.n_persist = count_knob(root, "n_persist", k.n_persist);
  k.n_buffer = count_knob(root, "n_buffer", k.n_buffer);
  k.n_swap = count_knob(root, "n_swap", k.n_swap);
  k.n_checkpoint = count_knob(root, "n_checkpoint", k.n_checkpoint);
  k.swap_spacing = count_knob(root, "swap_spacing", k.swap_spacing);
  k.per_block_chunks = root.get_bool("per_block_chunks", k.per_block_chunks);
  k.prefetch = root.get_bool("prefetch", k.prefetch);
  k.buffer_reuse = root.get_bool("buffer_reuse", k.buffer_reuse);
  k.cpu_adam_overlap = root.get_bool("cpu_adam_overlap", k.cpu_adam_overlap);
  k.cpu_adam_impl = one_of(root, "cpu_adam_impl", k.cpu_adam_impl, kCpuAdamImpls);
  k.persistent_gpu_adam = root.get_bool("persistent_gpu_adam", k.persistent_gpu_adam);
  k.offload = root.get_bool("offload", k.offload);
  k.grad_reuses_param_buffer = root.get_bool("grad_reuses_param_buffer", k.grad_reuses_param_buffer);
  k.host_grad_bytes = root.has("host_grad_bytes") ? static_cast<int>(root.get_int_in("host_grad_bytes", 0, 16))
                                                  : k.host_grad_bytes;
  k.grad_roundtrip = root.get_bool("grad_roundtrip", k.grad_roundtrip);
  k.step_host_passes = root.get_bool("step_host_passes", k.step_host_passes);
  k.host_fp32_params = root.get_bool("host_fp32_params", k.host_fp32_params);
  k.pinned_alloc = one_of(root, "pinned_alloc", k.pinned_alloc, kPinnedAllocs);
  return k;
}

OffloadKnobs knobs_from_args(nlohmann::json policy, const std::string& policy_source,
                             const std::vector<std::string>& knob_args,
                             const std::function<void(const OffloadKnobs&)>& check) {
  std::string source = policy_source.empty() ? "--knob" : policy_source;
  for (const auto& kv : knob_args) {
    const size_t eq = kv.find('=');
    PROTWIN_CHECK(eq != std::string::npos && eq > 0, "--knob '", kv, "': expected name=value");
    const std::string name = kv.substr(0, eq), value = kv.substr(eq + 1);
    // Numbers and true/false as JSON, anything else (system, cpu_adam_impl) as a string.
    nlohmann::json v = nlohmann::json::parse(value, nullptr, false);
    policy[name] = v.is_discarded() || v.is_structured() || v.is_null() ? nlohmann::json(value) : v;
    source += " " + kv;
  }
  const OffloadKnobs k = knobs_from_json(policy, source);
  if (!check) return k;
  try {  // a knob out of range names where it came from: the policy file or --knob
    check(k);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal) throw;
    throw Error(source + ": " + e.what());
  }
  return k;
}

}  // namespace protwin::sim::offload
