// A fabric, a network model on it and a collective engine, for the
// collective tests: run one request, get its time.
#pragma once

#include <memory>
#include <string>

#include "models/collectives/collective_engine.h"
#include "models/network/analytical_model.h"
#include "models/network/flow_model.h"
#include "models/network/packet/packet_model.h"
#include "sim/engine/simulator.h"
#include "unit/fabric_fixtures.h"

namespace gcsim::test {

class CollectiveRig {
 public:
  // `model`: analytical, flow or packet.
  CollectiveRig(models::network::Fabric fabric, const std::string& model,
                models::collectives::CollectiveParams params, uint64_t seed = 1)
      : fabric_(std::move(fabric)), routing_(fabric_, seed) {
    using namespace models::network;
    if (model == "analytical") {
      net_ = std::make_unique<AnalyticalModel>(sim_, fabric_, routing_);
    } else if (model == "flow") {
      net_ = std::make_unique<FlowModel>(sim_, fabric_, routing_, RoutingPolicy::ecmp);
    } else {
      net_ = std::make_unique<PacketModel>(sim_, fabric_, routing_);
    }
    engine_ = std::make_unique<models::collectives::CollectiveEngine>(sim_, *net_, fabric_,
                                                                      std::move(params), seed);
  }

  // Runs `req` alone from now; returns how long it took and what ran.
  sim::Duration run(const models::collectives::CollectiveRequest& req,
                    models::collectives::Plan* plan = nullptr) {
    const sim::Time start = sim_.now();
    sim::Time end = start;
    bool finished = false;
    engine_->run(req, [&](const models::collectives::Plan& p) {
      end = sim_.now();
      finished = true;
      if (plan != nullptr) *plan = p;
    });
    sim_.run();
    if (!finished) throw std::logic_error("collective did not finish");
    return end - start;
  }

  models::collectives::CollectiveEngine& engine() { return *engine_; }
  sim::Simulator& sim() { return sim_; }
  models::network::NetworkModel& network() { return *net_; }
  const models::network::Fabric& fabric() const { return fabric_; }

 private:
  sim::Simulator sim_;
  models::network::Fabric fabric_;
  models::network::Routing routing_;
  std::unique_ptr<models::network::NetworkModel> net_;
  std::unique_ptr<models::collectives::CollectiveEngine> engine_;
};

// One request with the algorithm and protocol named.
inline models::collectives::CollectiveRequest request(
    models::collectives::CollectiveOp op, std::vector<int> ranks, sim::Bytes bytes,
    models::collectives::Algorithm a,
    models::collectives::Protocol p = models::collectives::Protocol::simple) {
  models::collectives::CollectiveRequest r;
  r.op = op;
  r.ranks = std::move(ranks);
  r.bytes = bytes;
  r.algorithm = a;
  r.protocol = p;
  return r;
}

inline std::vector<int> iota_ranks(int n, int first = 0) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(first + i);
  return v;
}

}  // namespace gcsim::test
