// SPDX-License-Identifier: GPL-2.0-or-later
#include "sysmon.h"

#include "device_probe.h"

#include <charconv>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>

namespace sanecopy {

namespace {

// The value of a "Key:   123 kB" line, in the file's own unit. Keys must match whole: "Writeback" is not
// "WritebackTmp".
std::optional<uint64_t> field_value(std::string_view text, std::string_view key)
{
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string_view::npos)
            end = text.size();
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':')
            continue;
        std::string_view rest = line.substr(key.size() + 1);
        size_t digits = rest.find_first_not_of(' ');
        if (digits == std::string_view::npos)
            return std::nullopt;
        uint64_t value = 0;
        auto [ptr, ec] = std::from_chars(rest.data() + digits, rest.data() + rest.size(), value);
        if (ec != std::errc())
            return std::nullopt;
        return value;
    }
    return std::nullopt;
}

constexpr uint64_t kKiB = 1024;

// The kernel's own structs from linux/mman.h (6.5), which Debian 12's headers predate. Named apart so they
// can't clash with newer headers that do declare them.
struct KernelCachestatRange {
    uint64_t off;
    uint64_t len;
};
struct KernelCachestat {
    uint64_t nr_cache;
    uint64_t nr_dirty;
    uint64_t nr_writeback;
    uint64_t nr_evicted;
    uint64_t nr_recently_evicted;
};

#ifdef SYS_cachestat
constexpr long kSysCachestat = SYS_cachestat;
#else
// Syscalls added since Linux 5.1 have one number on every architecture but alpha.
constexpr long kSysCachestat = 451;
#endif

} // namespace

std::optional<MemInfo> parse_meminfo(std::string_view text)
{
    auto dirty = field_value(text, "Dirty");
    auto writeback = field_value(text, "Writeback");
    if (!dirty || !writeback)
        return std::nullopt;
    return MemInfo {*dirty * kKiB, *writeback * kKiB, field_value(text, "MemAvailable").value_or(0) * kKiB};
}

std::optional<MemInfo> read_meminfo()
{
    auto text = read_kernel_text("/proc/meminfo");
    if (!text)
        return std::nullopt;
    return parse_meminfo(*text);
}

std::optional<BdiStats> parse_bdi_stats(std::string_view text)
{
    auto dirty = field_value(text, "BdiReclaimable");
    auto writeback = field_value(text, "BdiWriteback");
    if (!dirty || !writeback)
        return std::nullopt;
    BdiStats stats;
    stats.dirty_bytes = *dirty * kKiB;
    stats.writeback_bytes = *writeback * kKiB;
    stats.written_bytes = field_value(text, "BdiWritten").value_or(0) * kKiB;
    stats.write_bandwidth_bytes_per_sec = field_value(text, "BdiWriteBandwidth").value_or(0) * kKiB;
    return stats;
}

std::optional<BdiStats> read_bdi_stats(std::string_view bdi, std::string_view debugfs_root)
{
    // BDI names are "MAJ:MIN", "MAJ:MIN-fuseblk" or "btrfs-N": never a path.
    if (bdi.empty() || bdi == "." || bdi == ".." || bdi.find('/') != std::string_view::npos)
        return std::nullopt;
    auto text = read_kernel_text(std::string(debugfs_root) + "/bdi/" + std::string(bdi) + "/stats");
    if (!text)
        return std::nullopt;
    return parse_bdi_stats(*text);
}

std::optional<PageCacheStat> cachestat(int fd, uint64_t off, uint64_t len)
{
    KernelCachestatRange range {off, len};
    KernelCachestat cs {};
    // Straight to the kernel, not through sys(): glibc has no wrapper to mirror, and this only looks at the
    // page cache. The source's residency check falls back to mincore when it fails, so no copy step depends on
    // it and no test needs to inject its failures.
    if (::syscall(kSysCachestat, fd, &range, &cs, 0U) != 0)
        return std::nullopt;
    return PageCacheStat {cs.nr_cache, cs.nr_dirty, cs.nr_writeback, cs.nr_evicted, cs.nr_recently_evicted};
}

} // namespace sanecopy
