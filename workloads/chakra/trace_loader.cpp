#include "workloads/chakra/trace_loader.h"

#include <filesystem>
#include <map>
#include <unordered_map>

#include "sim/config/input_file.h"
#include "workloads/chakra/attributes.h"
#include "workloads/chakra/trace_file.h"

namespace gcsim::workloads::chakra {

namespace {

std::string where(const std::string& file, int rank) {
  return file + ": rank " + std::to_string(rank);
}

// What a rank's program needs besides its ops, for the checks across ranks.
struct NodeRef {
  uint64_t id;
  uint32_t name;
};
struct P2pRef {
  NodeRef node;
  int64_t tag;
  sim::Bytes bytes;
};
struct CollectiveRef {
  NodeRef node;
  CollectiveKind kind;
  sim::Bytes bytes;
  int root;
};

// Node ids and names of one rank, for its messages.
struct RankNodes {
  std::string file;
  std::vector<uint64_t> ids;  // by op index
};

std::string node_text(const WorkloadGraph& g, const NodeRef& n) {
  std::string s = "node " + std::to_string(n.id);
  const std::string& name = g.name(n.name);
  if (!name.empty() && name != s) s += " ('" + name + "')";
  return s;
}

// A cycle through dependencies and stream order never runs. Looks for one
// among `prog`'s ops, where each op also waits for the op before it on its
// stream, and names it: "a -(dep)-> b -(stream order)-> a".
void check_no_cycle(const WorkloadGraph& g, const RankProgram& prog, const RankNodes& rn, int rank) {
  const size_t n = prog.ops.size();
  std::vector<int64_t> stream_prev(n, -1);
  {
    std::vector<int64_t> last(g.stream_count(), -1);
    for (size_t i = 0; i < n; ++i) {
      stream_prev[i] = last[prog.ops[i].stream];
      last[prog.ops[i].stream] = static_cast<int64_t>(i);
    }
  }
  // Edges of op i: its deps, then its stream predecessor.
  auto edge_count = [&](size_t i) { return prog.ops[i].deps.size() + (stream_prev[i] >= 0 ? 1 : 0); };
  auto edge = [&](size_t i, size_t e) -> size_t {
    return e < prog.ops[i].deps.size() ? prog.ops[i].deps[e] : static_cast<size_t>(stream_prev[i]);
  };
  enum : uint8_t { white, grey, black };
  std::vector<uint8_t> colour(n, white);
  std::vector<std::pair<size_t, size_t>> stack;  // (op, next edge)
  for (size_t start = 0; start < n; ++start) {
    if (colour[start] != white) continue;
    stack.push_back({start, 0});
    colour[start] = grey;
    while (!stack.empty()) {
      auto& [op, next] = stack.back();
      if (next == edge_count(op)) {
        colour[op] = black;
        stack.pop_back();
        continue;
      }
      const size_t e = next++;
      const size_t to = edge(op, e);
      if (colour[to] == black) continue;
      if (colour[to] == white) {
        colour[to] = grey;
        stack.push_back({to, 0});
        continue;
      }
      // A cycle: from `to` down the stack to `op`, then back to `to`.
      size_t k = stack.size();
      while (stack[k - 1].first != to) --k;
      bool through_stream = false;
      std::string loop;
      for (size_t s = k - 1; s < stack.size(); ++s) {
        const size_t a = stack[s].first;
        const size_t taken = stack[s].second - 1;  // the edge followed out of a
        const bool via_stream = taken >= prog.ops[a].deps.size();
        through_stream = through_stream || via_stream;
        loop += node_text(g, {rn.ids[a], prog.ops[a].name}) +
                (via_stream ? " -(after the previous op of stream '" + g.stream(prog.ops[a].stream) + "')-> "
                            : " -> ");
      }
      loop += node_text(g, {rn.ids[to], prog.ops[to].name});
      throw TraceError(where(rn.file, rank) + ": " +
                       (through_stream
                            ? "these nodes wait for each other through dependencies and stream order "
                              "(a stream runs its nodes in file order), so none can run: "
                            : "dependency cycle: ") +
                       loop);
    }
  }
}

}  // namespace

void check_rank_files(const std::string& prefix, int num_ranks) {
  for (int r = 0; r < num_ranks; ++r) {
    const std::string f = rank_file(prefix, r);
    if (std::string why; !sim::config::path_exists(f, &why)) {
      throw TraceError(f + ": missing" + sim::config::why_suffix(why) + ": the cluster has " + std::to_string(num_ranks) +
                       " GPUs, so the trace needs one file per rank, " + rank_file(prefix, 0) +
                       " .. " + rank_file(prefix, num_ranks - 1));
    }
  }
  const std::string extra = rank_file(prefix, num_ranks);
  if (sim::config::path_exists(extra)) {
    throw TraceError(extra + ": the trace has more ranks than the cluster's " +
                     std::to_string(num_ranks) + " GPUs (cluster.nodes x cluster.gpus_per_node)");
  }
}

LoadedTrace load_trace(const std::string& prefix, const ImportOptions& options) {
  const int n = options.num_ranks;
  check_rank_files(prefix, n);
  NodeConverter convert(options);
  LoadedTrace out;
  out.graph = std::make_unique<WorkloadGraph>(n);
  WorkloadGraph& g = *out.graph;

  std::vector<RankNodes> nodes(static_cast<size_t>(n));
  // Collectives per communicator per member, sends and receives per pair.
  std::map<uint32_t, std::map<int, std::vector<CollectiveRef>>> collectives;
  std::map<std::pair<int, int>, std::vector<P2pRef>> sends, recvs;
  std::map<uint32_t, std::string> group_names;

  ChakraProtoMsg::Node node;
  ImportedNode in;
  for (int r = 0; r < n; ++r) {
    RankNodes& rn = nodes[static_cast<size_t>(r)];
    rn.file = rank_file(prefix, r);
    TraceReader reader(rn.file);
    if (r == 0) out.version = reader.metadata().version();
    try {
      if (auto streams = string_list_attr(reader.metadata(), kStreamsAttr)) {
        for (const auto& s : *streams) g.intern_stream(s);
      }
    } catch (const std::invalid_argument& e) {
      throw TraceError(rn.file + ": GlobalMetadata: " + e.what());
    }
    g.intern_stream("compute");
    RankProgram& prog = g.program(r);
    std::unordered_map<uint64_t, uint32_t> index;
    std::vector<std::vector<uint64_t>> dep_ids;
    while (reader.next(node)) {
      convert.convert(r, rn.file, node, in);
      const auto op_index = static_cast<uint32_t>(prog.ops.size());
      if (!index.emplace(in.id, op_index).second) {
        throw TraceError(where(rn.file, r) + ": " + describe_node(node) +
                         ": the id is used by an earlier node of the file");
      }
      Op op;
      op.name = g.intern_name(node.name().empty() ? "node " + std::to_string(in.id) : node.name());
      op.kind = in.kind;
      op.stream = g.intern_stream(in.stream);
      op.payload = in.payload;
      const NodeRef ref{in.id, op.name};
      if (auto* c = std::get_if<CollectiveOp>(&op.payload)) {
        const uint32_t comm = g.add_communicator(*in.group);
        group_names[comm] = in.group_name;
        c->comm = g.comm_slot(r, comm);
        collectives[comm][r].push_back({ref, c->kind, c->bytes, c->root});
      } else if (auto* p = std::get_if<P2pOp>(&op.payload)) {
        p->peer = g.peer_slot(r, in.peer);
        if (op.kind == OpKind::send) {
          sends[{r, in.peer}].push_back({ref, in.tag, p->bytes});
        } else {
          recvs[{in.peer, r}].push_back({ref, in.tag, p->bytes});
        }
      }
      prog.ops.push_back(std::move(op));
      dep_ids.push_back(in.deps);
      rn.ids.push_back(in.id);
    }
    // Dependencies may name nodes later in the file; bind them now.
    for (size_t i = 0; i < prog.ops.size(); ++i) {
      for (uint64_t d : dep_ids[i]) {
        auto it = index.find(d);
        if (it == index.end()) {
          throw TraceError(where(rn.file, r) + ": " + node_text(g, {rn.ids[i], prog.ops[i].name}) +
                           " depends on node " + std::to_string(d) + ", which is not in the file");
        }
        prog.ops[i].deps.push_back(it->second);
      }
    }
    check_no_cycle(g, prog, rn, r);
  }
  out.stats = convert.stats();

  // Collectives meet in order on their communicator: every member must
  // issue the same sequence of kinds and sizes.
  for (const auto& [comm, members] : collectives) {
    const auto& ranks = g.communicator(comm);
    const std::string gname =
        group_names[comm].empty() ? "of every rank" : "'" + group_names[comm] + "'";
    size_t most = 0;
    int busiest = ranks.front();
    for (int m : ranks) {
      auto it = members.find(m);
      const size_t k = it == members.end() ? 0 : it->second.size();
      if (k > most) most = k, busiest = m;
    }
    for (int m : ranks) {
      auto it = members.find(m);
      const size_t k = it == members.end() ? 0 : it->second.size();
      const auto& ref = members.at(busiest);
      if (k < most) {
        throw TraceError(where(nodes[static_cast<size_t>(busiest)].file, busiest) + ": " +
                         node_text(g, ref[k].node) + " is collective " + std::to_string(k + 1) +
                         " of group " + gname + ", but rank " + std::to_string(m) + " issues only " +
                         std::to_string(k) + " on that group (" + nodes[static_cast<size_t>(m)].file +
                         "): it would wait forever");
      }
      for (size_t i = 0; i < k; ++i) {
        const CollectiveRef& a = ref[i];
        const CollectiveRef& b = it->second[i];
        if (a.kind != b.kind || a.bytes != b.bytes || a.root != b.root) {
          throw TraceError(
              where(nodes[static_cast<size_t>(m)].file, m) + ": " + node_text(g, b.node) + " (" +
              collective_name(b.kind) + " of " + std::to_string(b.bytes.count()) + " B) meets rank " +
              std::to_string(busiest) + "'s " + node_text(g, a.node) + " (" + collective_name(a.kind) +
              " of " + std::to_string(a.bytes.count()) + " B) as collective " + std::to_string(i + 1) +
              " of group " + gname + ": members must issue the same collectives in the same order");
        }
      }
    }
  }

  // Sends meet receives in order per (src, dst), with equal tags and sizes.
  auto p2p_text = [&](const P2pRef& x) {
    return node_text(g, x.node) + " (tag " + std::to_string(x.tag) + ", " +
           std::to_string(x.bytes.count()) + " B)";
  };
  for (const auto& [pair, list] : sends) {
    const auto& [src, dst] = pair;
    auto rit = recvs.find(pair);
    const size_t matched = rit == recvs.end() ? 0 : rit->second.size();
    for (size_t i = 0; i < list.size(); ++i) {
      if (i >= matched) {
        throw TraceError(where(nodes[static_cast<size_t>(src)].file, src) + ": SEND " + p2p_text(list[i]) +
                         " to rank " + std::to_string(dst) + " has no matching RECV in " +
                         nodes[static_cast<size_t>(dst)].file + " (rank " + std::to_string(dst) +
                         " receives " + std::to_string(matched) + " message(s) from rank " +
                         std::to_string(src) + ")");
      }
      const P2pRef& rv = rit->second[i];
      if (rv.tag != list[i].tag || rv.bytes != list[i].bytes) {
        throw TraceError(where(nodes[static_cast<size_t>(src)].file, src) + ": SEND " + p2p_text(list[i]) +
                         " to rank " + std::to_string(dst) + " is message " + std::to_string(i + 1) +
                         " from rank " + std::to_string(src) + " to rank " + std::to_string(dst) +
                         ", but rank " + std::to_string(dst) + "'s RECV " + std::to_string(i + 1) +
                         " from it is " + p2p_text(rv) +
                         ": messages between two ranks match in order (as NCCL), so tags and sizes "
                         "must agree in that order");
      }
    }
  }
  for (const auto& [pair, list] : recvs) {
    const auto& [src, dst] = pair;
    auto sit = sends.find(pair);
    const size_t matched = sit == sends.end() ? 0 : sit->second.size();
    if (list.size() > matched) {
      throw TraceError(where(nodes[static_cast<size_t>(dst)].file, dst) + ": RECV " +
                       p2p_text(list[matched]) + " from rank " + std::to_string(src) +
                       " has no matching SEND in " + nodes[static_cast<size_t>(src)].file +
                       " (rank " + std::to_string(src) + " sends " + std::to_string(matched) +
                       " message(s) to rank " + std::to_string(dst) + ")");
    }
  }
  if (std::string problem = validate(g); !problem.empty()) {
    throw TraceError(prefix + ".*.et: " + problem);
  }
  return out;
}

}  // namespace gcsim::workloads::chakra
