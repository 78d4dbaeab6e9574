#include "sim/engine/joint_ranks.h"

#include <algorithm>
#include <utility>

#include "hwmodels/kernel_table.h"
#include "sim/engine/plan_simulator.h"
#include "traces/error.h"

namespace protwin::sim {
namespace {

std::string rank_prefix(int r) { return "rank" + std::to_string(r) + "."; }

// Every joint op's cost, priced once by its rank's model against the original plan.
class JointCostModel : public hw::CostModel {
 public:
  JointCostModel(std::vector<hw::LinkSpec> links, std::vector<hw::OpCost> costs, int queue_depth)
      : links_(std::move(links)), costs_(std::move(costs)), queue_depth_(queue_depth) {}
  std::vector<hw::LinkSpec> links() const override { return links_; }
  int launch_queue_depth() const override { return queue_depth_; }
  hw::OpCost cost(const traces::Op& op, const traces::Plan&) const override { return costs_[static_cast<size_t>(op.id)]; }

 private:
  std::vector<hw::LinkSpec> links_;
  std::vector<hw::OpCost> costs_;
  int queue_depth_;
};

// The joint plan: per plan op and rank, its copy (and before a collective, the rank's arrival).
struct Joint {
  traces::Plan plan;
  std::vector<int> rank;          // per joint op
  std::vector<std::string> base;  // per joint op: the plan's stream name
  std::vector<int> arrival;       // per joint op: its arrival's joint id for a collective, else -1
};

Joint build_joint(const traces::Plan& plan, int R) {
  const size_t n = plan.ops.size();
  // Joint ids first (deps may point forward).
  std::vector<std::vector<int>> id(static_cast<size_t>(R), std::vector<int>(n)), arrive = id;
  std::vector<bool> collective(n);
  int next = 0;
  for (size_t i = 0; i < n; ++i) {
    collective[i] = R > 1 && traces::is_rendezvous(plan.ops[i].kind);
    if (collective[i])
      for (int r = 0; r < R; ++r) arrive[static_cast<size_t>(r)][i] = next++;
    for (int r = 0; r < R; ++r) id[static_cast<size_t>(r)][i] = next++;
  }
  Joint j;
  j.plan.meta = {{"joint_ranks", R}, {"plan", traces::plan_meta_json(plan)}};
  for (int r = 0; r < R; ++r)
    for (const auto& s : plan.streams) j.plan.streams.push_back({rank_prefix(r) + s.name, {}});
  j.plan.ops.resize(static_cast<size_t>(next));
  j.rank.resize(static_cast<size_t>(next));
  j.base.resize(static_cast<size_t>(next));
  j.arrival.assign(static_cast<size_t>(next), -1);
  for (size_t i = 0; i < n; ++i) {
    const traces::Op& op = plan.ops[i];
    std::vector<int> all_arrivals;
    for (int r = 0; r < R; ++r) {
      const auto ru = static_cast<size_t>(r);
      std::vector<int> own;
      for (int d : op.deps) {
        PROTWIN_CHECK(d >= 0 && static_cast<size_t>(d) < n, traces::describe_op(plan, op), ": dependency ", d,
                      " is not an op of the plan");
        own.push_back(id[ru][static_cast<size_t>(d)]);
      }
      auto place = [&](int jid, traces::OpKind kind, std::vector<int> deps) {
        traces::Op& o = j.plan.ops[static_cast<size_t>(jid)];
        o.id = jid;
        o.kind = kind;
        o.stream = rank_prefix(r) + op.stream;
        o.block = op.block;
        o.priority = op.priority;
        o.deps = std::move(deps);
        j.rank[static_cast<size_t>(jid)] = r;
        j.base[static_cast<size_t>(jid)] = op.stream;
      };
      if (collective[i]) {
        place(arrive[ru][i], traces::OpKind::kArrive, own);
        all_arrivals.push_back(arrive[ru][i]);
      } else {
        place(id[ru][i], op.kind, own);
      }
    }
    if (collective[i])
      for (int r = 0; r < R; ++r) {
        const auto ru = static_cast<size_t>(r);
        traces::Op& o = j.plan.ops[static_cast<size_t>(id[ru][i])];
        o = j.plan.ops[static_cast<size_t>(arrive[ru][i])];
        o.id = id[ru][i];
        o.kind = op.kind;
        o.deps = all_arrivals;  // starts once the last rank has arrived
        j.rank[static_cast<size_t>(o.id)] = r;
        j.base[static_cast<size_t>(o.id)] = op.stream;
        j.arrival[static_cast<size_t>(o.id)] = arrive[ru][i];
      }
  }
  return j;
}

}  // namespace

JointRanks simulate_joint_ranks(const traces::Plan& plan, const std::vector<const hw::CostModel*>& ranks,
                                const SharedCores& cores) {
  PROTWIN_ASSERT(!ranks.empty(), "simulate_joint_ranks needs a cost model per rank");
  const int R = static_cast<int>(ranks.size());
  Joint j = build_joint(plan, R);

  // Each rank's links, renamed, side by side; each op priced by its rank's model.
  std::vector<hw::LinkSpec> links;
  std::vector<int> offset;
  for (int r = 0; r < R; ++r) {
    offset.push_back(static_cast<int>(links.size()));
    for (hw::LinkSpec l : ranks[static_cast<size_t>(r)]->links()) {
      l.name = rank_prefix(r) + l.name;
      links.push_back(std::move(l));
    }
  }
  std::vector<hw::OpCost> costs(j.plan.ops.size());
  {
    size_t k = 0;  // joint ops come in plan order: [arrivals], then one copy per rank
    for (const traces::Op& op : plan.ops) {
      if (R > 1 && traces::is_rendezvous(op.kind)) k += static_cast<size_t>(R);  // arrivals cost nothing
      for (int r = 0; r < R; ++r, ++k) {
        hw::OpCost c = ranks[static_cast<size_t>(r)]->cost(op, plan);
        for (hw::Phase& p : c.phases)
          for (int& l : p.links)
            if (l >= 0) l += offset[static_cast<size_t>(r)];
        costs[k] = c;
      }
    }
    PROTWIN_ASSERT(k == costs.size(), "joint plan: ", k, " priced ops of ", costs.size());
  }
  JointCostModel cost(links, std::move(costs), ranks.front()->launch_queue_depth());

  // The host's cores, shared by every rank's threads: the engine's (contention.h), per joint stream.
  SharedCores shared{cores.cores, {}, {}, cores.wait_threads};
  for (int r = 0; r < R; ++r) {
    for (const auto& [stream, n] : cores.threads) shared.threads[rank_prefix(r) + stream] = n;
    for (const auto& [stream, n] : cores.load_threads) shared.load_threads[rank_prefix(r) + stream] = n;
  }
  traces::Report report = PlanSimulator(cost, {}, std::move(shared)).run(j.plan);

  JointRanks out;
  out.rank_s.assign(static_cast<size_t>(R), 0);
  out.wait_s.assign(static_cast<size_t>(R), 0);
  out.compute_s.assign(static_cast<size_t>(R), 0);
  for (const auto& o : report.ops) {
    const auto id = static_cast<size_t>(o.id);
    const auto r = static_cast<size_t>(j.rank[id]);
    out.rank_s[r] = std::max(out.rank_s[r], o.end.seconds());
    if (j.arrival[id] >= 0)
      out.wait_s[r] += (o.start - report.ops[static_cast<size_t>(j.arrival[id])].end).seconds();
    if (j.base[id] == "compute") out.compute_s[r] += (o.end - o.start).seconds();
  }
  out.iteration_s = report.iteration.seconds();
  out.report = std::move(report);
  return out;
}

}  // namespace protwin::sim
