#include "sim/parallel/template_cost_model.h"

#include "traces/error.h"

namespace protwin::sim {

TemplateCostModel::TemplateCostModel(const hw::CostModel& base, const std::vector<traces::Op>& templates,
                                     const traces::Plan& plan)
    : base_(&base), templates_(&templates) {
  costs_.reserve(templates.size());
  for (const auto& t : templates) costs_.push_back(base.cost(t, plan));
}

hw::OpCost TemplateCostModel::cost(const traces::Op& op, const traces::Plan& plan) const {
  if (op.attrs.is_object()) {
    auto it = op.attrs.find("tmpl");
    if (it != op.attrs.end() && it->is_number_integer()) {
      const int64_t i = it->get<int64_t>();
      PROTWIN_CHECK(i >= 0 && static_cast<size_t>(i) < templates_->size(), traces::describe_op(op),
                    " attrs.tmpl: expected a template index in [0, ", templates_->size(), "), got ", i);
      while (costs_.size() <= static_cast<size_t>(i)) costs_.push_back(base_->cost((*templates_)[costs_.size()], plan));
      return costs_[static_cast<size_t>(i)];
    }
  }
  return base_->cost(op, plan);
}

}  // namespace protwin::sim
