// SPDX-License-Identifier: GPL-2.0-or-later
#include "catch.h"

#include "fd.h"
#include "sysmon.h"
#include "test_paths.h"
#include "test_support.h"

#include <cstdio>
#include <fcntl.h>
#include <string>
#include <sys/utsname.h>
#include <unistd.h>

using namespace sanecopy;

namespace {

const std::string kFixtures = SANECOPY_FIXTURES;

std::string kernel_release()
{
    struct utsname u {};
    ::uname(&u);
    return u.release;
}

// cachestat(2) arrived in Linux 6.5. On an older kernel its absence is expected; on a newer one it is a bug
// (or a seccomp filter worth knowing about).
bool kernel_has_cachestat()
{
    int major = 0, minor = 0;
    if (std::sscanf(kernel_release().c_str(), "%d.%d", &major, &minor) != 2)
        return false;
    return major > 6 || (major == 6 && minor >= 5);
}

// The cachestat answer, or nullopt after a WARN when the kernel predates it. FAILs when it should be there.
std::optional<PageCacheStat> cachestat_or_warn(int fd, uint64_t off = 0, uint64_t len = 0)
{
    auto stat = cachestat(fd, off, len);
    if (!stat) {
        if (kernel_has_cachestat())
            FAIL("cachestat failed on Linux " << kernel_release() << ", which has it");
        WARN("cachestat unavailable: kernel < 6.5 (" << kernel_release() << ")");
    }
    return stat;
}

uint64_t page_size() { return static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)); }

} // namespace

// --- /proc/meminfo -----------------------------------------------------------------------------------------

TEST_CASE("meminfo: Dirty and Writeback are read in bytes", "[sysmon]")
{
    auto info = parse_meminfo(test::read_file(kFixtures + "/meminfo.txt"));
    REQUIRE(info);
    CHECK(info->dirty_bytes == 32888ull * 1024);
    CHECK(info->writeback_bytes == 81920ull * 1024);
}

TEST_CASE("meminfo: WritebackTmp is not mistaken for Writeback", "[sysmon]")
{
    auto info = parse_meminfo("WritebackTmp:        7 kB\nDirty:             12 kB\nWriteback:         3 kB\n");
    REQUIRE(info);
    CHECK(info->dirty_bytes == 12 * 1024);
    CHECK(info->writeback_bytes == 3 * 1024);
}

TEST_CASE("meminfo: text without Dirty or Writeback gives nothing", "[sysmon]")
{
    CHECK_FALSE(parse_meminfo(""));
    CHECK_FALSE(parse_meminfo("MemTotal:       24684084 kB\nWriteback:         0 kB\n"));
    CHECK_FALSE(parse_meminfo("Dirty:            164 kB\nWritebackTmp:      0 kB\n"));
}

TEST_CASE("meminfo: this machine's /proc/meminfo is read", "[sysmon]")
{
    auto info = read_meminfo();
    REQUIRE(info);
    // Bounded by what the machine has: a parse in the wrong unit would overshoot.
    unsigned long long total_kib = 0;
    const std::string text = test::read_file("/proc/meminfo");
    REQUIRE(std::sscanf(text.c_str(), "MemTotal: %llu kB", &total_kib) == 1);
    CHECK(info->dirty_bytes + info->writeback_bytes <= total_kib * 1024);
}

// --- debugfs bdi stats -------------------------------------------------------------------------------------

TEST_CASE("bdi stats: a stick's stats are read in bytes", "[sysmon]")
{
    auto stats = parse_bdi_stats(test::read_file(kFixtures + "/bdi_stats.txt"));
    REQUIRE(stats);
    CHECK(stats->dirty_bytes == 32768ull * 1024);
    CHECK(stats->writeback_bytes == 0);
    CHECK(stats->written_bytes == 114752ull * 1024);
    CHECK(stats->write_bandwidth_bytes_per_sec == 95272ull * 1024);
}

