// SPDX-License-Identifier: GPL-2.0-or-later
//
// Verify after copy, from the device: the copy's pages are dropped from the cache first (they are clean once
// fdatasync returned), so reading it back makes the device deliver every byte again; source and copy are hashed
// with XXH3 and compared. Reading it from RAM would only prove that memory still holds what was written.
#pragma once

#include "result.h"

#include <cstdint>
#include <string>

namespace sanecopy {

// Hashes |size| bytes of |source| and of |copy| (a descriptor open for reading on the durable copy). Succeeds
// when both hashes agree; fails with EBADMSG when they don't, or with the read error. Leaves the copy's pages
// out of the cache, and the source's pages as they were (what verify read in is dropped again).
Status verify_copy(int source, int copy, uint64_t size, const std::string &display_path);

// Where an interrupted copy can go on: the length of the part file's prefix whose last up-to-24-MiB window
// matches the source, rounded down to 64 KiB; 0 when nothing usable is there (a different source, a torn tail).
// Pure over the seam's reads; |part| must be open for reading.
uint64_t resume_point(int source, uint64_t source_size, int part, uint64_t part_size);

} // namespace sanecopy
