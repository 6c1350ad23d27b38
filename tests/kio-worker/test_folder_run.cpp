// SPDX-License-Identifier: GPL-2.0-or-later
// FolderRun: the small files of a folder KIO's CopyJob made, held and made durable together.
#include "FolderRun.h"

#include "engine/fault_syscalls.h"
#include "engine/test_support.h"

#include "catch.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

using namespace SaneCopyKio;
using namespace sanecopy;
using namespace sanecopy::test;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// A private lock folder: the device locks of this test are nobody else's.
struct PrivateLocks {
    TempDir dir;
    std::string old;
    PrivateLocks()
    {
        if (const char *v = std::getenv("XDG_RUNTIME_DIR"))
            old = v;
        ::setenv("XDG_RUNTIME_DIR", dir.path().c_str(), 1);
    }
    ~PrivateLocks()
    {
        if (old.empty())
            ::unsetenv("XDG_RUNTIME_DIR");
        else
            ::setenv("XDG_RUNTIME_DIR", old.c_str(), 1);
    }
};

void makeSources(const TempDir &t, int count)
{
    fs::create_directories(t / "src");
    for (int i = 0; i < count; ++i)
        write_pattern_file(t / ("src/f" + std::to_string(i)), 2000 + uint64_t(i), unsigned(i + 1));
}

std::string src(const TempDir &t, int i) { return t / ("src/f" + std::to_string(i)); }

// |count| sources, and a run that made the folder "made".
struct MadeFolder {
    PrivateLocks locks;
    TempDir t;
    FolderRun run {nullptr};
    explicit MadeFolder(int count)
    {
        makeSources(t, count);
        fs::create_directories(t / "made");
        REQUIRE(run.folderMade(t / "made").ok());
    }
    Result<bool> hold(int i) { return run.hold(src(t, i), t / ("made/f" + std::to_string(i)), ConflictPolicy::Refuse); }
};

} // namespace

TEST_CASE("folder run: only files of a folder the run made are held, and settle puts them under their names")
{
    PrivateLocks locks;
    TempDir t;
    makeSources(t, 4);
    fs::create_directories(t / "old");
    fs::create_directories(t / "made");
    FolderRun run(nullptr);
    // A folder that was there before: the usual way.
    Result<bool> r = run.hold(src(t, 0), t / "old/f0", ConflictPolicy::Refuse);
    REQUIRE(r.ok());
    CHECK_FALSE(r.value());
    REQUIRE(run.folderMade(t / "made").ok());
    for (int i = 1; i < 4; ++i)
        REQUIRE(run.hold(src(t, i), t / ("made/f" + std::to_string(i)), ConflictPolicy::Refuse).value());
    CHECK(run.held() == 3);
    CHECK_FALSE(fs::exists(t / "made/f3"));
    // Settled in the middle of a run (a big file comes, or a stat): all on the device, and the run goes on.
    REQUIRE(run.settle().ok());
    for (int i = 1; i < 4; ++i)
        CHECK(read_file(t / ("made/f" + std::to_string(i))) == read_file(src(t, i)));
    write_pattern_file(t / "src/g", 3000, 7);
    REQUIRE(run.hold(t / "src/g", t / "made/g", ConflictPolicy::Refuse).value());
    // Ended (the folders' times are set): the folder no longer takes files, so a later copy into it is durable
    // on its own.
    REQUIRE(run.end().ok());
    CHECK(read_file(t / "made/g") == read_file(t / "src/g"));
    r = run.hold(src(t, 0), t / "made/f0", ConflictPolicy::Refuse);
    REQUIRE(r.ok());
    CHECK_FALSE(r.value());
}

TEST_CASE("folder run: folders made one after another all take files, and one made while files are held starts anew")
{
    PrivateLocks locks;
    TempDir t;
    makeSources(t, 4);
    for (const char *d : {"a", "a/b", "a/c", "new"})
        fs::create_directories(t / d);
    FolderRun run(nullptr);
    // As CopyJob does: every folder first, then the files.
    for (const char *d : {"a", "a/b", "a/c"})
        REQUIRE(run.folderMade(t / d).ok());
    REQUIRE(run.hold(src(t, 0), t / "a/f0", ConflictPolicy::Refuse).value());
    REQUIRE(run.hold(src(t, 1), t / "a/b/f1", ConflictPolicy::Refuse).value());
    REQUIRE(run.hold(src(t, 2), t / "a/c/f2", ConflictPolicy::Refuse).value());
    CHECK(run.held() == 3);
    // Another job's folder: what is held is settled first, and the earlier folders take no more files.
    REQUIRE(run.folderMade(t / "new").ok());
    CHECK(run.held() == 0);
    CHECK(read_file(t / "a/c/f2") == read_file(src(t, 2)));
    Result<bool> r = run.hold(src(t, 3), t / "a/b/f3", ConflictPolicy::Refuse);
    REQUIRE(r.ok());
    CHECK_FALSE(r.value());
    REQUIRE(run.hold(src(t, 3), t / "new/f3", ConflictPolicy::Refuse).value());
    REQUIRE(run.end().ok());
    CHECK(read_file(t / "new/f3") == read_file(src(t, 3)));
}

