#include "models/collectives/schedule.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace gcsim::models::collectives {

namespace {

// Accumulates one phase's flows: edges inside a host merge per (src, dst)
// whatever their channel; edges between hosts stay apart, keyed by channel.
class FlowSet {
 public:
  // `merge`: channels between hosts share one flow per (src, dst) as well.
  FlowSet(const GroupLayout& layout, int channels, bool pxn, bool merge)
      : layout_(layout), channels_(channels), pxn_(pxn), merge_(merge) {}

  static uint64_t key_of(int src, int dst) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) |
           static_cast<uint32_t>(dst);
  }

  void add_intra(int src, int dst, double payload, int channels = 1) {
    if (src == dst) return;
    auto [it, added] = intra_.emplace(key_of(src, dst), flows_.size());
    if (added) {
      flows_.push_back({src, dst, payload, channels, 0});
    } else {
      Flow& f = flows_[it->second];
      f.payload += payload;
      f.channels += channels;
    }
  }

  void add_inter(int src, int dst, double payload, int channel) {
    if (merge_) {
      add_intra(src, dst, payload);
      flows_[intra_.at(key_of(src, dst))].qp = 0;
      return;
    }
    flows_.push_back({src, dst, payload, 1, static_cast<uint32_t>(channel)});
  }

  // The rail GPU of `rank`'s host in `channel`: the member at position
  // channel mod k.
  int entry(int rank, int channel) const {
    const auto& m = layout_.hosts()[static_cast<size_t>(layout_.host_index(rank))];
    return m[static_cast<size_t>(channel) % m.size()];
  }

  // One ring or chain edge of `channel`; between hosts with PXN it runs
  // x -> rail GPU of x's host -> rail GPU of y's host -> y.
  void add_edge(int x, int y, double payload, int channel) {
    if (layout_.same_host(x, y)) {
      add_intra(x, y, payload);
      return;
    }
    if (!pxn_) {
      add_inter(x, y, payload, channel);
      return;
    }
    const int ex = entry(x, channel), ey = entry(y, channel);
    add_intra(x, ex, payload);
    add_inter(ex, ey, payload, channel);
    add_intra(ey, y, payload);
  }

  std::vector<Flow> take() { return std::move(flows_); }
  int channels() const { return channels_; }

 private:
  const GroupLayout& layout_;
  int channels_;
  bool pxn_;
  bool merge_;
  std::vector<Flow> flows_;
  std::unordered_map<uint64_t, size_t> intra_;
};

std::vector<int> rotated(const std::vector<int>& v, int by) {
  std::vector<int> out;
  out.reserve(v.size());
  const size_t s = static_cast<size_t>(by) % v.size();
  for (size_t i = 0; i < v.size(); ++i) out.push_back(v[(s + i) % v.size()]);
  return out;
}

// Steps of a ring collective that cross hosts (NCCL's nInterSteps).
int inter_steps(CollectiveOp op, int hosts) {
  if (hosts <= 1) return 0;
  return op == CollectiveOp::all_reduce ? 2 * (hosts - 1) : hosts - 1;
}

Phase ring_phase(CollectiveOp op, const std::vector<std::vector<int>>& order_per_channel,
                 double bytes, int n, int hosts, FlowSet& set) {
  // Each edge of each channel's ring carries the channel's share of
  // 2(n-1)/n S (all-reduce) or (n-1)/n S (all-gather, reduce-scatter).
  const int steps = op == CollectiveOp::all_reduce ? 2 * (n - 1) : n - 1;
  const int channels = set.channels();
  const double per_step = bytes / n / channels;
  const double per_edge = per_step * steps;
  for (int c = 0; c < channels; ++c) {
    const auto& order = order_per_channel[static_cast<size_t>(c)];
    for (int i = 0; i < n; ++i) {
      set.add_edge(order[static_cast<size_t>(i)], order[static_cast<size_t>((i + 1) % n)],
                   per_edge, c);
    }
  }
  Phase p;
  p.flows = set.take();
  p.steps_scale_out = inter_steps(op, hosts);
  p.steps_scale_up = steps - p.steps_scale_out;
  p.fill_hops = 1;
  p.step_payload_per_channel = per_step;
  p.ring_loops = true;
  return p;
}

