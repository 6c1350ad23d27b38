// SPDX-License-Identifier: GPL-2.0-or-later
//
// Byte sizes as 64-bit constants, so "8 * kMiB" is computed in 64 bits, never in int.
#pragma once

#include <cstdint>

namespace sanecopy {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;

} // namespace sanecopy