TEST_CASE("folder run: a name that is taken is left to the usual way, which asks about it")
{
    MadeFolder m(1);
    write_text_file(m.t / "made/f0", "already here");
    Result<bool> r = m.hold(0);
    REQUIRE(r.ok());
    CHECK_FALSE(r.value());
    CHECK(read_file(m.t / "made/f0") == "already here");
}

TEST_CASE("folder run: held files are settled when no call comes, and another process's settle waits for it")
{
    MadeFolder m(2);
    REQUIRE(m.hold(0).value());
    // A second run stands for another worker process (the locks are per open file): the device's writer is busy,
    // so it holds nothing, and its end-of-job wait returns only once the first run's files are on the device.
    FolderRun other(nullptr);
    REQUIRE(other.folderMade(m.t / "made").ok());
    Result<bool> r = other.hold(src(m.t, 1), m.t / "made/f1", ConflictPolicy::Refuse);
    REQUIRE(r.ok());
    CHECK_FALSE(r.value());
    const auto t0 = std::chrono::steady_clock::now();
    FolderRun::waitForOthers(m.t / "made");
    const auto waited = std::chrono::steady_clock::now() - t0;
    CHECK(fs::exists(m.t / "made/f0"));
    CHECK(m.run.held() == 0);
    CHECK(waited >= FolderRun::kIdle / 2);
    CHECK(waited < 10s);
}

TEST_CASE("folder run: a hold slower than the idle time does not end the run")
{
    // A source slow to open (a disc spinning up, a busy machine): the hold takes longer than kIdle. The idle clock
    // runs from when the call returns, so the next file of the same job is held too. Were it to run from when the
    // call came, the idle settle would end the run as the slow hold returns, and every later file would go the
    // usual way, each paying its own syncs (on a vfat stick with flush, 2000 files took 169 s instead of 35).
    MadeFolder m(2);
    FaultSyscalls fs;
    fs.on_open = [&](const char *path, int) {
        if (std::string(path) == src(m.t, 0))
            std::this_thread::sleep_for(2 * FolderRun::kIdle);
    };
    ScopedSyscalls seam(fs);
    REQUIRE(m.hold(0).value());
    std::this_thread::sleep_for(FolderRun::kIdle / 5); // KIO's next call: well within the idle time
    Result<bool> r = m.hold(1);
    REQUIRE(r.ok());
    CHECK(r.value());
    CHECK(m.run.held() == 2);
    REQUIRE(m.run.end().ok());
    CHECK(read_file(m.t / "made/f1") == read_file(src(m.t, 1)));
}

TEST_CASE("folder run: holding nothing, the run waits out a pause before a file and a long copy between files")
{
    // CopyJob's pause between its last mkdir() and its first copy() (a busy machine), or a big file copied the usual
    // way between small ones, ended the run after kIdle, and every later small file of the job went the usual way.
    MadeFolder m(2);
    std::this_thread::sleep_for(3 * FolderRun::kIdle);
    Result<bool> r = m.hold(0);
    REQUIRE(r.ok());
    CHECK(r.value());
    REQUIRE(m.run.settle().ok()); // a big file's turn: what is held goes onto the device, the run goes on
    {
        const FolderRun::Busy busy(m.run); // and the big file's copy takes longer than even kIdleEmpty
        std::this_thread::sleep_for(FolderRun::kIdleEmpty + FolderRun::kIdle);
    }
    r = m.hold(1);
    REQUIRE(r.ok());
    CHECK(r.value());
    REQUIRE(m.run.end().ok());
    CHECK(read_file(m.t / "made/f0") == read_file(src(m.t, 0)));
    CHECK(read_file(m.t / "made/f1") == read_file(src(m.t, 1)));
}

TEST_CASE("folder run: holding nothing and with no call for kIdleEmpty, the run ends")
{
    // So a later copy into its folders, a job of its own that sets no folder's time, is not held and reported
    // done before its file is on the device.
    MadeFolder m(1);
    std::this_thread::sleep_for(FolderRun::kIdleEmpty + 2 * FolderRun::kIdle);
    Result<bool> r = m.hold(0);
    REQUIRE(r.ok());
    CHECK_FALSE(r.value());
}

TEST_CASE("folder run: shutdown discards what is held")
{
    MadeFolder m(2);
    REQUIRE(m.hold(0).value());
    REQUIRE(m.hold(1).value());
    m.run.shutdown();
    CHECK(fs::is_empty(m.t / "made"));
}