std::vector<std::vector<int>> ring_orders(const GroupLayout& layout, int channels) {
  std::vector<std::vector<int>> orders;
  orders.reserve(static_cast<size_t>(channels));
  for (int c = 0; c < channels; ++c) orders.push_back(ring_order(layout, c));
  return orders;
}

Schedule ring(const CollectiveRequest& req, const GroupLayout& layout, int channels, bool pxn,
              bool merge) {
  const int n = layout.size();
  const double s = req.bytes.as_double();
  FlowSet set(layout, channels, pxn, merge);
  Schedule sch;
  if (req.op == CollectiveOp::broadcast || req.op == CollectiveOp::reduce) {
    // A pipelined chain from the root along the channel's ring (toward it
    // for reduce): n-1 edges, each carrying the channel's whole share.
    const int root = req.ranks.at(static_cast<size_t>(req.root));
    const double per_edge = s / channels;
    int crossings = 0;
    for (int c = 0; c < channels; ++c) {
      std::vector<int> order = ring_order(layout, c);
      const auto at = std::find(order.begin(), order.end(), root);
      std::rotate(order.begin(), at, order.end());
      for (int i = 0; i + 1 < n; ++i) {
        int a = order[static_cast<size_t>(i)], b = order[static_cast<size_t>(i + 1)];
        if (req.op == CollectiveOp::reduce) std::swap(a, b);
        if (c == 0 && !layout.same_host(a, b)) ++crossings;
        set.add_edge(a, b, per_edge, c);
      }
    }
    Phase p;
    p.flows = set.take();
    p.steps_scale_out = crossings;
    p.steps_scale_up = n - 1 - crossings;
    // A pipelined chain: each of the n-2 ranks between the ends forwards a
    // slice once it holds it, so the last rank starts n-2 slices late (two
    // GPUs: one direct hop, nothing to fill).
    p.fill_hops = std::max(0, n - 2);
    p.step_payload_per_channel = per_edge;
    p.chain = true;
    sch.phases.push_back(std::move(p));
    return sch;
  }
  sch.phases.push_back(
      ring_phase(req.op, ring_orders(layout, channels), s, n, layout.num_hosts(), set));
  return sch;
}

Schedule tree(const CollectiveRequest& req, const GroupLayout& layout, int channels,
              bool merge) {
  // Both trees carry half the data, each over half the channels: S / C per
  // channel, up (reduce) and down (broadcast) at once, pipelined.
  const double x = req.bytes.as_double() / channels;
  const int hosts = layout.num_hosts();
  const int k = std::max(1, layout.max_per_host());
  FlowSet set(layout, channels, false, merge);
  int depth = 0;
  for (int c = 0; c < channels; ++c) {
    // Channel c's chain starts at (and leaves the host through the NIC of)
    // the GPU at position c mod k. NCCL runs every tree channel twice, on
    // the same GPUs and NICs, once per tree (connect.cc duplicates channel
    // c into c + nChannels, tree 1 mirrored), so each NIC carries both
    // trees: interior in one (3 edges), leaf in the other (1 edge). Taking
    // tree c % 2 would put tree 0 on every even rail and tree 1 on every
    // odd one for even k, leaving a host's interior-tree NICs with three
    // times its leaf NICs' bytes. The tree alternates per lap of the rails
    // instead: with 2k channels or a multiple, every NIC carries each tree
    // equally often, as NCCL's twins do.
    const int t = (c % k + c / k) % 2;
    std::vector<int> heads;
    heads.reserve(static_cast<size_t>(hosts));
    for (const auto& members : layout.hosts()) {
      const std::vector<int> chain = rotated(members, c);
      for (size_t j = 0; j + 1 < chain.size(); ++j) {
        set.add_intra(chain[j + 1], chain[j], x);
        set.add_intra(chain[j], chain[j + 1], x);
      }
      heads.push_back(chain.front());
    }
    for (int h = 0; h < hosts; ++h) {
      const int parent = tree_parent(h, hosts, t);
      if (parent < 0) continue;
      set.add_inter(heads[static_cast<size_t>(h)], heads[static_cast<size_t>(parent)], x, c);
      set.add_inter(heads[static_cast<size_t>(parent)], heads[static_cast<size_t>(h)], x, c);
      if (c < 2) depth = std::max(depth, tree_depth(h, hosts, t));
    }
  }
  Phase p;
  p.flows = set.take();
  p.steps_scale_up = 2 * (layout.max_per_host() - 1);
  p.steps_scale_out = 2 * depth;
  p.fill_hops = std::max(0, p.steps_scale_up + p.steps_scale_out - 1);
  p.step_payload_per_channel = x;
  Schedule sch;
  sch.phases.push_back(std::move(p));
  return sch;
}

