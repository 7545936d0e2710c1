#include "sim/scenario/graph_workload_loader.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>

#include "models/cluster/cluster_model.h"
#include "sim/report/format.h"
#include "sim/scenario/moe_op_loader.h"
#include "sim/scenario/rank_group.h"
#include "sim/config/did_you_mean.h"

namespace gcsim::cli {

using models::gpu::AttentionShape;
using models::gpu::Dtype;
using models::gpu::GemmShape;
using models::gpu::MemoryOpKind;
using models::gpu::MemoryOpShape;
using sim::config::ConfigReader;
using workloads::CollectiveKind;
using workloads::Op;
using workloads::OpKind;
using workloads::WorkloadGraph;

namespace {

// Elementwise kinds: tensors read per output element, and flops per element
// (tanh-approximated GELU is ~8 flops; SiLU ~4 with the exponential).
struct ElementwiseKind {
  std::string_view name;
  int inputs;
  double flops;
};
constexpr std::array kElementwise{
    ElementwiseKind{"gelu", 1, 8}, ElementwiseKind{"silu", 1, 4}, ElementwiseKind{"relu", 1, 1},
    ElementwiseKind{"add", 2, 1},  ElementwiseKind{"mul", 2, 1},  ElementwiseKind{"scale", 1, 1},
    ElementwiseKind{"copy", 1, 0}, ElementwiseKind{"dropout", 1, 2},
};

const std::vector<std::string> kOpKinds{
    "gemm",       "attention",      "layer_norm", "rms_norm",  "softmax",
    "elementwise", "memcpy",        "p2p",        "all_reduce", "all_gather",
    "reduce_scatter", "broadcast",  "reduce",     "all_to_all", "delay",
    "alloc",      "free",          "moe"};

const std::map<std::string, CollectiveKind> kCollectives{
    {"all_reduce", CollectiveKind::all_reduce},   {"all_gather", CollectiveKind::all_gather},
    {"reduce_scatter", CollectiveKind::reduce_scatter}, {"broadcast", CollectiveKind::broadcast},
    {"reduce", CollectiveKind::reduce},           {"all_to_all", CollectiveKind::all_to_all}};

std::vector<std::string> dtype_names() {
  std::vector<std::string> v;
  for (Dtype d : models::gpu::kAllDtypes) v.emplace_back(models::gpu::dtype_name(d));
  return v;
}

Dtype read_dtype(ConfigReader& r) {
  return *models::gpu::parse_dtype(
      r.get_choice("dtype", dtype_names(), std::string("bf16"), "element type"));
}

int read_rank(ConfigReader& r, const std::string& key, int num_ranks, const char* doc) {
  return check_rank(r, key, r.get_int(key, std::nullopt, doc), num_ranks,
                    " (nodes x gpus_per_node)");
}

// One YAML op before dependencies are bound.
struct ParsedOp {
  ConfigReader reader;
  std::string name;
  std::vector<std::string> after;
  // (rank, op) in rank order. An op that expands into several per rank (moe)
  // lists them in order; their deps index that rank's instances of this op.
  std::vector<std::pair<int, Op>> instances;
  std::optional<workloads::moe::MoeLayerInfo> moe;
};

// What parse_op needs besides the op itself.
struct GraphContext {
  int num_ranks = 0;
  int gpus_per_node = 0;
  uint64_t seed = 1;
  const models::gpu::GpuSpec* gpu = nullptr;  // the cluster's GPU (moe ops)
  const workloads::moe::EagerHostCost* host = nullptr;  // the cluster's host (moe ops)
};

// A norm's or elementwise op's `inputs_in_l2` (MemoryOpShape::inputs_in_l2).
bool read_inputs_in_l2(ConfigReader& r) {
  return r.get_bool("inputs_in_l2", false,
                    "the inputs were just written by the op before: read from L2 when the op's bytes fit "
                    "(models/gpu/l2_cache.h)");
}

ParsedOp parse_op(ConfigReader r, const GraphContext& ctx, WorkloadGraph& graph) {
  const int num_ranks = ctx.num_ranks;
  ParsedOp p{r, {}, {}, {}, std::nullopt};
  p.name = r.get_string("name", std::nullopt, "unique op name");
  const std::string kind = r.get_choice("op", kOpKinds, std::nullopt, "op kind");
  p.after = r.get_string_list("after", "ops that must finish first (same rank)");
  const bool communication = kind == "p2p" || kCollectives.count(kind) != 0;
  // A moe op's kernels go on `stream`, its collectives on "comm".
  const std::string stream =
      r.get_string("stream", std::string(communication ? "comm" : "compute"), "stream name");

  Op op;
  op.name = graph.intern_name(p.name);
  op.stream = graph.intern_stream(stream);

  auto local = [&](OpKind k, workloads::OpPayload payload) {
    const int rank = read_rank(r, "rank", num_ranks, "rank (GPU) that runs the op");
    op.kind = k;
    op.payload = std::move(payload);
    p.instances.emplace_back(rank, op);
  };

  if (kind == "gemm") {
    GemmShape s;
    s.m = r.get_int_in("m", std::nullopt, "rows of A and C", 1);
    s.n = r.get_int_in("n", std::nullopt, "columns of B and C", 1);
    s.k = r.get_int_in("k", std::nullopt, "inner dimension", 1);
    s.batch = r.get_int_in("batch", 1, "independent products (batched GEMM)", 1);
    s.dtype = read_dtype(r);
    local(OpKind::compute, workloads::ComputeOp{s});
  } else if (kind == "attention") {
    AttentionShape s;
    s.batch = r.get_int_in("batch", std::nullopt, "sequences", 1);
    s.heads = r.get_int_in("heads", std::nullopt, "query heads", 1);
    s.kv_heads = r.get_int_in("kv_heads", s.heads, "key/value heads (GQA when < heads)", 1);
    if (s.heads % s.kv_heads != 0) r.fail("kv_heads", "heads must be a multiple of kv_heads");
    s.q_len = r.get_int_in("q_len", std::nullopt, "query tokens per sequence (1 = decode)", 1);
    s.kv_len = r.get_int_in("kv_len", s.q_len, "key tokens per sequence", 1);
    if (s.kv_len < s.q_len) r.fail("kv_len", "kv_len must be at least q_len");
    s.head_dim = r.get_int_in("head_dim", std::nullopt, "dimension per head", 1);
    s.causal = r.get_bool("causal", false, "causal mask");
    s.backward = r.get_choice("pass", {"fwd", "bwd"}, std::string("fwd"), "forward or backward") ==
                 "bwd";
    s.dtype = read_dtype(r);
    std::vector<std::string> families;
    for (auto f : models::gpu::kAllAttentionFamilies) {
      families.emplace_back(models::gpu::attention_family_name(f));
    }
    s.family = *models::gpu::parse_attention_family(
        r.get_choice("kernel", families, std::string("flash2"),
                     "attention kernel family: flash2 | flash3 | cudnn | unfused"));
    local(OpKind::compute, workloads::ComputeOp{s});
  } else if (kind == "layer_norm" || kind == "rms_norm" || kind == "softmax") {
    MemoryOpShape s;
    s.kind = kind == "layer_norm" ? MemoryOpKind::layer_norm
             : kind == "rms_norm" ? MemoryOpKind::rms_norm
                                  : MemoryOpKind::softmax;
    s.rows = r.get_int_in("tokens", std::nullopt, "rows (tokens)", 1);
    s.cols = r.get_int_in("hidden", std::nullopt, "row length (hidden size)", 1);
    s.elements = s.rows * s.cols;
    s.flops_per_element = kind == "softmax" ? 5 : 8;
    s.dtype = read_dtype(r);
    s.inputs_in_l2 = read_inputs_in_l2(r);
    local(OpKind::compute, workloads::ComputeOp{s});
  } else if (kind == "elementwise") {
    std::vector<std::string> names;
    for (const auto& e : kElementwise) names.emplace_back(e.name);
    const std::string which = r.get_choice("kind", names, std::nullopt, "elementwise function");
    const auto& e = *std::find_if(kElementwise.begin(), kElementwise.end(),
                                  [&](const auto& x) { return x.name == which; });
    MemoryOpShape s;
    s.kind = MemoryOpKind::elementwise;
    s.elements = r.get_int_in("elements", std::nullopt, "output elements", 1);
    s.inputs = e.inputs;
    s.flops_per_element = e.flops;
    s.dtype = read_dtype(r);
    s.inputs_in_l2 = read_inputs_in_l2(r);
    local(OpKind::compute, workloads::ComputeOp{s});
  } else if (kind == "memcpy") {
    MemoryOpShape s;
    s.kind = MemoryOpKind::memcpy;
    s.elements = r.get_bytes("bytes", std::nullopt, "bytes copied device to device").count();
    if (s.elements <= 0) r.fail("bytes", "must be positive");
    s.dtype = Dtype::int8;
    s.flops_per_element = 0;
    local(OpKind::compute, workloads::ComputeOp{s});
  } else if (kind == "delay") {
    local(OpKind::delay, workloads::DelayOp{r.get_duration("duration", std::nullopt, "how long")});
  } else if (kind == "alloc" || kind == "free") {
    sim::Bytes b = r.get_bytes("bytes", std::nullopt, "HBM bytes");
    local(OpKind::memory, workloads::MemoryOp{kind == "alloc" ? b : sim::Bytes(-b.count())});
  } else if (kind == "moe") {
    MoeOpRead m = read_moe_op(r, p.name, num_ranks, ctx.gpus_per_node, ctx.seed, graph,
                              op.stream, graph.intern_stream("comm"), graph.intern_stream("host"),
                              *ctx.gpu, *ctx.host);
    for (size_t i = 0; i < m.ranks.size(); ++i) {
      for (Op& sub : m.ops[i]) p.instances.emplace_back(m.ranks[i], std::move(sub));
    }
    p.moe = std::move(m.info);
  } else if (kind == "p2p") {
    const int src = read_rank(r, "src", num_ranks, "sending rank");
    const int dst = read_rank(r, "dst", num_ranks, "receiving rank");
    if (src == dst) r.fail("dst", "src and dst are the same rank");
    const sim::Bytes bytes = r.get_bytes("bytes", std::nullopt, "bytes sent");
    Op send = op, recv = op;
    send.kind = OpKind::send;
    send.payload = workloads::P2pOp{graph.peer_slot(src, dst), bytes};
    recv.kind = OpKind::recv;
    recv.payload = workloads::P2pOp{graph.peer_slot(dst, src), bytes};
    p.instances.emplace_back(src, send);
    p.instances.emplace_back(dst, recv);
    std::sort(p.instances.begin(), p.instances.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  } else {
    workloads::CollectiveOp c;
    c.kind = kCollectives.at(kind);
    c.bytes = r.get_bytes("bytes", std::nullopt, "per-rank buffer (nccl-tests size)");
    std::vector<int> ranks = read_rank_group(r, num_ranks, {"", false, true});
    if (c.kind == CollectiveKind::broadcast || c.kind == CollectiveKind::reduce) {
      const int64_t root = r.get_int("root", ranks.front(), "root rank");
      if (std::find(ranks.begin(), ranks.end(), root) == ranks.end()) {
        r.fail("root", "the root must be one of the group's ranks");
      }
      c.root = static_cast<int>(root);
    }
    // One communicator per distinct rank set, members in rank order; the
    // root is stored as its index in that order.
    std::vector<int> sorted = ranks;
    std::sort(sorted.begin(), sorted.end());
    c.root = static_cast<int>(std::find(sorted.begin(), sorted.end(), c.root) - sorted.begin());
    const uint32_t comm = graph.add_communicator(sorted);
    op.kind = OpKind::collective;
    for (int rank : sorted) {
      c.comm = graph.comm_slot(rank, comm);
      op.payload = c;
      p.instances.emplace_back(rank, op);
    }
  }
  r.finish();
  return p;
}

// Refuses dependency cycles among op names, naming the loop.
void check_acyclic(const std::vector<ParsedOp>& ops, const std::map<std::string, size_t>& index) {
  std::vector<uint8_t> colour(ops.size(), 0);  // 0 new, 1 on path, 2 done
  std::vector<size_t> path;
  std::function<void(size_t)> visit = [&](size_t i) {
    colour[i] = 1;
    path.push_back(i);
    for (const auto& a : ops[i].after) {
      size_t j = index.at(a);
      if (colour[j] == 1) {
        std::string loop;
        auto from = std::find(path.begin(), path.end(), j);
        for (auto it = from; it != path.end(); ++it) loop += ops[*it].name + " -> ";
        ops[i].reader.fail("after", "dependency cycle: " + loop + ops[j].name);
      }
      if (colour[j] == 0) visit(j);
    }
    path.pop_back();
    colour[i] = 2;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    if (colour[i] == 0) visit(i);
  }
}

}  // namespace

namespace {

// The ops a hand-written graph will hold, counted from its YAML before any
// op is read: an op on one rank is one, a p2p two, a collective one per
// rank it names (`ranks: all`, or absent, is every rank).
double graph_instances(const YAML::Node& ops, int num_ranks) {
  double n = 0;
  // A missing key of a const node is an invalid node, which throws on any
  // question but IsDefined().
  const auto has = [](const YAML::Node& map, const char* key) { return map[key].IsDefined(); };
  for (const auto& item : ops) {
    if (!item.IsMap()) {
      n += 1;
      continue;
    }
    const YAML::Node kind = has(item, "op") ? item["op"] : YAML::Node();
    const YAML::Node ranks = has(item, "ranks") ? item["ranks"] : YAML::Node();
    if (kind.IsScalar() && kind.Scalar() == "p2p") {
      n += 2;
    } else if (kind.IsScalar() && kind.Scalar() == "moe") {
      // About 20 ops per rank plus 4 (forward) to 11 (backward) per local
      // expert, twice over with the host's launch delays; counted
      // generously so the budget check errs high.
      const double group = ranks.IsSequence() ? static_cast<double>(ranks.size()) : num_ranks;
      const YAML::Node experts = has(item, "experts") ? item["experts"] : YAML::Node();
      double per_rank = 128;
      try {
        if (experts.IsScalar()) per_rank = 2 * (40 + 15 * std::max(1.0, experts.as<double>() / group));
      } catch (const YAML::Exception&) {
      }
      n += group * per_rank;
    } else if (!has(item, "rank")) {
      n += ranks.IsSequence() ? static_cast<double>(ranks.size()) : num_ranks;
    } else {
      n += 1;
    }
  }
  return n;
}

// Moe op `later` after moe op `earlier` on a rank they share: the later
// layer's first host launch follows the earlier's last (instead of its last
// GPU op), its first GPU op follows the earlier's last op, and its clock
// starts there (MoeLayerInfo::starts_after). Indices: each op's first and
// last instance per rank.
void continue_host(WorkloadGraph& graph, ParsedOp& later, const std::map<int, uint32_t>& later_first,
                   const std::map<int, uint32_t>& later_last,
                   const std::map<int, uint32_t>& earlier_first,
                   const std::map<int, uint32_t>& earlier_last) {
  const uint16_t host = graph.intern_stream("host");
  for (const auto& [rank, first] : later_first) {
    const auto e_first = earlier_first.find(rank);
    if (e_first == earlier_first.end()) continue;
    auto& prog = graph.program(rank).ops;
    const uint32_t e_last = earlier_last.at(rank), last = later_last.at(rank);
    later.moe->starts_after[rank] = e_last;
    int64_t e_host = -1;  // the earlier layer's last host delay
    for (uint32_t k = e_last + 1; k-- > e_first->second;) {
      if (prog[k].stream == host) {
        e_host = k;
        break;
      }
    }
    Op& entry = prog[first];
    if (e_host < 0 || entry.stream != host) continue;  // a side without a host: ordered as written
    std::replace(entry.deps.begin(), entry.deps.end(), e_last, static_cast<uint32_t>(e_host));
    for (uint32_t k = first; k <= last; ++k) {
      if (prog[k].stream != host) {
        prog[k].deps.push_back(e_last);
        break;
      }
    }
  }
}

}  // namespace

std::unique_ptr<WorkloadGraph> load_graph_workload(
    ConfigReader& workload, int num_ranks, const models::gpu::GpuSpec& gpu,
    const ResourceLimits& limits, int gpus_per_node, uint64_t seed,
    std::vector<workloads::moe::MoeLayerInfo>* moe_layers,
    const workloads::moe::EagerHostCost& host) {
  const GraphContext ctx{num_ranks, gpus_per_node, seed, &gpu, &host};
  const YAML::Node raw_ops = workload.raw("ops", "the ops, in issue order per stream");
  if (raw_ops.IsSequence()) {
    const double items = static_cast<double>(raw_ops.size());
    const double instances = graph_instances(raw_ops, num_ranks);
    // Each written op also keeps its YAML node, resolved config and docs.
    ResourceEstimate e = ResourceEstimate::from_ops(instances, instances);
    e.memory_bytes += items * kBytesPerGraphOp;
    enforce(e, limits, workload, "ops",
            "the graph's " + fmt("%.0f", items) + " ops (" + fmt("%.0f", instances) +
                " once collectives are counted per rank)",
            "Split the graph, or write fewer ops");
  }
  auto graph = std::make_unique<WorkloadGraph>(num_ranks);
  graph->intern_stream("compute");
  std::vector<ParsedOp> ops;
  std::map<std::string, size_t> index;
  auto items = workload.child_list("ops", "the ops, in issue order per stream");
  if (items.empty()) workload.fail("ops", "the graph has no ops");
  for (size_t i = 0; i < items.size(); ++i) {
    ParsedOp p = parse_op(items[i], ctx, *graph);
    for (const auto& [rank, op] : p.instances) {
      if (const auto* c = std::get_if<workloads::ComputeOp>(&op.payload)) {
        try {
          models::cluster::kernel_for(gpu, *c);
        } catch (const std::invalid_argument& e) {
          p.reader.fail("op", std::string(e.what()));
        } catch (const sim::TimeOverflow& e) {
          p.reader.fail("op", "the kernel would run longer than the simulator's time range "
                              "(about 106 days): " + std::string(e.what()));
        }
      }
    }
    if (index.count(p.name)) p.reader.fail("name", "op name '" + p.name + "' is used twice");
    index[p.name] = i;
    ops.push_back(std::move(p));
  }
  // A rank that frees more than it allocates in total fails whatever the
  // order its streams run in; say so here rather than mid-run.
  std::vector<int64_t> allocated(static_cast<size_t>(num_ranks), 0);
  std::vector<const ParsedOp*> last_free(static_cast<size_t>(num_ranks), nullptr);
  for (const auto& p : ops) {
    for (const auto& [rank, op] : p.instances) {
      if (const auto* m = std::get_if<workloads::MemoryOp>(&op.payload)) {
        int64_t& total = allocated[static_cast<size_t>(rank)];
        if (__builtin_add_overflow(total, m->delta.count(), &total)) {
          p.reader.fail("bytes", "allocations on rank " + std::to_string(rank) + " overflow");
        }
        if (m->delta.count() < 0) last_free[static_cast<size_t>(rank)] = &p;
      }
    }
  }
  for (int rank = 0; rank < num_ranks; ++rank) {
    if (allocated[static_cast<size_t>(rank)] < 0) {
      last_free[static_cast<size_t>(rank)]->reader.fail(
          "bytes", "rank " + std::to_string(rank) + " frees " +
                       std::to_string(-allocated[static_cast<size_t>(rank)]) +
                       " bytes more than its ops allocate");
    }
  }
  std::vector<std::string> names;
  for (const auto& p : ops) names.push_back(p.name);
  for (const auto& p : ops) {
    for (const auto& a : p.after) {
      if (!index.count(a)) {
        p.reader.fail("after", "no op named '" + a + "'" + sim::config::did_you_mean(a, names));
      }
      if (a == p.name) p.reader.fail("after", "op '" + a + "' cannot run after itself");
    }
  }
  check_acyclic(ops, index);

  // Place instances in their rank programs (YAML order), then bind deps.
  // Later ops wait for an op's last instance on their rank (`where`); its
  // `after` binds to the instances that wait for none of its own (`entries`).
  std::vector<std::map<int, uint32_t>> where(ops.size());  // op -> rank -> index
  std::vector<std::map<int, std::vector<uint32_t>>> entries(ops.size());
  std::vector<std::map<int, uint32_t>> first_at(ops.size());  // op -> rank -> first index
  for (size_t i = 0; i < ops.size(); ++i) {
    std::map<int, uint32_t>& base = first_at[i];
    for (auto& [rank, op] : ops[i].instances) {
      auto& prog = graph->program(rank);
      const auto at = static_cast<uint32_t>(prog.ops.size());
      const uint32_t first = base.emplace(rank, at).first->second;
      if (op.deps.empty()) entries[i][rank].push_back(at);
      for (uint32_t& d : op.deps) d += first;
      where[i][rank] = at;
      prog.ops.push_back(op);
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const ParsedOp& p = ops[i];
    for (const auto& a : p.after) {
      const size_t j = index.at(a);
      bool bound = false;
      for (const auto& [rank, firsts] : entries[i]) {
        auto it = where[j].find(rank);
        if (it == where[j].end()) continue;
        for (const uint32_t own : firsts) {
          Op& op = graph->program(rank).ops[own];
          const Op& dep = graph->program(rank).ops[it->second];
          if (dep.stream == op.stream && it->second > own) {
            p.reader.fail("after", "'" + a + "' comes later on the same stream '" +
                                       graph->stream(op.stream) + "' of rank " +
                                       std::to_string(rank) +
                                       ", so this op would wait forever: list it after '" + a +
                                       "' or put it on another stream");
          }
          op.deps.push_back(it->second);
        }
        bound = true;
      }
      if (!bound) {
        p.reader.fail("after", "'" + a + "' runs on no rank this op runs on; ranks order "
                               "their work only through p2p or collective ops");
      }
      if (ops[i].moe && ops[j].moe) continue_host(*graph, ops[i], first_at[i], where[i], first_at[j], where[j]);
    }
  }
  for (auto& p : ops) {
    if (p.moe && moe_layers != nullptr) moe_layers->push_back(*p.moe);
  }
  if (std::string problem = workloads::validate(*graph); !problem.empty()) {
    workload.fail("ops", problem);
  }
  return graph;
}

}  // namespace gcsim::cli
