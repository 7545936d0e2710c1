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

namespace {

EpDraw compact(const moe::Routing& r, const moe::MoeLayerSpec& spec) {
  EpDraw d;
  d.hot = r.hot_rank();
  d.rank_imbalance = r.rank_imbalance();
  d.dropped = r.total_dropped();
  d.padded = r.total_padding();
  int64_t most = 0, total = 0;
  for (int e = 0; e < r.experts(); ++e) {
    d.expert_rows.push_back(r.expert_rows(e));
    most = std::max(most, d.expert_rows.back());
    total += d.expert_rows.back();
  }
  if (total > 0) d.expert_imbalance = static_cast<double>(most) * r.experts() / static_cast<double>(total);
  d.legs = moe::dispatch_legs(r, spec);
  return d;
}

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
  config_.sample = moe.sample;
  config_.capacity_factor = moe.capacity_factor;
  config_.pad_to_capacity = moe.pad_to_capacity;
  config_.seed = c.routing_seed;
  const std::string why = moe::check_routing(config_);
  if (!why.empty()) throw std::invalid_argument("EP routing: " + why);
  first_moe_layer_ = moe.dense_layers;
  moe_layers_ = c.model.moe_layers();
  row_elements_ = c.model.hidden;
  act_bytes_ = 2;  // activations in BF16 or FP16 (layer_kernels.h)
  // DeepSeek-V3 (3.3.2) dispatches in FP8 and combines in BF16.
  dispatch_bytes_ = c.precision == Precision::fp8 ? 1 : act_bytes_;
  per_layer_ = config_.sample ? static_cast<int>(std::max<int64_t>(1, c.micro_batches())) : 1;
  moe::MoeLayerSpec spec;
  spec.ranks_per_node = ranks_per_node_;
  spec.max_route_nodes = max_route_nodes_;
  draws_.reserve(static_cast<size_t>(moe_layers_) * static_cast<size_t>(per_layer_));
  for (int l = 0; l < moe_layers_; ++l) {
    // Expected counts under index placement route every layer alike: one
    // draw shared by all.
    if (l > 0 && !config_.sample && config_.placement == moe::HotPlacement::index) {
      draws_.push_back(draws_.front());
      continue;
    }
    for (int mb = 0; mb < per_layer_; ++mb) {
      draws_.push_back(std::make_shared<const EpDraw>(
          compact(moe::route(config_, first_moe_layer_ + l, mb), spec)));
    }
  }
}

size_t EpRouting::index(int layer, int micro) const {
  const int i = layer - first_moe_layer_;
  if (i < 0 || i >= moe_layers_) {
    throw std::out_of_range("EP routing: layer " + std::to_string(layer) + " is not a MoE layer");
  }
  if (per_layer_ == 1) return static_cast<size_t>(i);
  if (micro < 0 || micro >= per_layer_) {
    throw std::out_of_range("EP routing: micro-batch " + std::to_string(micro) + " of " +
                            std::to_string(per_layer_));
  }
  return static_cast<size_t>(i) * static_cast<size_t>(per_layer_) + static_cast<size_t>(micro);
}

const EpDraw& EpRouting::draw(int layer, int micro) const { return *draws_[index(layer, micro)]; }

std::vector<int64_t> EpRouting::local_rows(int layer, int micro, int ep_index) const {
  const EpDraw& d = draw(layer, micro);
  const int rank = ep_index < 0 ? d.hot : ep_index;
  if (rank >= config_.ranks) throw std::out_of_range("EP routing: EP index " + std::to_string(rank));
  const int per = config_.experts / config_.ranks;
  return {d.expert_rows.begin() + static_cast<ptrdiff_t>(rank) * per,
          d.expert_rows.begin() + static_cast<ptrdiff_t>(rank + 1) * per};
}

const std::vector<EpRouting::Leg>& EpRouting::legs(int layer, int micro, EpExchange x,
                                                   bool reversed) const {
  const size_t i = index(layer, micro);
  const auto key = std::make_tuple(i, static_cast<int>(x), reversed);
  auto it = legs_.find(key);
  if (it != legs_.end()) return it->second;
  // The graph op's legs (token rows), then bytes, as build_moe_layer does.
  std::vector<std::vector<int64_t>> rows = draws_[i]->legs;
  const bool back = runs_back(x);
  if (back) std::reverse(rows.begin(), rows.end());
  const bool low = x == EpExchange::dispatch || x == EpExchange::dispatch_bwd;
  const int64_t row_bytes = row_elements_ * (low ? dispatch_bytes_ : act_bytes_);
  std::vector<Leg> out;
  for (const auto& leg : rows) {
    SplitMatrixPtr m = moe::leg_bytes(leg, config_.ranks, row_bytes, back);
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
  const int per = config_.experts / config_.ranks;
  for (const auto& d : draws_) {
    int64_t total = 0;
    std::vector<int64_t> received(static_cast<size_t>(config_.ranks), 0);
    for (size_t e = 0; e < d->expert_rows.size(); ++e) {
      received[e / static_cast<size_t>(per)] += d->expert_rows[e];
      total += d->expert_rows[e];
    }
    const double mean = static_cast<double>(total) / config_.ranks;
    for (int k = 0; k < config_.ranks; ++k) {
      out[static_cast<size_t>(k)] = std::max(
          out[static_cast<size_t>(k)],
          mean > 0 ? static_cast<double>(received[static_cast<size_t>(k)]) / mean : 1.0);
    }
  }
  return out;
}

}  // namespace gcsim::workloads::training
