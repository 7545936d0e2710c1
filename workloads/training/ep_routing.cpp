#include "workloads/training/ep_routing.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>

#include "workloads/moe/moe_layer.h"

namespace gcsim::workloads::training {

using models::collectives::SplitMatrix;
using models::collectives::SplitMatrixPtr;

namespace {

// The same exchange listed from the last EP rank to the first.
SplitMatrixPtr reversed_order(const SplitMatrix& m) {
  const int n = m.size();
  std::vector<int64_t> b(static_cast<size_t>(n) * static_cast<size_t>(n));
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) b[static_cast<size_t>(s * n + d)] = m.at(n - 1 - s, n - 1 - d);
  }
  return std::make_shared<const SplitMatrix>(n, std::move(b));
}

bool runs_back(EpExchange x) { return x == EpExchange::combine || x == EpExchange::dispatch_bwd; }

}  // namespace

EpRouting::EpRouting(const TrainingConfig& c, int ranks_per_node)
    : ranks_per_node_(ranks_per_node), max_route_nodes_(c.model.moe.max_route_nodes) {
  const auto& moe = c.model.moe;
  config_.experts = moe.experts;
  config_.top_k = moe.top_k;
  config_.ranks = c.parallel.ep;
  config_.tokens = c.batch.micro * c.model.seq_len / c.parallel.cp;  // per GPU and micro-batch
  config_.skew = moe.skew;
  config_.balance = moe.balance;
  config_.placement = moe.permuted_placement ? moe::HotPlacement::permuted : moe::HotPlacement::index;
  config_.seed = c.routing_seed;
  const std::string why = moe::check_routing(config_);
  if (!why.empty()) throw std::invalid_argument("EP routing: " + why);
  first_moe_layer_ = moe.dense_layers;
  row_elements_ = c.model.hidden;
  act_bytes_ = 2;  // activations in BF16 or FP16 (layer_kernels.h)
  // DeepSeek-V3 (3.3.2) dispatches in FP8 and combines in BF16.
  dispatch_bytes_ = c.precision == Precision::fp8 ? 1 : act_bytes_;
  // Index placement routes every layer alike: one routing shared by all.
  const int layers = c.model.moe_layers();
  routings_.reserve(static_cast<size_t>(layers));
  for (int l = 0; l < layers; ++l) {
    if (l > 0 && config_.placement == moe::HotPlacement::index) {
      routings_.push_back(routings_.front());
      hot_.push_back(hot_.front());
      local_.push_back(local_.front());
      continue;
    }
    routings_.push_back(
        std::make_shared<const moe::Routing>(moe::route(config_, first_moe_layer_ + l, 0)));
    hot_.push_back(routings_.back()->hot_rank());
    local_.emplace_back();
    for (int k = 0; k < config_.ranks; ++k) local_.back().push_back(routings_.back()->local_rows(k));
  }
}

int EpRouting::hot_rank(int layer) const {
  routing(layer);  // checks the layer
  return hot_[static_cast<size_t>(layer - first_moe_layer_)];
}

const moe::Routing& EpRouting::routing(int layer) const {
  const int i = layer - first_moe_layer_;
  if (i < 0 || i >= static_cast<int>(routings_.size())) {
    throw std::out_of_range("EP routing: layer " + std::to_string(layer) + " is not a MoE layer");
  }
  return *routings_[static_cast<size_t>(i)];
}

const std::vector<int64_t>& EpRouting::local_rows(int layer, int ep_index) const {
  const int rank = ep_index < 0 ? hot_rank(layer) : ep_index;
  return local_[static_cast<size_t>(layer - first_moe_layer_)].at(static_cast<size_t>(rank));
}

const std::vector<EpRouting::Leg>& EpRouting::legs(int layer, EpExchange x, bool reversed) const {
  const auto key = std::make_tuple(layer, static_cast<int>(x), reversed);
  auto it = legs_.find(key);
  if (it != legs_.end()) return it->second;
  const moe::Routing& r = routing(layer);
  moe::MoeLayerSpec spec;
  spec.ranks_per_node = ranks_per_node_;
  spec.max_route_nodes = max_route_nodes_;
  // The graph op's legs (token rows), then bytes, as build_moe_layer does.
  std::vector<std::vector<int64_t>> rows = moe::dispatch_legs(r, spec);
  const bool back = runs_back(x);
  if (back) std::reverse(rows.begin(), rows.end());
  const bool low = x == EpExchange::dispatch || x == EpExchange::dispatch_bwd;
  const int64_t row_bytes = row_elements_ * (low ? dispatch_bytes_ : act_bytes_);
  std::vector<Leg> out;
  for (const auto& leg : rows) {
    SplitMatrixPtr m = moe::leg_bytes(leg, r.ranks(), row_bytes, back);
    if (reversed) m = reversed_order(*m);
    const int64_t largest = m->max_send_buffer();
    out.push_back({std::move(m), largest});
  }
  return legs_.emplace(key, std::move(out)).first->second;
}

std::vector<const char*> EpRouting::leg_names(EpExchange x) const {
  const int nodes = ranks_per_node_ > 0 ? config_.ranks / ranks_per_node_ : 1;
  if (max_route_nodes_ <= 0 || nodes <= 1) return {""};
  if (runs_back(x)) return {" nvlink", " ib"};
  return {" ib", " nvlink"};
}

std::vector<double> EpRouting::loads() const {
  std::vector<double> out(static_cast<size_t>(config_.ranks), 0.0);
  for (const auto& r : routings_) {
    int64_t total = 0;
    for (int k = 0; k < r->ranks(); ++k) total += r->received(k);
    const double mean = static_cast<double>(total) / r->ranks();
    for (int k = 0; k < r->ranks(); ++k) {
      out[static_cast<size_t>(k)] =
          std::max(out[static_cast<size_t>(k)], mean > 0 ? static_cast<double>(r->received(k)) / mean : 1.0);
    }
  }
  return out;
}

}  // namespace gcsim::workloads::training
