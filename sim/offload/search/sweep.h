// The what-if sweep: a grid (Cartesian product) of machine-field values, each point searched for
// its best policy with search_policy. Axes use the `--set` paths of hwmodels/machine_edit.h; one
// axis may move several fields together ("linked" keys, e.g. a PCIe generation sets H2D and D2H).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/offload/search/search.h"
#include "sim/workload/model_spec.h"

namespace protwin::sim::offload {

// More points than this is refused: at ~0.3 s a search, 100000 points is a day on one core (use
// mpirun, evaluate_points.h).
constexpr int64_t kMaxSweepPoints = 100000;

struct SweepAxis {
  std::vector<std::string> keys;                 // dotted machine paths, e.g. host.cores
  std::vector<std::string> labels;               // each value as written ("26" or "25.1:26")
  std::vector<std::vector<std::string>> values;  // values[i][k]: value i of keys[k]
  std::string name() const;                      // keys joined by '+'
};

// Parses one `--set` argument "key[+key...]=v1,v2,...". Each v is one number (or true/false)
// given to every key of the axis, or "a:b:..." with one value per key in key order.
// Errors name --set and say what was expected (empty list, bad number, wrong tuple length).
SweepAxis parse_sweep_axis(const std::string& arg);

// Points of the grid times the systems (saturates at INT64_MAX instead of overflowing).
int64_t sweep_points(const std::vector<SweepAxis>& axes, size_t systems);

struct SweepOptions {
  std::vector<SweepAxis> axes;
  std::vector<std::string> systems = {"protrain"};
  SearchOptions search;                          // every point's search (system set per point)
  const traces::OpProfile* profile = nullptr;    // measured op times for every point (hw::make_cost_model)
  std::function<void(long done, long total)> progress;  // after each point (under mpirun: rank 0's)
};

struct SweepPoint {
  std::vector<size_t> index;                     // the value index along each axis
  std::vector<std::string> overrides;            // "path=value", one per key
  nlohmann::json set;                            // {path: value as the machine now holds it}
  SearchResult search;                           // its system's search, without plan, report and front
  int64_t chunks = 0;                            // chunks of the best plan
  std::map<std::string, double> stream_busy_s;   // the best plan's busy time per stream
};

struct SweepResult {
  std::string model, machine;
  int gpus = 0, nodes = 1;
  int64_t seq = 0;                               // tokens per sequence (the model's default if 0 given)
  std::vector<SweepAxis> axes;
  // axis_values[i][v]: value v of axis i as the machine holds it (a number, or one per linked key).
  std::vector<std::vector<nlohmann::json>> axis_values;
  std::vector<SweepPoint> points;                // first axis slowest, systems fastest
  double seconds = 0;
};

// Checks every axis value against the machine (unknown path, wrong type, a value the machine
// validation refuses, a key on two axes, too many points) before anything runs, then searches
// each point (under mpirun split over the ranks: sim/distributed/evaluate_points.h). `machine_json` is the unmodified document (hw::load_machine_json), `source` its name.
SweepResult run_sweep(const ModelSpec& model, const nlohmann::json& machine_json, const std::string& source,
                      const SweepOptions& o);

// {"format": "protwin.sweep", "version": 1, "model", "machine", "gpus", "seq", "axes": [{"key",
//  "keys", "values", "labels"}], "points": [{"set", "index" (the value index along each axis),
//  "system", "tokens_per_s" (null when nothing fits), "iteration_s", "batch", "knobs", ...}],
//  "sweep_s"}. An axis's values are numbers (as the machine holds them) for one key and arrays
//  (one per key) for linked keys; "labels" are the values as written.
nlohmann::json sweep_to_json(const SweepResult& r);

// One row per point: one column per axis key, then the system and the results (empty cells when
// nothing fits).
std::string sweep_to_csv(const SweepResult& r);

}  // namespace protwin::sim::offload
