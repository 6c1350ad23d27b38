// SPDX-License-Identifier: GPL-2.0-or-later
//
// SysMon: what the kernel says about dirty pages, for the progress chart and for tests that check the engine
// keeps them small. Three views, from coarse to fine:
//   - /proc/meminfo: Dirty and Writeback, system-wide;
//   - /sys/kernel/debug/bdi/<MAJ:MIN>/stats: the same for one backing device, plus what it has taken and the
//     kernel's estimate of its write rate. Needs debugfs mounted; the engine never mounts it;
//   - cachestat(2): cached, dirty and writeback pages of one open file (Linux 6.5 and later).
// Every reader returns nullopt when the kernel doesn't offer the view; none of them is needed to copy.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace sanecopy {

struct MemInfo {
    uint64_t dirty_bytes = 0;     // "Dirty:"
    uint64_t writeback_bytes = 0; // "Writeback:" (not "WritebackTmp:")
    uint64_t available_bytes = 0; // "MemAvailable:", 0 when the kernel does not say
};

// Parses the text of /proc/meminfo (values in kB). nullopt when Dirty or Writeback is missing.
std::optional<MemInfo> parse_meminfo(std::string_view text);
std::optional<MemInfo> read_meminfo();

struct BdiStats {
    uint64_t dirty_bytes = 0;                   // BdiReclaimable: dirty, not yet under writeback
    uint64_t writeback_bytes = 0;               // BdiWriteback: on its way to the device
    uint64_t written_bytes = 0;                 // BdiWritten: taken by the device since boot
    uint64_t write_bandwidth_bytes_per_sec = 0; // BdiWriteBandwidth: the kernel's running estimate; it can
                                                // read 0 even after writes, so 0 means unknown
};

// Parses a debugfs bdi "stats" file (values in kB and kBps). nullopt when BdiReclaimable or BdiWriteback is
// missing; BdiWritten and BdiWriteBandwidth read as 0 when absent.
std::optional<BdiStats> parse_bdi_stats(std::string_view text);

// Reads <debugfs_root>/bdi/<bdi>/stats; |bdi| is DeviceInfo::bdi ("8:16"). nullopt when debugfs isn't
// mounted, lockdown hides it, or |bdi| is not a plain name.
std::optional<BdiStats> read_bdi_stats(std::string_view bdi, std::string_view debugfs_root = "/sys/kernel/debug");

// In pages of the page cache, for the asked range of one file.
struct PageCacheStat {
    uint64_t cached = 0;
    uint64_t dirty = 0;
    uint64_t writeback = 0;
    uint64_t evicted = 0;
    uint64_t recently_evicted = 0;
};

// cachestat(2) on |fd| for [off, off + len); len 0 means up to the end of the file. nullopt on any error,
// including ENOSYS before Linux 6.5 and EOPNOTSUPP on hugetlbfs.
std::optional<PageCacheStat> cachestat(int fd, uint64_t off = 0, uint64_t len = 0);

} // namespace sanecopy
