#include "models/cluster/nccl_kernel_holds.h"

namespace gcsim::models::cluster {

std::shared_ptr<KernelHold> NcclKernelHolds::hold(int rank, int sms,
                                                  std::optional<sim::Duration> posts_for,
                                                  bool after_launches) {
  auto h = std::make_shared<KernelHold>();
  h->rank = rank;
  h->sms = sms;
  h->posts_for = posts_for;
  if (after_launches) {
    sim_.call_at(sim_.now(), [this, h] { request(h); }, kAfterLaunchesPriority);
  } else {
    request(h);
  }
  return h;
}

void NcclKernelHolds::request(const std::shared_ptr<KernelHold>& h) {
  gpus_[static_cast<size_t>(h->rank)]->hold_sms(h->sms, [this, h] {
    h->granted = true;
    if (h->posts_for) sim_.call_in(*h->posts_for, [this, h] { release(*h); });
    if (h->on_grant) h->on_grant();
  });
}

void NcclKernelHolds::issue(int rank, const workloads::Op& op, int sms,
                            std::optional<sim::Duration> posts_for, bool after_launches) {
  issued_[{rank, &op}] = hold(rank, sms, posts_for, after_launches);
}

void NcclKernelHolds::met(int rank, const workloads::Op& op) {
  auto it = issued_.find({rank, &op});
  if (it == issued_.end()) return;
  meeting_.push_back(std::move(it->second));
  issued_.erase(it);
}

std::vector<std::shared_ptr<KernelHold>> NcclKernelHolds::take_meeting() {
  std::vector<std::shared_ptr<KernelHold>> out;
  out.swap(meeting_);
  return out;
}

void NcclKernelHolds::release(KernelHold& h) {
  if (h.released || !h.granted) return;
  h.released = true;
  gpus_[static_cast<size_t>(h.rank)]->release_sms(h.sms);
}

int NcclKernelHolds::room(int rank) const {
  const gpu::Gpu& g = *gpus_[static_cast<size_t>(rank)];
  return g.spec().sm_count - g.promised_sms();
}

}  // namespace gcsim::models::cluster