Schedule hierarchical(const CollectiveRequest& req, const GroupLayout& layout, int channels,
                      bool merge) {
  // Reduce-scatter inside each host, all-reduce of each 1/k shard across
  // hosts on its rail, all-gather inside each host.
  const double s = req.bytes.as_double();
  const int k = layout.max_per_host();
  const int hosts = layout.num_hosts();
  Schedule sch;
  auto intra_phase = [&](CollectiveOp op) {
    FlowSet set(layout, channels, false, merge);
    for (int c = 0; c < channels; ++c) {
      for (const auto& members : layout.hosts()) {
        const std::vector<int> order = rotated(members, c);
        for (int i = 0; i < k; ++i) {
          set.add_intra(order[static_cast<size_t>(i)], order[static_cast<size_t>((i + 1) % k)],
                        s / k / channels * (k - 1));
        }
      }
    }
    Phase p;
    p.flows = set.take();
    p.steps_scale_up = k - 1;
    p.fill_hops = 1;
    p.step_payload_per_channel = s / k / channels;
    p.ring_loops = true;
    (void)op;
    return p;
  };
  if (k > 1) sch.phases.push_back(intra_phase(CollectiveOp::reduce_scatter));
  if (hosts > 1) {
    const int per_rail = std::max(1, channels / k);
    const double shard = s / k;
    const double per_step = shard / hosts / per_rail;
    FlowSet set(layout, per_rail, false, merge);
    for (int rail = 0; rail < k; ++rail) {
      for (int c = 0; c < per_rail; ++c) {
        for (int h = 0; h < hosts; ++h) {
          const int a = layout.hosts()[static_cast<size_t>(h)][static_cast<size_t>(rail)];
          const int b =
              layout.hosts()[static_cast<size_t>((h + 1) % hosts)][static_cast<size_t>(rail)];
          set.add_inter(a, b, per_step * 2 * (hosts - 1), c);
        }
      }
    }
    Phase p;
    p.flows = set.take();
    p.steps_scale_out = 2 * (hosts - 1);
    p.fill_hops = 1;
    p.step_payload_per_channel = per_step;
    p.ring_loops = true;
    sch.phases.push_back(std::move(p));
  }
  if (k > 1) sch.phases.push_back(intra_phase(CollectiveOp::all_gather));
  return sch;
}

Schedule nvls(const CollectiveRequest& req, const GroupLayout& layout, int channels,
              bool merge) {
  // In-switch reduction: every GPU pushes its whole buffer into the switch
  // (multimem.ld_reduce reads each shard from every GPU) and its reduced
  // shard back out (multimem.st), so each GPU link carries S (1 + 1/k) each
  // way. Rank-to-rank flows that load every link by exactly that much stand
  // for the switch's reduce and multicast.
  const int k = layout.size();
  const double s = req.bytes.as_double();
  const double each = s * (1.0 + 1.0 / k) / (k - 1);
  FlowSet set(layout, channels, false, merge);
  const auto& members = layout.hosts().front();
  for (int i : members) {
    for (int j : members) {
      // Every channel carries its share: NVLS's SMs are its channels too.
      if (i != j) set.add_intra(i, j, each, channels);
    }
  }
  Phase p;
  p.flows = set.take();
  p.steps_scale_up = 1;
  p.fill_hops = 1;
  p.step_payload_per_channel = s / k / channels;
  Schedule sch;
  sch.phases.push_back(std::move(p));
  return sch;
}

