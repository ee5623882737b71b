// SPDX-License-Identifier: Apache-2.0
// Private: the check that an event handle is usable, shared by streams and events.
#pragma once

#include <gpumath/core/event.hpp>

namespace gpumath::detail {

/// InvalidArgument when `event` is empty (a moved-from Event or a null cudaEvent_t); `what` names
/// the operand ("event", "this", "start"), `api` the method.
void check_event(core::EventRef event, const char* what, const char* api);

}  // namespace gpumath::detail
