#include "models/gpu/gpu.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "models/gpu/hbm.h"
#include "models/gpu/kernel_cost_model.h"
#include "models/gpu/sm_array.h"

namespace gcsim::models::gpu {

namespace {
// Event tags: the kind in the top two bits, a slot index below.
enum EventKind : uint64_t { kArrive = 0, kWaveEnd = 1, kSchedule = 2 };
constexpr int kKindShift = 62;
constexpr uint64_t kIndexMask = (uint64_t{1} << kKindShift) - 1;
uint64_t tag_of(EventKind kind, uint64_t index) { return (uint64_t{kind} << kKindShift) | index; }

// The scheduling pass runs after every ordinary event of the same instant,
// so kernels that arrive (or waves that end) together share the free SMs
// instead of the first one taking them all.
constexpr int32_t kSchedulePriority = 1'000'000;

// Slots reused through a free list; indices stay valid while in use.
template <typename T>
class SlotPool {
 public:
  uint32_t add(T value) {
    if (!free_.empty()) {
      const uint32_t i = free_.back();
      free_.pop_back();
      slots_[i] = std::move(value);
      return i;
    }
    slots_.push_back(std::move(value));
    return static_cast<uint32_t>(slots_.size() - 1);
  }
  T& operator[](uint32_t i) { return slots_[i]; }
  void remove(uint32_t i) {
    slots_[i] = T{};
    free_.push_back(i);
  }

 private:
  std::vector<T> slots_;
  std::vector<uint32_t> free_;
};
}  // namespace

class Gpu::Impl : public sim::EventHandler {
 public:
  Impl(sim::Simulator& sim, const GpuSpec& spec)
      : sim_(sim), spec_(spec), sms_(spec.sm_count), hbm_(spec) {}

  void launch(const KernelDesc& kernel, KernelDone done) {
    if (kernel.tiles < 0) {
      throw std::invalid_argument("kernel '" + kernel.name + "' has a negative grid");
    }
    // A kernel the GPU cannot run (no rate for its unit, negative work) is
    // refused here, at the caller, rather than from inside the event loop.
    if (kernel.tiles > 0) static_cast<void>(wave_time(spec_, kernel, 1));
    Run r;
    r.kernel = kernel;
    r.done = std::move(done);
    r.tiles_left = kernel.tiles;
    const uint32_t run = runs_.add(std::move(r));
    sim_.schedule_in(spec_.kernel_launch_latency, *this, tag_of(kArrive, run));
  }

  void hold(int count) { sms_.hold(count); }
  void release(int count) {
    sms_.release(count);
    request_schedule();
  }

  void handle_event(uint64_t tag) override {
    const auto index = static_cast<uint32_t>(tag & kIndexMask);
    switch (static_cast<EventKind>(tag >> kKindShift)) {
      case kArrive:
        arrive(index);
        break;
      case kWaveEnd:
        wave_end(index);
        break;
      case kSchedule:
        schedule();
        break;
    }
  }

  SmArray& sms() { return sms_; }
  Hbm& hbm() { return hbm_; }

 private:
  // A launched kernel between its arrival and its last wave's end.
  struct Run {
    KernelDesc kernel;
    KernelDone done;
    int64_t tiles_left = 0;  // not yet started on an SM
    int sms_in_use = 0;      // SMs running its tiles now
    int waves_in_flight = 0;
    bool started = false;
    sim::Time first_start;
  };
  struct Wave {
    uint32_t run = 0;
    int sms = 0;
  };

  void arrive(uint32_t run) {
    if (runs_[run].tiles_left == 0) {  // an empty grid: nothing to run
      finish(run);
      return;
    }
    waiting_.push_back(run);
    request_schedule();
  }

  void wave_end(uint32_t wave) {
    const Wave w = waves_[wave];
    waves_.remove(wave);
    sms_.finish_tiles(w.sms);  // repays communication holds first
    Run& r = runs_[w.run];
    r.sms_in_use -= w.sms;
    --r.waves_in_flight;
    request_schedule();
    if (r.tiles_left == 0 && r.waves_in_flight == 0) finish(w.run);
  }

  void finish(uint32_t run) {
    KernelDone done = std::move(runs_[run].done);
    const sim::Time start = runs_[run].started ? runs_[run].first_start : sim_.now();
    runs_.remove(run);  // before the callback: it may launch and reuse slots
    if (done) done(start, sim_.now());
  }

