// TemplateCostModel: prices the ops of a compiled 4D-parallel plan by their templates
// (megatron_compiler.h). Every template is priced once by the base cost model, as an op on the
// stream named by its role ("compute", "tp_comm", "cp_comm", "dp_comm", "p2p"); a plan op with
// attrs.tmpl then costs what its template costs, so a 200k-op plan asks the base model a few dozen
// times. Ops without attrs.tmpl go to the base model. Pricing happens in the constructor, so
// cost() is const and stateless (safe from many threads), unless templates are added later (a
// MegatronOpStream adds them while it generates): a template index beyond those priced is priced
// then, so such a model serves one simulation, one thread.
#pragma once

#include <vector>

#include "hwmodels/cost_model.h"
#include "traces/plan.h"

namespace protwin::sim {

class TemplateCostModel : public hw::CostModel {
 public:
  // `plan` gives the base model its meta (dtype, gpus); base and plan must outlive this object.
  TemplateCostModel(const hw::CostModel& base, const std::vector<traces::Op>& templates,
                    const traces::Plan& plan);

  std::vector<hw::LinkSpec> links() const override { return base_->links(); }
  int launch_queue_depth() const override { return base_->launch_queue_depth(); }
  hw::OpCost cost(const traces::Op& op, const traces::Plan& plan) const override;

  const hw::OpCost& template_cost(size_t i) const { return costs_[i]; }

 private:
  const hw::CostModel* base_;
  const std::vector<traces::Op>* templates_;
  mutable std::vector<hw::OpCost> costs_;
};

}  // namespace protwin::sim
