#include "hwmodels/rate_cost_model.h"

#include <algorithm>
#include <memory>
#include <set>

#include "traces/error.h"
#include "traces/json_reader.h"

namespace protwin::hw {

namespace {

using traces::JsonNode;

inline constexpr const char* kRatesFormat = "protwin.rates";
inline constexpr int kRatesVersion = 1;

// Sane ranges of the rates: a rate is 0 (costs nothing) or from 1e-6 (a KB/s, a MFLOPS) to 1e9
// (an EB/s, a ZFLOPS); a latency at most 1e9 us (17 minutes). Outside them an op's time leaves
// the simulator's int64 nanoseconds.
constexpr double kMinRate = 1e-6, kMaxRate = 1e9, kMaxLatencyUs = 1e9;

double rate(const JsonNode& node, const std::string& key) {
  node.get_positive_number(key);
  return node.get_number_in(key, kMinRate, kMaxRate);
}

double rate_or_zero(const JsonNode& node, const std::string& key) {
  if (!node.has(key) || node.at(key).as_number() == 0) return 0;  // 0: costs nothing
  return rate(node, key);
}

}  // namespace

RateCostModel RateCostModel::from_json(const nlohmann::json& j, const std::string& source) {
  const JsonNode root(&j, std::make_shared<const std::string>(source), "");
  root.check_keys({"format", "version", "links", "streams", "default", "note", "provenance"});
  // The header is optional (rates embedded in a plan's meta.rates omit it); one given is whole.
  if (root.has("format") || root.has("version")) root.check_format(kRatesFormat, kRatesVersion, "rates");

  RateCostModel m;
  m.source_ = source;
  if (auto links = root.find("links")) {
    if (!links->is_object()) links->fail(std::string("expected an object, got ") + traces::json_type_name(links->raw()));
    for (auto it = links->raw().begin(); it != links->raw().end(); ++it) {
      const JsonNode l = links->at(it.key());
      l.check_keys({"GBps", "note"});
      m.links_.push_back(LinkSpec{it.key(), rate(l, "GBps")});
    }
  }

  auto read_rate = [&](const JsonNode& s, bool allow_links) {
    s.check_keys(allow_links ? std::set<std::string>{"tflops", "GBps", "latency_us", "links", "max_GBps", "note"}
                             : std::set<std::string>{"tflops", "GBps", "latency_us", "note"});
    StreamRate r;
    r.tflops = rate_or_zero(s, "tflops");
    r.GBps = rate_or_zero(s, "GBps");
    r.latency_us = s.has("latency_us") ? s.get_number_in("latency_us", 0, kMaxLatencyUs) : 0;
    r.max_GBps = rate_or_zero(s, "max_GBps");
    if (auto links = s.find("links")) {
      const size_t n = links->size();
      if (n < 1 || n > static_cast<size_t>(Phase::kMaxLinks)) {
        links->fail("expected 1 to " + std::to_string(Phase::kMaxLinks) + " link names, got " +
                    std::to_string(n));
      }
      for (size_t i = 0; i < n; ++i) {
        const JsonNode ln = links->at(i);
        const std::string name = ln.as_string();
        int index = -1;
        std::string known;
        for (size_t k = 0; k < m.links_.size(); ++k) {
          if (m.links_[k].name == name) index = static_cast<int>(k);
          known += (known.empty() ? "" : ", ") + m.links_[k].name;
        }
        if (index < 0) ln.fail("unknown link \"" + name + "\" (links: " + (known.empty() ? "none" : known) + ")");
        if (std::count(r.links.begin(), r.links.end(), index) > 0) ln.fail("link \"" + name + "\" listed twice");
        r.links.push_back(index);
      }
      if (s.has("GBps")) {
        s.at("GBps").fail("a stream with links moves its bytes over the links; use max_GBps for a "
                          "per-transfer cap");
      }
    } else if (s.has("max_GBps")) {
      s.at("max_GBps").fail("max_GBps caps a transfer and needs \"links\"");
    }
    return r;
  };

  if (auto streams = root.find("streams")) {
    if (!streams->is_object()) streams->fail(std::string("expected an object, got ") + traces::json_type_name(streams->raw()));
    for (auto it = streams->raw().begin(); it != streams->raw().end(); ++it) {
      m.streams_.emplace_back(it.key(), read_rate(streams->at(it.key()), true));
    }
  }
  // Without "default", unlisted streams run at unit rates: 1 TFLOPS, 1 GB/s, no latency.
  m.default_.tflops = 1;
  m.default_.GBps = 1;
  if (auto def = root.find("default")) m.default_ = read_rate(*def, false);
  m.unlisted_is_error_ = root.has("streams") && !root.has("default");
  return m;
}

RateCostModel RateCostModel::load(const std::string& path) {
  return from_json(traces::JsonDocument::load(path).json(), path);
}

const StreamRate& RateCostModel::rate_of(const std::string& stream) const {
  for (const auto& [name, rate] : streams_) {
    if (name.size() == stream.size() && name == stream) return rate;
  }
  if (unlisted_is_error_) {
    std::string listed;
    for (const auto& [name, rate] : streams_) listed += (listed.empty() ? "" : ", ") + name;
    PROTWIN_CHECK(false, source_, ":/streams: no rate for the plan's stream \"", stream, "\" (listed: ",
                  listed.empty() ? "none" : listed, "); add it, or a \"default\" for unlisted streams");
  }
  return default_;
}

OpCost RateCostModel::cost(const traces::Op& op, const traces::Plan& plan) const {
  const StreamRate& r = rate_of(op.stream);
  // 1 TFLOPS = 1e3 flops/ns; 1 GB/s = 1 byte/ns.
  double ns = r.latency_us * 1e3;
  if (r.tflops > 0) ns += op.work.flops / (r.tflops * 1e3);
  const bool links = !r.links.empty();
  if (!links && r.GBps > 0) ns += static_cast<double>(op.work.bytes) / r.GBps;
  // Rounded up to whole ns, never to zero for a positive time (traces/units.h).
  PROTWIN_CHECK(ns < static_cast<double>(kSimHorizonNs), traces::describe_op(plan, op), ": ", op.work.flops, " flops and ",
                op.work.bytes, " bytes take longer than the simulator's horizon of 2^62 ns (146 years) at the rates "
                "of ", source_);
  OpCost c;
  c.add(on_device(ceil_ns(ns)));
  if (links) {
    std::array<int, Phase::kMaxLinks> route{-1, -1, -1};
    std::copy(r.links.begin(), r.links.end(), route.begin());
    c.add(over_links(route, static_cast<double>(op.work.bytes), r.max_GBps));
  }
  if (c.stream_time().ns > 0 || (links && op.work.bytes > 0)) c.source = KernelSource::kRates;
  return c;
}

}  // namespace protwin::hw
