// A small valid plan used by the traces tests; each bad-input test breaks one thing in it.
#pragma once

#include <nlohmann/json.hpp>

inline nlohmann::json small_plan_json() {
  return nlohmann::json::parse(R"({
    "format": "protwin.plan", "version": 4,
    "meta": {"model": "toy", "pools": [
      {"name": "gpu", "capacity_bytes": 1000, "initial_bytes": 100},
      {"name": "pinned", "capacity_bytes": 5000, "initial_bytes": 400}]},
    "streams": [{"name": "compute", "reads_from": ["gpu"]}, {"name": "h2d", "reads_from": ["pinned"]}],
    "tensors": [
      {"id": 0, "name": "chunk0.host", "bytes": 400, "kind": "param_chunk", "home": "pinned"},
      {"id": 1, "name": "chunk0.gpu", "bytes": 400, "kind": "buffer", "home": ""}],
    "chunks": [{"id": 0, "bytes": 400, "dtype": "fp16",
                "params": [{"name": "w", "offset": 0, "shape": [10, 20]}]}],
    "ops": [
      {"id": 0, "kind": "h2d", "stream": "h2d", "reads": [0], "writes": [1],
       "work": {"flops": 0, "bytes": 400, "params": 200},
       "mem": [{"pool": "gpu", "delta_bytes": 400, "at": "start", "tensor": 1}]},
      {"id": 1, "kind": "forward", "stream": "compute", "reads": [1], "deps": [0],
       "work": {"flops": 1e6, "bytes": 800, "params": 200},
       "mem": [{"pool": "gpu", "delta_bytes": 300, "at": "start"},
               {"pool": "gpu", "delta_bytes": -300, "at": "end"}]},
      {"id": 2, "kind": "free", "stream": "compute", "deps": [1],
       "work": {"flops": 0},
       "mem": [{"pool": "gpu", "delta_bytes": -400, "at": "end", "tensor": 1}]}]
  })");
}
