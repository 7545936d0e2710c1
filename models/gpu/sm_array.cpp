#include "models/gpu/sm_array.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gcsim::models::gpu {

SmArray::SmArray(int sm_count) : total_(sm_count) {
  if (sm_count < 1) throw std::invalid_argument("a GPU needs at least one SM");
}

void SmArray::start_tiles(int count) {
  if (count < 0 || count > free()) {
    throw std::logic_error("wave of " + std::to_string(count) + " tiles on " +
                           std::to_string(free()) + " free SMs");
  }
  busy_ += count;
}

int SmArray::repay(int count) {
  const int repaid = std::min(count, debt_);
  debt_ -= repaid;
  held_ += repaid;
  return repaid;
}

int SmArray::finish_tiles(int count) {
  if (count < 0 || count > busy_) throw std::logic_error("finishing more tiles than are running");
  busy_ -= count;
  return repay(count);
}

void SmArray::keep_tiles(int count) {
  if (count < 0 || count > busy_) throw std::logic_error("keeping more SMs than run tiles");
  busy_ -= count;
  reserved_ += count;
}

void SmArray::resume_tiles(int count) {
  if (count < 0 || count > reserved_) throw std::logic_error("resuming on more SMs than are kept");
  reserved_ -= count;
  busy_ += count;
}

int SmArray::release_kept(int count) {
  if (count < 0 || count > reserved_) throw std::logic_error("releasing more SMs than are kept");
  reserved_ -= count;
  return repay(count);
}

int SmArray::hold(int count) {
  if (count < 0) throw std::invalid_argument("cannot hold a negative number of SMs");
  if (held_ + debt_ + count > total_) {
    throw std::invalid_argument("holding " + std::to_string(count) + " SMs would exceed the " +
                                std::to_string(total_) + " SMs of the GPU (already held " +
                                std::to_string(held_ + debt_) + ")");
  }
  const int now = std::min(count, free());
  held_ += now;
  debt_ += count - now;
  return now;
}

void SmArray::release(int count) {
  if (count < 0) throw std::invalid_argument("cannot release a negative number of SMs");
  if (count > held_ + debt_) throw std::invalid_argument("releasing more SMs than are held");
  const int cancelled = std::min(count, debt_);
  debt_ -= cancelled;
  held_ -= count - cancelled;
}

int SmArray::release_held(int count) {
  if (count < 0 || count > held_) throw std::logic_error("releasing more SMs than are held");
  held_ -= count;
  return repay(count);
}

void SmArray::cancel_debt(int count) {
  if (count < 0 || count > debt_) throw std::logic_error("cancelling more SMs than are owed");
  debt_ -= count;
}

}  // namespace gcsim::models::gpu
