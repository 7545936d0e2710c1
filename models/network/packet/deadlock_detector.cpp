#include "models/network/packet/deadlock_detector.h"

#include <algorithm>
#include <functional>
#include <map>

namespace gcsim::models::network {

std::vector<std::vector<WaitPort>> find_wait_cycles(
    const std::vector<std::pair<WaitPort, WaitPort>>& waits_on) {
  // Dense ids in port order, so that everything below is deterministic.
  std::map<WaitPort, int> id;
  for (const auto& [a, b] : waits_on) {
    id.emplace(a, 0);
    id.emplace(b, 0);
  }
  std::vector<WaitPort> port;
  for (auto& [p, i] : id) {
    i = static_cast<int>(port.size());
    port.push_back(p);
  }
  const int n = static_cast<int>(port.size());
  std::vector<std::vector<int>> adj(static_cast<size_t>(n));
  for (const auto& [a, b] : waits_on) adj[static_cast<size_t>(id[a])].push_back(id[b]);
  for (auto& v : adj) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }

  // Tarjan's strongly connected components, iteratively (graphs of
  // thousands of ports must not overflow the stack).
  std::vector<int> index(static_cast<size_t>(n), -1), low(static_cast<size_t>(n), 0),
      comp(static_cast<size_t>(n), -1);
  std::vector<char> on_stack(static_cast<size_t>(n), 0);
  std::vector<int> stack;
  int counter = 0, components = 0;
  for (int root = 0; root < n; ++root) {
    if (index[static_cast<size_t>(root)] >= 0) continue;
    std::vector<std::pair<int, size_t>> work{{root, 0}};
    while (!work.empty()) {
      auto& [v, next] = work.back();
      const auto vs = static_cast<size_t>(v);
      if (next == 0 && index[vs] < 0) {
        index[vs] = low[vs] = counter++;
        stack.push_back(v);
        on_stack[vs] = 1;
      }
      if (next < adj[vs].size()) {
        const int w = adj[vs][next++];
        const auto ws = static_cast<size_t>(w);
        if (index[ws] < 0) {
          work.emplace_back(w, 0);
        } else if (on_stack[ws]) {
          low[vs] = std::min(low[vs], index[ws]);
        }
        continue;
      }
      if (low[vs] == index[vs]) {
        int w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[static_cast<size_t>(w)] = 0;
          comp[static_cast<size_t>(w)] = components;
        } while (w != v);
        ++components;
      }
      const int done = v;
      work.pop_back();
      if (!work.empty()) {
        const auto u = static_cast<size_t>(work.back().first);
        low[u] = std::min(low[u], low[static_cast<size_t>(done)]);
      }
    }
  }

  // Per component with a cycle, walk breadth-first from its smallest port
  // inside the component until an edge closes back on it.
  std::vector<int> smallest(static_cast<size_t>(components), -1), size(static_cast<size_t>(components), 0);
  for (int v = 0; v < n; ++v) {
    const auto c = static_cast<size_t>(comp[static_cast<size_t>(v)]);
    ++size[c];
    if (smallest[c] < 0) smallest[c] = v;  // ids ascend with port order
  }
  std::vector<int> starts;
  for (int c = 0; c < components; ++c) {
    const int s = smallest[static_cast<size_t>(c)];
    const auto& out = adj[static_cast<size_t>(s)];
    const bool self_loop = std::binary_search(out.begin(), out.end(), s);
    if (size[static_cast<size_t>(c)] >= 2 || self_loop) starts.push_back(s);
  }
  std::sort(starts.begin(), starts.end());

  std::vector<std::vector<WaitPort>> cycles;
  for (int s : starts) {
    const int c = comp[static_cast<size_t>(s)];
    std::vector<int> parent(static_cast<size_t>(n), -2);
    std::vector<int> queue{s};
    parent[static_cast<size_t>(s)] = -1;
    int last = -1;
    for (size_t q = 0; q < queue.size() && last < 0; ++q) {
      const int v = queue[q];
      for (int w : adj[static_cast<size_t>(v)]) {
        if (comp[static_cast<size_t>(w)] != c) continue;
        if (w == s) {
          last = v;
          break;
        }
        if (parent[static_cast<size_t>(w)] == -2) {
          parent[static_cast<size_t>(w)] = v;
          queue.push_back(w);
        }
      }
    }
    std::vector<WaitPort> cycle;
    for (int v = last; v >= 0; v = parent[static_cast<size_t>(v)]) cycle.push_back(port[static_cast<size_t>(v)]);
    std::reverse(cycle.begin(), cycle.end());
    cycles.push_back(std::move(cycle));
  }
  return cycles;
}

}  // namespace gcsim::models::network
