// How NCCL 2.28 splits a grouped send/recv (all-to-all, send/recv) over its
// point-to-point channels (src/enqueue.cc scheduleP2pTasksToPlan and
// calcP2pChunkSize; src/include/p2p.h ncclP2pChannelBaseForRound and
// ncclP2pChannelForPart). A grouped call runs one round per peer offset r
// (0 = the rank itself: a local copy); round r sends to rank + r and
// receives from rank - r. Each send or receive is cut into parts of one
// size, part k of round r going to channel (bitreverse(r) + k) mod C, so
// the rounds of a small all-to-all sit on disjoint channels and those of a
// large one share every channel. A channel is one CTA: it serves the parts
// it holds together, its warps split between them (src/device/sendrecv.h).
// Checked against NCCL 2.28.7's source (tag v2.28.7-1).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/config/units.h"

namespace gcsim::models::collectives {

// NCCL's point-to-point constants (NCCL 2.28.9 on 2-4 H200 printed 32 p2p
// channels and 32 per peer: calibration/measurements/h200-x4/nccl_2026-11-26).
struct P2pConfig {
  int channels = 32;           // comm->p2pnChannels (a power of two)
  int channels_per_peer = 32;  // comm->p2pnChannelsPerPeer (a power of two)
  // NCCL_P2P_NVL_CHUNKSIZE (512 KiB): one step of a p2p connection over
  // NVLink; NCCL_P2P_NET_CHUNKSIZE is 128 KiB, but gcsim keeps one figure.
  sim::Bytes chunk = sim::KiB(512);
  // NCCL_P2P_LL_THRESHOLD: a send of at most this many bytes runs LL, a
  // larger one Simple (p2p never runs LL128).
  sim::Bytes ll_threshold = sim::KiB(16);
};

// One send (or receive) of `bytes` in a group of `ranks` over `nodes` hosts:
// the number of parts and the size of each (the last may be smaller).
struct P2pParts {
  int parts = 1;
  double part_bytes = 0.0;
};
P2pParts p2p_parts(double bytes, int ranks, int nodes, const P2pConfig& cfg);

// The channel of part `part` of round `round` on one host.
int p2p_channel(int round, int part, int channels);

// A grouped call in which every rank sends `piece` bytes to each of the
// `ranks` ranks (itself included): per channel, the bytes it handles
// (sends + receives + the local copy), identical on every rank.
std::vector<double> all_to_all_channel_load(double piece, int ranks, int nodes,
                                            const P2pConfig& cfg);

}  // namespace gcsim::models::collectives
