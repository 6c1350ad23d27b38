// SPDX-License-Identifier: GPL-2.0-or-later
//
// Verify after copy, from the device: the copy's pages are dropped from the cache first (they are clean once
// fdatasync returned), so reading it back makes the device deliver every byte again; source and copy are hashed
// with XXH3 and compared. Reading it from RAM would only prove that memory still holds what was written.
#pragma once

#include "chunk_controller.h"
#include "result.h"

#include <cstdint>
#include <functional>
#include <string>

namespace sanecopy {

// Hashes |size| bytes of |source| and of |copy| (a descriptor open for reading on the durable copy). Succeeds
// when both hashes agree; fails with EBADMSG when they don't, with the read error, or with ECANCELED when
// |go_on|, asked before each block of 1 MiB (it may wait out a pause, and beat), says no. With |evict| (the
// route's page-cache policy; off onto tmpfs, where memory is the device) the copy's pages are dropped first, so
// the reads go to the device, and what verify read in on either side is dropped again; the source's pages cached
// before are left alone.
Status verify_copy(int source, int copy, uint64_t size, const std::string &display_path, bool evict = true,
                   const std::function<bool()> &go_on = {});

// Whether |a| and |b| hold the same |size| bytes (and no more than that is compared). With |evict|, |b|'s cached
// pages are dropped first, so it is read from its device, and what the comparison read on either side is
// dropped again. |go_on|, asked before each block of 1 MiB, may wait (a pause) and beat (stall_watch.h); when
// it says no (a cancel), the comparison ends as not the same.
bool same_bytes(int a, int b, uint64_t size, bool evict, const std::function<bool()> &go_on = {});

// Where an interrupted copy can go on: the length of the part file's prefix that holds the source's bytes, all
// of them read back from the device and compared up to the first that differs, rounded down to |limits.align|
// (0 for a part file longer than the source). |go_on|, asked before each block of 1 MiB, may wait (a pause),
// and ends the comparison with what was compared so far when it says no (a cancel). |part| must be open for
// reading; the pages either side read are dropped again.
uint64_t resume_point(int source, uint64_t source_size, int part, uint64_t part_size, const ChunkLimits &limits = {},
                      const std::function<bool()> &go_on = {});

} // namespace sanecopy