TEST_CASE("bdi stats: the dirty and writeback lines are required, the others default to 0", "[sysmon]")
{
    CHECK_FALSE(parse_bdi_stats(""));
    CHECK_FALSE(parse_bdi_stats("BdiWriteback:       4 kB\nBdiDirtyThresh:     8 kB\n"));
    auto stats = parse_bdi_stats("BdiWriteback:       4 kB\nBdiReclaimable:     8 kB\n");
    REQUIRE(stats);
    CHECK(stats->writeback_bytes == 4096);
    CHECK(stats->dirty_bytes == 8192);
    CHECK(stats->written_bytes == 0);
    CHECK(stats->write_bandwidth_bytes_per_sec == 0);
}

TEST_CASE("bdi stats: read_bdi_stats reads <debugfs>/bdi/<MAJ:MIN>/stats", "[sysmon]")
{
    auto stats = read_bdi_stats("7:1", kFixtures + "/debugfs");
    REQUIRE(stats);
    CHECK(stats->writeback_bytes == 49184ull * 1024);
    CHECK(stats->dirty_bytes == 0);
    CHECK(stats->written_bytes == 65568ull * 1024);
    CHECK_FALSE(read_bdi_stats("9:9", kFixtures + "/debugfs"));
}

TEST_CASE("bdi stats: a name that is a path is refused", "[sysmon]")
{
    // "7:1/../7:1" does reach the fixture file, so only the name check stops it.
    for (const char *bdi : {"7:1/../7:1", "../bdi/7:1", "/7:1", "..", ".", ""}) {
        CAPTURE(bdi);
        CHECK_FALSE(read_bdi_stats(bdi, kFixtures + "/debugfs"));
    }
    CHECK(read_bdi_stats("7:1", kFixtures + "/debugfs"));
}

// --- cachestat(2) ------------------------------------------------------------------------------------------

TEST_CASE("cachestat: a fresh file is cached, after fdatasync and DONTNEED it is clean and gone", "[sysmon]")
{
    test::TempDir dir;
    const uint64_t size = 4 << 20;
    test::write_pattern_file(dir / "fresh.bin", size);
    UniqueFd fd(::open((dir / "fresh.bin").c_str(), O_RDWR | O_CLOEXEC));
    REQUIRE(fd);

    auto before = cachestat_or_warn(fd.get());
    if (!before)
        return;
    CAPTURE(before->cached, before->dirty, before->writeback);
    CHECK(before->cached > 0);
    CHECK(before->cached <= size / page_size());

    REQUIRE(::fdatasync(fd.get()) == 0);
    auto synced = cachestat(fd.get());
    REQUIRE(synced);
    CHECK(synced->dirty == 0);
    CHECK(synced->writeback == 0);

    REQUIRE(::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED) == 0);
    auto dropped = cachestat(fd.get());
    REQUIRE(dropped);
    CAPTURE(dropped->cached);
    CHECK(dropped->cached <= 4);
}

TEST_CASE("cachestat: a range counts only its own pages", "[sysmon]")
{
    test::TempDir dir;
    test::write_pattern_file(dir / "ranged.bin", 1 << 20);
    UniqueFd fd(::open((dir / "ranged.bin").c_str(), O_RDONLY | O_CLOEXEC));
    REQUIRE(fd);

    // Read it back so every page is cached, whatever a flusher or drop_caches did since the write.
    std::string buf(1 << 20, '\0');
    REQUIRE(::pread(fd.get(), buf.data(), buf.size(), 0) == static_cast<ssize_t>(buf.size()));

    auto whole = cachestat_or_warn(fd.get());
    if (!whole)
        return;
    auto first = cachestat(fd.get(), 0, 16 * page_size());
    REQUIRE(first);
    CAPTURE(whole->cached, first->cached);
    CHECK(whole->cached == (1 << 20) / page_size());
    CHECK(first->cached == 16);
}

TEST_CASE("cachestat: a bad descriptor gives nothing", "[sysmon]")
{
    CHECK_FALSE(cachestat(-1));
    test::TempDir dir;
    UniqueFd fd(::open(dir.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    CHECK_FALSE(cachestat(fd.get()));
}
