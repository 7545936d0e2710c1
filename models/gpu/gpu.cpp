#include "models/gpu/gpu.h"

#include <algorithm>
#include <deque>
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
  const T& operator[](uint32_t i) const { return slots_[i]; }
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
  Impl(sim::Simulator& sim, const GpuSpec& spec, GpuOptions options)
      : sim_(sim), spec_(spec), coalesce_(options.coalesce_waves), sms_(spec.sm_count), hbm_(spec) {}

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
    const sim::Time arrival = sim_.now() + spec_.kernel_launch_latency;
    sim_.schedule_at(arrival, *this, tag_of(kArrive, run));
    if (coalesce_) {
      // Batches end no later than the arrivals known when they start
      // (start_batch); this one is new, so a batch reaching it is split now.
      // Reaching it exactly counts too: which of the arrival and the last
      // wave end goes first at that instant depends on when the per-wave
      // schedule would have queued that wave end.
      std::erase_if(batches_, [this, arrival](uint32_t wave) {
        if (batch_end(waves_[wave]) < arrival) return false;
        split(wave);
        return true;
      });
      arrivals_.push_back(arrival);
    }
  }

  void hold(int count) {
    if (coalesce_) split_all();
    sms_.hold(count);
  }
  void release(int count) {
    if (coalesce_) split_all();
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
    int64_t tiles_left = 0;  // not yet started on an SM (batches: see Wave)
    int sms_in_use = 0;      // SMs running its tiles now
    int waves_in_flight = 0;
    bool started = false;
    sim::Time first_start;
    std::vector<uint32_t> waves;  // its waves (and batches) in flight
  };
  // One wave, or with count > 1 a batch: `count` identical back-to-back
  // waves standing for as many of the per-wave schedule's (coalescing
  // only). Only the first wave's tiles are counted out of the kernel's
  // tiles_left while the batch is live; the rest when it ends or splits.
  // `active` (SMs running tiles when it started) fixes its HBM share and so
  // its length.
  struct Wave {
    uint32_t run = 0;
    int sms = 0;
    int active = 0;
    sim::Time start;       // the (first) wave's start
    sim::Duration length;  // one wave
    int64_t count = 1;
    uint32_t ticket = 0;  // its pending end event
  };
  // A pending wave-end event. The engine cannot cancel events, so a batch
  // cut short voids its ticket and the event fires as a no-op; a ticket is
  // freed only when its event fires, so no index is reused while pending.
  struct Ticket {
    uint32_t wave = 0;
    bool live = false;
  };

  static sim::Time batch_end(const Wave& w) { return w.start + w.length * w.count; }

  // Waves of a batch started by `now`: its first, and each later one whose
  // start is before now (one due exactly now would start only at this
  // instant's pass, which the batch stands in for but has not reached).
  static int64_t waves_started(const Wave& w, sim::Time now) {
    const int64_t elapsed = (now - w.start).ps(), length = w.length.ps();
    return std::max<int64_t>(1, elapsed / length + (elapsed % length != 0 ? 1 : 0));
  }

  void arrive(uint32_t run) {
    if (coalesce_) {
      // Arrivals fire in launch order, which is also time order (a fixed
      // latency after each launch), so this one is the front.
      arrivals_.pop_front();
      split_all();  // a no-op in practice: batches end no later than arrivals
    }
    if (runs_[run].tiles_left == 0) {  // an empty grid: nothing to run
      finish(run);
      return;
    }
    waiting_.push_back(run);
    request_schedule();
  }

  void wave_end(uint32_t ticket) {
    const Ticket t = tickets_[ticket];
    tickets_.remove(ticket);
    if (!t.live) return;  // a batch cut short: its wave end was rescheduled
    const Wave w = waves_[t.wave];
    if (w.count > 1) std::erase(batches_, t.wave);  // its own end: all its waves ended
    remove_wave(t.wave);
    Run& r = runs_[w.run];
    // A batch's later waves started on time at its boundaries: their tiles.
    r.tiles_left -= (w.count - 1) * w.sms;
    sms_.finish_tiles(w.sms);  // repays communication holds first
    r.sms_in_use -= w.sms;
    --r.waves_in_flight;
    if (!coalesce_) {
      request_schedule();
    } else if (!start_batch(w)) {
      // Not an identical restart: the next pass sees a changed GPU, and
      // it needs every batch's tiles counted.
      split_all();
      if (r.tiles_left == 0) drop_waiting(w.run);
      request_schedule();
    }
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
    // With nothing waiting the pass would do nothing (an arrival requests
    // its own); skipping it only saves the event.
    if (coalesce_ && waiting_.empty()) return;
    schedule_pending_ = true;
    sim_.schedule_at(sim_.now(), *this, tag_of(kSchedule, 0), kSchedulePriority);
  }

  int cap(const Run& r) const {
    return r.kernel.max_sms > 0 ? std::min(r.kernel.max_sms, spec_.sm_count) : spec_.sm_count;
  }
  // SMs a waiting kernel would take from a pass if they were free.
  int64_t want(const Run& r, int64_t tiles_left) const {
    return std::min<int64_t>(tiles_left, std::max(0, cap(r) - r.sms_in_use));
  }

  // Splits the free SMs evenly among the waiting kernels (earlier launches
  // get the remainder), each bounded by its unstarted tiles and max_sms, and
  // starts one wave per kernel that got SMs.
  void schedule() {
    schedule_pending_ = false;
    if (coalesce_) split_all();  // none is live here: every pass follows a split
    int left = sms_.free();
    if (left == 0 || waiting_.empty()) return;
    // Scratch vectors kept as members: this runs after every wave.
    std::vector<int>& grant = grant_;
    std::vector<int>& want = want_;
    grant.assign(waiting_.size(), 0);
    want.assign(waiting_.size(), 0);
    for (size_t i = 0; i < waiting_.size(); ++i) {
      const Run& r = runs_[waiting_[i]];
      want[i] = static_cast<int>(this->want(r, r.tiles_left));
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
      schedule_end(add_wave(Wave{run, grant[i], active, now, length, 1, 0}), now + length);
    }
    std::erase_if(waiting_, [this](uint32_t run) { return runs_[run].tiles_left == 0; });
  }

  uint32_t add_wave(const Wave& w) {
    const uint32_t wave = waves_.add(w);
    runs_[w.run].waves.push_back(wave);
    return wave;
  }
  void remove_wave(uint32_t wave) {
    std::erase(runs_[waves_[wave].run].waves, wave);
    waves_.remove(wave);
  }
  void schedule_end(uint32_t wave, sim::Time when) {
    const uint32_t ticket = tickets_.add(Ticket{wave, true});
    waves_[wave].ticket = ticket;
    sim_.schedule_at(when, *this, tag_of(kWaveEnd, ticket));
  }
  void drop_waiting(uint32_t run) { std::erase(waiting_, run); }

  // ---- coalescing ----------------------------------------------------------
  //
  // A kernel alone on the GPU (or beside held SMs, or beside kernels at
  // their max_sms) restarts every wave that ends on the same SMs: the pass
  // at its end gives the freed SMs straight back to it, with the same number
  // of SMs active, so the same HBM share and length. After an overlap or a
  // release it may run as several such lanes of different widths and
  // phases. Each lane's identical waves become one batch, started at the end
  // of a real wave in place of the pass that would restart it. Anything else
  // (an arrival, a hold or release, a wave end that is not an identical
  // restart) first splits every batch back into the wave the per-wave
  // schedule has in flight then (split_all), and the normal passes resume.
  // Live batches all belong to one kernel, whose lanes never end at the same
  // instant (they would have merged into one wave), so every event of the
  // GPU keeps its per-wave place among events of the same instant.

  // Tiles of `run` not started by now in the per-wave schedule: its batches
  // count only their first wave in tiles_left.
  int64_t unstarted(const Run& r, sim::Time now) const {
    int64_t tiles = r.tiles_left;
    for (const uint32_t wave : r.waves) {
      const Wave& w = waves_[wave];
      if (w.count > 1) tiles -= (waves_started(w, now) - 1) * w.sms;
    }
    return tiles;
  }

  // Called as the wave `ended` finishes, before this instant's pass. If that
  // pass would only restart it (same kernel, SMs and active count), starts
  // as many identical waves at once as the per-wave schedule would, as a
  // batch with one end event.
  bool start_batch(const Wave& ended) {
    // Something else happened this instant (the pass will see it), holds
    // are owed SMs (the next finishing wave repays them, not this kernel),
    // or zero-length waves (all at one instant: nothing to gain).
    if (schedule_pending_ || sms_.debt() != 0 || ended.length <= sim::Duration::zero()) {
      return false;
    }
    for (const uint32_t wave : batches_) {
      if (waves_[wave].run != ended.run) return false;
    }
    Run& r = runs_[ended.run];
    const sim::Time now = sim_.now();
    const int width = ended.sms;
    const int64_t tiles = unstarted(r, now);
    if (tiles < 2 * int64_t{width}) return false;
    // Every other waiting kernel must want nothing (its tiles_left may
    // still count a batch's waves; that only errs towards refusing), so the
    // pass gives this one min(want, free): the same at every later boundary
    // while its unstarted tiles stay >= width.
    for (const uint32_t other : waiting_) {
      if (other != ended.run && want(runs_[other], runs_[other].tiles_left) > 0) return false;
    }
    if (std::min<int64_t>(want(r, tiles), sms_.free()) != width) return false;
    if (sms_.busy() + width != ended.active) return false;
    const int64_t length = ended.length.ps();
    // End no later than the next known arrival (its pass shares the SMs),
    // and inside the clock's range.
    int64_t limit = std::min(tiles / width, (sim::Time::max() - now).ps() / length);
    if (!arrivals_.empty()) limit = std::min(limit, (arrivals_.front() - now).ps() / length);
    if (limit < 2) return false;
    const int64_t count = funded_waves(r, width, now, ended.length, tiles, limit);
    if (count < 2) return false;
    sms_.start_tiles(width);
    r.tiles_left -= width;  // the first wave; the rest when the batch ends or splits
    r.sms_in_use += width;
    ++r.waves_in_flight;
    const uint32_t wave = add_wave(Wave{ended.run, width, ended.active, now, ended.length, count, 0});
    batches_.push_back(wave);
    schedule_end(wave, now + ended.length * count);
    return true;
  }

  // How many waves of `width` starting at now + k * length (k = 0, 1, ...,
  // at most `limit`) find `width` tiles unstarted, when the kernel's other
  // lanes also restart at each of their boundaries. The lanes share the
  // tiles in time order; a lane that would find fewer is where the kernel
  // runs short, a real event that splits the rest. Counting every other
  // wave as restarting (even one that will not) only shortens the batch.
  int64_t funded_waves(const Run& r, int width, sim::Time now, sim::Duration length,
                       int64_t tiles, int64_t limit) const {
    // Tiles the other lanes start at boundaries up to and including t.
    auto taken_by_others = [&](sim::Time t) {
      __int128 taken = 0;
      for (const uint32_t wave : r.waves) {
        const Wave& w = waves_[wave];
        const int64_t period = w.length.ps();
        if (period <= 0) return static_cast<__int128>(tiles);  // never here: all fund nothing
        // Its next boundary at or after now.
        const sim::Time next = w.count > 1 ? w.start + w.length * waves_started(w, now)
                                           : w.start + w.length;
        if (t < next) continue;
        taken += static_cast<__int128>(w.sms) * (1 + (t - next).ps() / period);
      }
      return taken;
    };
    auto funded = [&](int64_t k) {  // the wave starting at now + k * length
      return static_cast<__int128>(tiles) - static_cast<__int128>(k) * width -
                 taken_by_others(now + length * k) >=
             width;
    };
    // funded(0) holds (tiles >= 2 * width) and funded is monotone: find
    // the last k that is funded.
    int64_t lo = 0, hi = limit - 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (funded(mid)) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo + 1;
  }

  // Turns every live batch back into the one wave the per-wave schedule has
  // in flight now.
  void split_all() {
    if (batches_.empty()) return;
    splitting_.swap(batches_);  // split() may not touch batches_
    for (const uint32_t wave : splitting_) split(wave);
    splitting_.clear();
  }

  // The waves of the batch that ended before now stay ended, the one in
  // progress keeps its end, and the rest never start. The caller removes
  // `wave` from batches_.
  void split(uint32_t wave) {
    Wave& w = waves_[wave];
    Run& r = runs_[w.run];
    const sim::Time now = sim_.now();
    if (now == w.start) {
      // The batch started at this instant, at its predecessor's end, in
      // place of the pass that would restart it: undo that start and let
      // the pass, which will also see what changed, decide.
      sms_.finish_tiles(w.sms);  // no debt: start_batch required none, holds split first
      r.tiles_left += w.sms;
      r.sms_in_use -= w.sms;
      --r.waves_in_flight;
      tickets_[w.ticket].live = false;
      remove_wave(wave);
      request_schedule();
      return;
    }
    const int64_t started = waves_started(w, now);
    r.tiles_left -= (started - 1) * w.sms;
    const bool last = started == w.count;
    w.start = w.start + w.length * (started - 1);  // the wave in progress (or ending now)
    w.count = 1;
    if (r.tiles_left == 0) drop_waiting(w.run);
    if (!last) {
      // The wave in progress ends before the batch would: a new end event,
      // queued now where the per-wave one was queued at this wave's start
      // (nothing happened on the GPU in between). At an exact boundary the
      // wave ending now gets its event after the current one, as the
      // per-wave end (queued a wave ago) follows the GPU's own earlier
      // queued events of this instant.
      tickets_[w.ticket].live = false;
      schedule_end(wave, w.start + w.length);
    }
  }

  sim::Simulator& sim_;
  const GpuSpec& spec_;
  const bool coalesce_;
  SmArray sms_;
  Hbm hbm_;
  SlotPool<Run> runs_;
  SlotPool<Wave> waves_;
  SlotPool<Ticket> tickets_;
  std::vector<uint32_t> waiting_;  // runs with unstarted tiles, in launch order
  std::vector<int> grant_, want_;  // SMs granted / wanted per waiting run
  bool schedule_pending_ = false;
  // With coalescing: the live batches (wave indices, all of one kernel), and
  // the arrival times of launched kernels not yet arrived, earliest first.
  std::vector<uint32_t> batches_, splitting_;
  std::deque<sim::Time> arrivals_;
};

Gpu::Gpu(sim::Simulator& sim, const GpuSpec& spec, int rank, GpuOptions options)
    : spec_(spec), rank_(rank), impl_(std::make_unique<Impl>(sim, spec_, options)) {}

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
