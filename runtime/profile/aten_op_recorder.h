// Every ATen op each thread runs, with its time, while a recorder is alive (ATen's RecordFunction
// observers): what a plan op of the runtime really spends inside a training step, op by op
// (issue 22: the profile's isolated kernel times against the same kernels inside a step). The
// runtime marks each plan op as a user scope (PlanReplayer::run), so every record knows the plan
// op it ran in. One recorder at a time; recording costs about a microsecond per ATen call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace protwin::rt {

struct AtenOpRecord {
  std::string name;     // ATen op ("aten::addmm") or the plan op's scope ("plan_op:17")
  uint64_t thread = 0;  // a small number per thread, in order of first record
  int depth = 0;        // nesting on its thread: 0 = outermost
  int64_t start_ns = 0, end_ns = 0;  // steady_clock, since the recorder started
  std::vector<std::vector<int64_t>> shapes;  // input tensors' sizes (with_shapes only)
};

class AtenOpRecorder {
 public:
  explicit AtenOpRecorder(bool with_shapes = false);
  ~AtenOpRecorder();
  AtenOpRecorder(const AtenOpRecorder&) = delete;
  AtenOpRecorder& operator=(const AtenOpRecorder&) = delete;

  // Records so far, in end order (a nested op ends before its parent).
  std::vector<AtenOpRecord> take();

 private:
  uint64_t handle_ = 0;
};

// The name of a plan op's user scope (PlanReplayer::run): "plan_op:<id>".
std::string plan_op_scope(int op_id);
// The plan op id of a scope name, -1 when `name` is not one.
int plan_op_of_scope(const std::string& name);

}  // namespace protwin::rt
