// SPDX-License-Identifier: Apache-2.0
// The one implementation of the public plan caches' controls (gpumath/core/cache.hpp).
#include <gpumath/core/cache.hpp>

namespace gpumath::detail {

std::size_t PlanCacheControl::capacity() const { return store_->capacity(); }
void PlanCacheControl::set_capacity(std::size_t plans) { store_->set_capacity(plans); }
void PlanCacheControl::clear() { store_->clear(); }
core::CacheStats PlanCacheControl::stats() const { return store_->stats(); }
void PlanCacheControl::reset_stats() { store_->reset_stats(); }

}  // namespace gpumath::detail
