// The HBM bytes one GPU reads and writes for one NCCL collective, counted
// from the algorithm (the interference model's collective load,
// models/gpu/interference.h). NCCL's P2P transport between processes moves
// every chunk through a staging buffer (its FIFO), which the sender (or, in
// read mode, the receiver) writes once and the other side reads once, so a
// byte on the wire costs two HBM accesses besides the user buffers':
//  - ring all-reduce of S over n ranks, per GPU: the input read once (S),
//    the output written once (S), 2(n-1)/n S received into staging and read
//    back (2 x 2(n-1)/n S): 2S + 4(n-1)/n S; per wire byte 2 + n/(n-1)
//    (4 for n = 2, 3.33 for n = 4);
//  - reduce-scatter (S the input) and all-gather (S the output): the user
//    buffers S + S/n, staging 2 x (n-1)/n S; per wire byte 2 + (n+1)/(n-1);
//  - all-to-all (S each rank's send buffer): input and output S each,
//    staging 2 x (n-1)/n S;
//  - broadcast, reduce (a chain; the busiest, a middle rank): staging in
//    and out 2S and its own buffer S: 3S;
//  - send/recv (a ring shift of S): S read, S staged in and read, S
//    written: 4S of which the receiving GPU touches 3S and the sender S;
//    3S is counted (the busier side).
// The staging writes may stay in L2 (50-60 MB) when a channel's FIFO is
// read back soon; counting them in HBM is the upper end of the range, the
// user buffers alone (2S for an all-reduce) the lower.
#pragma once

#include "models/collectives/collective.h"

namespace gcsim::models::cluster {

// HBM bytes one GPU moves for `op` of `bytes` (as nccl-tests counts them)
// over `ranks` GPUs (>= 1; a group of one moves nothing), with
// `staging_in_hbm` (in [0, 1]) of the staging traffic reaching HBM.
double collective_hbm_bytes(collectives::CollectiveOp op, double bytes, int ranks,
                            double staging_in_hbm = 1.0);

}  // namespace gcsim::models::cluster
