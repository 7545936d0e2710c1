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
  // Channels per operation (NCCL 2.28.7 scheduleP2pTasksToPlan): at most
  // as many as a peer may have; at first that many halved while the rounds
  // would need more than all channels (one channel per operation).
  int lo = std::max(1, cfg.channels_per_peer);
  int hi = lo;
  // Across hosts a network peer gets NCCL 2.28.9's net channel count
  // (ncclTopoGetNchannels, NET branch): 2, halved while 2 x ranks exceeds
  // four operations per channel. Without this an EP 64 all-to-all split
  // each peer's part over up to 32 channels (16x the flows of NCCL).
  if (nodes > 1) {
    hi = std::min(hi, 2);
    while (hi * ranks > cfg.channels * 4 && hi > 1) hi /= 2;
    lo = std::min(lo, hi);
  }
  while (lo * ranks > cfg.channels && lo > 1) lo /= 2;
  // addP2pToPlan: parts of at least a step / 8 on one host (a step / 2
  // across hosts) over at most lo channels, doubling the channels while a
  // part would exceed 32 steps on one host (one step across hosts).
  const double step = cfg.chunk.as_double();
  const double min_size = step / (nodes > 1 ? 2.0 : 8.0);
  const double max_size = step * (nodes > 1 ? 1.0 : 32.0);
  int used = static_cast<int>(std::max(1.0, std::min<double>(lo, std::ceil(bytes / min_size))));
  double size = std::max(min_size, std::ceil(bytes / used));
  while (size > max_size && used <= hi / 2) {
    used *= 2;
    size = std::ceil(bytes / used);
  }
  // ncclP2pPartBounds: every part but the last alignUp(bytes / used, 4 KiB).
  const double part = std::ceil(std::ceil(bytes / used) / 4096.0) * 4096.0;
  P2pParts p;
  p.part_bytes = std::min(part, bytes);
  p.parts = std::max(1, static_cast<int>(std::ceil(bytes / p.part_bytes)));
  return p;
}

int p2p_channel(int round, int part, int channels) {
  // NCCL 2.28.7: ncclP2pChannelBaseForRound (one host) is the round's
  // bit-reversed index, ncclP2pChannelForPart adds the part.
  const int bits = log2_of(channels);
  return (reverse_bits(round, bits) + part) & (channels - 1);
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