// One flow (or one per channel between hosts) from a rank to one peer,
// driven by `channels` of NCCL's p2p channels.
void add_p2p(FlowSet& set, const GroupLayout& layout, int src, int dst, double bytes,
             int channels) {
  if (src == dst || bytes <= 0.0) return;  // a rank's own share, or an empty split
  if (layout.same_host(src, dst)) {
    set.add_intra(src, dst, bytes, channels);
    return;
  }
  for (int c = 0; c < channels; ++c) set.add_inter(src, dst, bytes / channels, c);
}

Phase p2p_phase(FlowSet& set, bool crosses_hosts) {
  Phase p;
  p.flows = set.take();
  (crosses_hosts ? p.steps_scale_out : p.steps_scale_up) = 1;
  return p;
}

// Bytes member i sends member j: the request's split matrix, else S/n.
double pair_bytes(const CollectiveRequest& req, int n, int i, int j) {
  if (req.splits) return static_cast<double>(req.splits->at(i, j));
  return req.bytes.as_double() / n;
}

Schedule all_to_all(const CollectiveRequest& req, Algorithm a, const GroupLayout& layout,
                    int channels, bool merge, const P2pConfig& p2p) {
  // Each rank sends S/n to every rank (its own share it copies locally).
  // NCCL runs all-to-all as grouped send/recv: one round per peer offset,
  // each send cut into parts over its p2p channels (p2p_split.h); between
  // hosts one connection per part.
  const int n = layout.size();
  const auto& r = req.ranks;
  const auto piece = [&req, n](int i, int j) { return pair_bytes(req, n, i, j); };
  // NCCL cuts every send by the same rules; an uneven all-to-all (a split
  // matrix) is timed by its largest pair, which its busiest channel carries,
  // and its largest own share, copied locally.
  double largest = req.bytes.as_double() / n, own = largest;
  if (req.splits) {
    largest = own = 0.0;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        double& most = i == j ? own : largest;
        most = std::max(most, piece(i, j));
      }
    }
  }
  Schedule sch;
  if (a == Algorithm::direct) {
    const P2pParts split = p2p_parts(largest, n, layout.num_hosts(), p2p);
    FlowSet set(layout, 1, false, merge);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        add_p2p(set, layout, r[static_cast<size_t>(i)], r[static_cast<size_t>(j)], piece(i, j),
                split.parts);
      }
    }
    Phase p = p2p_phase(set, layout.num_hosts() > 1);
    p.p2p_rounds = n;
    const auto load = all_to_all_channel_load(largest, n, layout.num_hosts(), p2p);
    p.p2p_channel_load = *std::max_element(load.begin(), load.end());
    p.self_copy_bytes = own;
    p.p2p_first_step = std::min(split.part_bytes, p2p.chunk.as_double());
    sch.phases.push_back(std::move(p));
    return sch;
  }
  for (int k = 1; k < n; ++k) {
    FlowSet set(layout, 1, false, merge);
    bool crosses = false;
    for (int i = 0; i < n; ++i) {
      const int src = r[static_cast<size_t>(i)], dst = r[static_cast<size_t>((i + k) % n)];
      crosses = crosses || !layout.same_host(src, dst);
      add_p2p(set, layout, src, dst, piece(i, (i + k) % n), channels);
    }
    sch.phases.push_back(p2p_phase(set, crosses));
  }
  return sch;
}

Schedule send_recv(const CollectiveRequest& req, const GroupLayout& layout, int channels,
                   bool merge) {
  // nccl-tests sendrecv: rank i sends S to rank i+1 and receives from i-1
  // (one_way: only the first rank sends).
  const int n = layout.size();
  FlowSet set(layout, channels, false, merge);
  bool crosses = false;
  for (int i = 0; i < (req.one_way ? 1 : n); ++i) {
    const int src = req.ranks[static_cast<size_t>(i)];
    const int dst = req.ranks[static_cast<size_t>((i + 1) % n)];
    crosses = crosses || !layout.same_host(src, dst);
    add_p2p(set, layout, src, dst, req.bytes.as_double(), channels);
  }
  Schedule sch;
  sch.phases.push_back(p2p_phase(set, crosses));
  return sch;
}

