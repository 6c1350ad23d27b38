// SPDX-License-Identifier: GPL-2.0-or-later
// IncrementalBatch: small files handed in one call at a time, published and synced in groups.
#include "incremental_batch.h"

#include "fault_syscalls.h"
#include "test_support.h"

#include "catch.h"

#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

using namespace sanecopy;
using namespace sanecopy::test;
namespace fs = std::filesystem;

namespace {

constexpr BatchLimits kLimits {4 * 1024 * 1024, 16};

// |count| small source files in |t|/src, and an empty |t|/dst.
void make_sources(const TempDir &t, int count)
{
    fs::create_directories(t / "src");
    fs::create_directories(t / "dst");
    for (int i = 0; i < count; ++i)
        write_pattern_file(t / ("src/f" + std::to_string(i)), 1000 + uint64_t(i) * 37, unsigned(i + 1));
}

std::string src(const TempDir &t, int i) { return t / ("src/f" + std::to_string(i)); }
std::string dst(const TempDir &t, int i) { return t / ("dst/f" + std::to_string(i)); }

bool any_part_file(const std::string &dir)
{
    for (const auto &e : fs::directory_iterator(dir))
        if (e.path().filename().string().ends_with(".part"))
            return true;
    return false;
}

} // namespace

TEST_CASE("incremental batch: nothing is under its real name before flush, everything is after, in few syncs")
{
    TempDir t;
    make_sources(t, 40);
    ::chmod(src(t, 3).c_str(), 0640);
    FaultSyscalls seam;
    ScopedSyscalls installed(seam);
    IncrementalBatch batch(kLimits, nullptr);
    int held = 0;
    for (int i = 0; i < 40; ++i) {
        Result<bool> r = batch.add(src(t, i), dst(t, i), ConflictPolicy::Refuse);
        REQUIRE(r.ok());
        held += r.value() ? 1 : 0;
    }
    REQUIRE(held == 40);
    CHECK(batch.held() == 40);
    // Groups that filled were published on the way; the last one waits for flush, under its part name.
    CHECK_FALSE(fs::exists(dst(t, 39)));
    REQUIRE(batch.flush().ok());
    CHECK(batch.empty());
    for (int i = 0; i < 40; ++i) {
        INFO(i);
        REQUIRE(fs::exists(dst(t, i)));
        CHECK(read_file(dst(t, i)) == read_file(src(t, i)));
    }
    CHECK_FALSE(any_part_file(t / "dst"));
    struct stat a {}, b {};
    REQUIRE(::stat(src(t, 3).c_str(), &a) == 0);
    REQUIRE(::stat(dst(t, 3).c_str(), &b) == 0);
    CHECK((b.st_mode & 0777) == 0640);
    CHECK(b.st_mtim.tv_sec == a.st_mtim.tv_sec);
    // One-file jobs paid two syncs a file; here a group of up to 16 pays about two.
    INFO("syncfs " << seam.syncfs_calls.load() << ", fdatasync " << seam.fdatasync_calls.load());
    CHECK(seam.syncfs_calls.load() + seam.fdatasync_calls.load() <= 40 / 2);
    CHECK(seam.syncfs_calls.load() + seam.fdatasync_calls.load() >= 1);
}

TEST_CASE("incremental batch: discard leaves no part file, and under a real name only whole files")
{
    TempDir t;
    make_sources(t, 5);
    {
        IncrementalBatch batch(kLimits, nullptr);
        for (int i = 0; i < 3; ++i)
            REQUIRE(batch.add(src(t, i), dst(t, i), ConflictPolicy::Refuse).value());
        batch.discard();
        CHECK(batch.empty());
    }
    {
        IncrementalBatch batch(kLimits, nullptr);
        REQUIRE(batch.add(src(t, 4), dst(t, 4), ConflictPolicy::Refuse).value());
    } // going away discards too
    // A group that was already on the device may have been published; the last file of each batch was not.
    for (int i = 0; i < 5; ++i) {
        INFO(i);
        CHECK((!fs::exists(dst(t, i)) || read_file(dst(t, i)) == read_file(src(t, i))));
    }
    CHECK_FALSE(fs::exists(dst(t, 2)));
    CHECK_FALSE(fs::exists(dst(t, 4)));
    CHECK_FALSE(any_part_file(t / "dst"));
}

TEST_CASE("incremental batch: what it does not hold is left to the usual way, untouched")
{
    TempDir t;
    make_sources(t, 2);
    IncrementalBatch batch(kLimits, nullptr);
    REQUIRE(batch.add(src(t, 0), dst(t, 0), ConflictPolicy::Refuse).value());
    // The same name again while the first is held: the two would share a part file.
    Result<bool> again = batch.add(src(t, 1), dst(t, 0), ConflictPolicy::Refuse);
    REQUIRE(again.ok());
    CHECK_FALSE(again.value());
    // A file over the small-file limit.
    write_pattern_file(t / "src/big", 2 * 1024 * 1024, 9);
    Result<bool> big = batch.add(t / "src/big", t / "dst/big", ConflictPolicy::Refuse);
    REQUIRE(big.ok());
    CHECK_FALSE(big.value());
    // A FIFO: refused at once, never waited on.
    REQUIRE(::mkfifo((t / "src/fifo").c_str(), 0600) == 0);
    Result<bool> fifo = batch.add(t / "src/fifo", t / "dst/fifo", ConflictPolicy::Refuse);
    REQUIRE(fifo.ok());
    CHECK_FALSE(fifo.value());
    // A folder that is not there: the usual way says so.
    Result<bool> nowhere = batch.add(src(t, 1), t / "missing/f1", ConflictPolicy::Refuse);
    REQUIRE(nowhere.ok());
    CHECK_FALSE(nowhere.value());
    CHECK(batch.held() == 1);
    REQUIRE(batch.flush().ok());
    CHECK(read_file(dst(t, 0)) == read_file(src(t, 0)));
    CHECK_FALSE(fs::exists(t / "dst/big"));
    CHECK_FALSE(fs::exists(t / "dst/fifo"));
}

TEST_CASE("incremental batch: a source that can't be read is an error, and nothing of it is held")
{
    TempDir t;
    make_sources(t, 1);
    IncrementalBatch batch(kLimits, nullptr);
    Result<bool> r = batch.add(t / "src/none", t / "dst/none", ConflictPolicy::Refuse);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().err() == ENOENT);
    CHECK(r.status().on_source());
    CHECK(batch.empty());
    CHECK(fs::is_empty(t / "dst"));
}

TEST_CASE("incremental batch: a sync that fails is flush's error, and the files are not under their names")
{
    TempDir t;
    make_sources(t, 3);
    FaultSyscalls seam;
    seam.syncfs_errno = EIO;
    seam.fdatasync_errno = EIO;
    ScopedSyscalls installed(seam);
    IncrementalBatch batch(kLimits, nullptr);
    for (int i = 0; i < 3; ++i)
        REQUIRE(batch.add(src(t, i), dst(t, i), ConflictPolicy::Refuse).value());
    const Status s = batch.flush();
    REQUIRE_FALSE(s.ok());
    CHECK(s.err() == EIO);
    for (int i = 0; i < 3; ++i)
        CHECK_FALSE(fs::exists(dst(t, i)));
    CHECK_FALSE(any_part_file(t / "dst"));
    // The next run starts clean.
    seam.syncfs_errno = 0;
    seam.fdatasync_errno = 0;
    REQUIRE(batch.add(src(t, 0), dst(t, 0), ConflictPolicy::Refuse).value());
    CHECK(batch.flush().ok());
    CHECK(fs::exists(dst(t, 0)));
}
