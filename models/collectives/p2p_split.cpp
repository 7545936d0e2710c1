#include "models/collectives/p2p_split.h"

#include <algorithm>
#include <cmath>

namespace gcsim::models::collectives {

namespace {

int log2_of(int pow2) {
  int b = 0;
  while ((1 << (b + 1)) <= pow2) ++b;
  return b;
}

// NCCL's reverseBits(x, nBits): the low nBits of x in reverse order.
int reverse_bits(int x, int bits) {
  int r = 0;
  for (int i = 0; i < bits; ++i) r |= ((x >> i) & 1) << (bits - 1 - i);
  return r;
}

}  // namespace

P2pParts p2p_parts(double bytes, int ranks, int nodes, const P2pConfig& cfg) {
  // Channels per operation: as many as a peer may have, halved while the
  // rounds would need more than all channels (the minimum) or more than
  // four times them (the maximum).
  int lo = std::max(1, cfg.channels_per_peer), hi = lo;
  while (lo * ranks > cfg.channels && lo > 1) lo /= 2;
  while (hi * ranks > cfg.channels * 4 && hi > 1) hi /= 2;
  // calcP2pChunkSize: parts of at least chunk/8, spread over lo channels,
  // doubling the channels while a part would exceed 32 chunks on one host
  // (one chunk across hosts).
  const double min_size = cfg.chunk.as_double() / 8.0;
  const double max_size = cfg.chunk.as_double() * (nodes > 1 ? 1.0 : 32.0);
  double size = std::max(min_size, std::ceil(bytes / lo));
  int used = lo;
  while (size > max_size && used <= hi / 2) {
    used *= 2;
    size = std::ceil(bytes / used);
  }
  size = std::ceil(size / min_size) * min_size;  // alignUp(size, minSize)
  P2pParts p;
  p.parts = std::max(1, static_cast<int>(std::ceil(bytes / size)));
  p.part_bytes = std::min(size, bytes);
  return p;
}

int p2p_channel(int round, int part, int channels) {
  const int bits = log2_of(channels);
  return (round + reverse_bits(part, bits)) & (channels - 1);
}

std::vector<double> all_to_all_channel_load(double piece, int ranks, int nodes,
                                            const P2pConfig& cfg) {
  std::vector<double> load(static_cast<size_t>(std::max(1, cfg.channels)), 0.0);
  const P2pParts split = p2p_parts(piece, ranks, nodes, cfg);
  for (int r = 0; r < ranks; ++r) {
    double left = piece;
    for (int k = 0; k < split.parts && left > 0; ++k) {
      const double part = std::min(split.part_bytes, left);
      left -= part;
      // Round 0 copies the rank's own slice once; round r sends one part
      // and receives one of the same size on the same channel.
      load[static_cast<size_t>(p2p_channel(r, k, cfg.channels))] += (r == 0 ? 1.0 : 2.0) * part;
    }
  }
  return load;
}

}  // namespace gcsim::models::collectives