  void request_schedule() {
    if (schedule_pending_) return;
    schedule_pending_ = true;
    sim_.schedule_at(sim_.now(), *this, tag_of(kSchedule, 0), kSchedulePriority);
  }

  // Splits the free SMs evenly among the waiting kernels (earlier launches
  // get the remainder), each bounded by its unstarted tiles and max_sms, and
  // starts one wave per kernel that got SMs.
  void schedule() {
    schedule_pending_ = false;
    int left = sms_.free();
    if (left == 0 || waiting_.empty()) return;
    // Scratch vectors kept as members: this runs after every wave.
    std::vector<int>& grant = grant_;
    std::vector<int>& want = want_;
    grant.assign(waiting_.size(), 0);
    want.assign(waiting_.size(), 0);
    for (size_t i = 0; i < waiting_.size(); ++i) {
      const Run& r = runs_[waiting_[i]];
      const int cap =
          r.kernel.max_sms > 0 ? std::min(r.kernel.max_sms, spec_.sm_count) : spec_.sm_count;
      want[i] = static_cast<int>(std::min<int64_t>(r.tiles_left, std::max(0, cap - r.sms_in_use)));
    }
    // Water-filling: each round offers every unsatisfied kernel an equal
    // share; a kernel that needs less frees the rest for the next round.
    for (;;) {
      int hungry = 0;
      for (size_t i = 0; i < grant.size(); ++i) hungry += grant[i] < want[i];
      if (left == 0 || hungry == 0) break;
      const int share = left / hungry;
      int extra = left % hungry;
      for (size_t i = 0; i < grant.size() && left > 0; ++i) {
        if (grant[i] >= want[i]) continue;
        int offer = share + (extra > 0 ? 1 : 0);
        if (extra > 0) --extra;
        const int take = std::min(offer, want[i] - grant[i]);
        grant[i] += take;
        left -= take;
      }
    }
    for (size_t i = 0; i < grant.size(); ++i) sms_.start_tiles(grant[i]);
    // HBM share: every SM running tiles once these waves start.
    const int active = sms_.busy();
    const sim::Time now = sim_.now();
    for (size_t i = 0; i < grant.size(); ++i) {
      if (grant[i] == 0) continue;
      const uint32_t run = waiting_[i];
      Run& r = runs_[run];
      if (!r.started) {
        r.started = true;
        r.first_start = now;
      }
      r.tiles_left -= grant[i];
      r.sms_in_use += grant[i];
      ++r.waves_in_flight;
      const sim::Duration length = wave_time(spec_, r.kernel, active);
      const uint32_t wave = waves_.add(Wave{run, grant[i]});
      sim_.schedule_at(now + length, *this, tag_of(kWaveEnd, wave));
    }
    std::erase_if(waiting_, [this](uint32_t run) { return runs_[run].tiles_left == 0; });
  }

  sim::Simulator& sim_;
  const GpuSpec& spec_;
  SmArray sms_;
  Hbm hbm_;
  SlotPool<Run> runs_;
  SlotPool<Wave> waves_;
  std::vector<uint32_t> waiting_;  // runs with unstarted tiles, in launch order
  std::vector<int> grant_, want_;  // SMs granted / wanted per waiting run
  bool schedule_pending_ = false;
};

Gpu::Gpu(sim::Simulator& sim, const GpuSpec& spec, int rank)
    : spec_(spec), rank_(rank), impl_(std::make_unique<Impl>(sim, spec_)) {}

Gpu::~Gpu() = default;

void Gpu::launch(const KernelDesc& kernel, KernelDone done) {
  impl_->launch(kernel, std::move(done));
}
void Gpu::hold_sms(int count) { impl_->hold(count); }
void Gpu::release_sms(int count) { impl_->release(count); }
int Gpu::free_sms() const { return impl_->sms().free(); }
int Gpu::held_sms() const { return impl_->sms().held(); }
int Gpu::busy_sms() const { return impl_->sms().busy(); }
bool Gpu::allocate(sim::Bytes bytes) { return impl_->hbm().allocate(bytes); }
void Gpu::free(sim::Bytes bytes) { impl_->hbm().free(bytes); }
sim::Bytes Gpu::memory_used() const { return impl_->hbm().used(); }
sim::Bytes Gpu::memory_peak() const { return impl_->hbm().peak(); }

}  // namespace gcsim::models::gpu