// Parent position in the in-order binary tree on positions 1..n: a node's
// level is its lowest set bit; nodes above n are skipped upward.
int inorder_parent(int p, int n) {
  int root = 1;
  while (root * 2 <= n) root *= 2;
  if (p == root) return 0;
  int q = p;
  do {
    const int b = q & -q;
    q = (q & (2 * b)) ? q - b : q + b;
  } while (q > n);
  return q;
}

// Position of host `node` in tree `tree`; tree 1 mirrors tree 0 (even n)
// or shifts it by one (odd n).
int position_in(int node, int n, int tree) {
  if (tree == 0) return node + 1;
  return n % 2 == 0 ? n - node : (node + 1) % n + 1;
}

int node_at(int position, int n, int tree) {
  if (tree == 0) return position - 1;
  return n % 2 == 0 ? n - position : (position + n - 2) % n;
}

}  // namespace

std::vector<int> ring_order(const GroupLayout& layout, int channel) {
  std::vector<int> order;
  order.reserve(static_cast<size_t>(layout.size()));
  for (const auto& members : layout.hosts()) {
    const size_t s = static_cast<size_t>(channel) % members.size();
    for (size_t i = 0; i < members.size(); ++i) order.push_back(members[(s + i) % members.size()]);
  }
  return order;
}

int tree_parent(int node, int num_nodes, int tree) {
  if (num_nodes <= 1) return -1;
  const int parent = inorder_parent(position_in(node, num_nodes, tree), num_nodes);
  return parent == 0 ? -1 : node_at(parent, num_nodes, tree);
}

int tree_depth(int node, int num_nodes, int tree) {
  int d = 0;
  for (int p = tree_parent(node, num_nodes, tree); p >= 0; p = tree_parent(p, num_nodes, tree)) {
    ++d;
  }
  return d;
}

std::string check_algorithm(CollectiveOp op, Algorithm a, const GroupLayout& layout,
                            bool nvls_available) {
  if (!algorithm_supports(a, op)) {
    std::string valid;
    for (Algorithm x : algorithms_for(op)) {
      valid += (valid.empty() ? "" : ", ") + std::string(algorithm_name(x));
    }
    return std::string(algorithm_name(a)) + " does not implement " + std::string(op_name(op)) +
           " (valid: " + valid + ")";
  }
  if (a == Algorithm::nvls) {
    if (!nvls_available) return "nvls needs NVLink SHARP (an H100/H200-class NVSwitch preset)";
    if (layout.num_hosts() != 1) return "nvls reduces inside one NVSwitch: the group spans hosts";
    if (layout.size() < 2) return "nvls needs at least two GPUs";
  }
  if (a == Algorithm::hierarchical && !layout.uniform()) {
    return "hierarchical needs the same number of group members on every host";
  }
  return "";
}

Schedule build_schedule(const CollectiveRequest& req, Algorithm a, const GroupLayout& layout,
                        int channels, bool pxn, bool one_flow_per_pair, const P2pConfig& p2p) {
  if (channels < 1) throw std::logic_error("collective schedule: channels must be >= 1");
  if (layout.size() <= 1) return {};
  const bool merge = one_flow_per_pair;
  switch (a) {
    case Algorithm::ring: return ring(req, layout, channels, pxn, merge);
    case Algorithm::tree: return tree(req, layout, channels, merge);
    case Algorithm::hierarchical: return hierarchical(req, layout, channels, merge);
    case Algorithm::nvls: return nvls(req, layout, channels, merge);
    case Algorithm::direct:
    case Algorithm::pairwise:
      if (req.op == CollectiveOp::send_recv) return send_recv(req, layout, channels, merge);
      return all_to_all(req, a, layout, channels, merge, p2p);
  }
  return {};
}

}  // namespace gcsim::models::collectives
