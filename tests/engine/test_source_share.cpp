// SPDX-License-Identifier: GPL-2.0-or-later
//
// One source read for several jobs at once (source_share.h), through the real page cache: what a job keeps for
// the others, what the last one drops, the budget, a job that leaves, and pages that were someone else's.
#include "catch.h"

#include "fd.h"
#include "page_cache_policy.h"
#include "source_share.h"
#include "test_support.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace sanecopy;
using namespace sanecopy::test;

namespace {
constexpr uint64_t MiB = 1024 * 1024;
constexpr uint64_t kSize = 8 * MiB;

// One job's pass over the source: open, read it all in 1 MiB chunks, dropping behind as a copy does.
void pass(SourceShare &share, unsigned member, const std::string &path, bool done = true)
{
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    REQUIRE(fd.valid());
    struct stat st {};
    REQUIRE(::fstat(fd.get(), &st) == 0);
    SourceCache cache(fd.get(), kSize, share.open(member, path, fd.get(), st, true));
    std::vector<char> buf(MiB);
    for (uint64_t off = 0; off < kSize; off += MiB) {
        REQUIRE(::pread(fd.get(), buf.data(), buf.size(), off_t(off)) == ssize_t(MiB));
        cache.release_until(off + MiB);
    }
    cache.release_all();
    if (done)
        share.done(member, path);
}

std::string cold_file(const TempDir &t)
{
    const std::string path = t / "source.bin";
    write_pattern_file(path, kSize);
    evict(path);
    REQUIRE(residency(path) < 0.05);
    return path;
}
} // namespace

TEST_CASE("one source onto two devices: the first job keeps what it read for the second, which drops it")
{
    TempDir t;
    const std::string path = cold_file(t);
    auto share = std::make_shared<SourceShare>(2, 64 * MiB);
    pass(*share, 0, path);
    CHECK(residency(path) > 0.9); // kept: the second job reads it from memory, not from the disk
    CHECK(share->kept_bytes() >= kSize);
    pass(*share, 1, path);
    CHECK(residency(path) < 0.05); // the last one dropped it, as a job alone would
    CHECK(share->kept_bytes() == 0);
}

TEST_CASE("one source onto two devices: past the budget a job drops behind itself, as alone")
{
    TempDir t;
    const std::string path = cold_file(t);
    auto share = std::make_shared<SourceShare>(2, 2 * MiB);
    pass(*share, 0, path);
    CHECK(share->kept_bytes() <= 2 * MiB);
    CHECK(residency(path) < 0.4);
    pass(*share, 1, path);
    CHECK(residency(path) < 0.05);
    CHECK(share->kept_bytes() == 0);
}

TEST_CASE("one source onto two devices: when the slower job ends early, what was kept for it is dropped")
{
    TempDir t;
    const std::string path = cold_file(t);
    auto share = std::make_shared<SourceShare>(2, 64 * MiB);
    pass(*share, 0, path);
    REQUIRE(residency(path) > 0.9);
    share->leave(1); // its stick was pulled, or it was cancelled, before it reached the file
    CHECK(residency(path) < 0.05);
    CHECK(share->kept_bytes() == 0);
}

// regression: a job that skipped a file before anyone opened it was forgotten, and the others kept its pages
TEST_CASE("one source onto two devices: a job done with a file before anyone opened it is not waited for")
{
    TempDir t;
    const std::string path = cold_file(t);
    auto share = std::make_shared<SourceShare>(2, 64 * MiB);
    share->done(1, path); // skipped on its stick (there already, a name it refuses)
    pass(*share, 0, path);
    CHECK(residency(path) < 0.05);
    CHECK(share->kept_bytes() == 0);
}

// regression: each job but the last counted the same kept pages again, using the budget up N-1 times over
TEST_CASE("one source onto three devices: pages kept for the others count once in the budget")
{
    TempDir t;
    const std::string path = cold_file(t);
    auto share = std::make_shared<SourceShare>(3, kSize + MiB);
    pass(*share, 0, path);
    CHECK(share->kept_bytes() == kSize);
    pass(*share, 1, path);
    CHECK(share->kept_bytes() == kSize); // the same pages, still for the third
    CHECK(residency(path) > 0.9);
    pass(*share, 2, path);
    CHECK(residency(path) < 0.05);
    CHECK(share->kept_bytes() == 0);
}

TEST_CASE("one source onto two devices: pages cached before the copy are someone else's and stay")
{
    TempDir t;
    const std::string path = t / "source.bin";
    write_pattern_file(path, kSize);
    REQUIRE(read_file(path).size() == kSize); // the user's own read: all of it cached
    REQUIRE(residency(path) > 0.9);
    auto share = std::make_shared<SourceShare>(2, 64 * MiB);
    pass(*share, 0, path);
    pass(*share, 1, path);
    CHECK(residency(path) > 0.9);
}
