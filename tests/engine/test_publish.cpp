// SPDX-License-Identifier: GPL-2.0-or-later
#include "catch.h"

#include "fault_syscalls.h"
#include "job_helpers.h"
#include "publish.h"
#include "test_support.h"
#include "units.h"

#include <climits>
#include <filesystem>
#include <utility>
#include <vector>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace sanecopy;
using namespace sanecopy::test;

namespace {
SharedDirFd open_dir(const std::string &path)
{
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    return std::make_shared<const UniqueFd>(fd);
}

void write_all(int fd, const std::string &text)
{
    REQUIRE(::write(fd, text.data(), text.size()) == ssize_t(text.size()));
}

// A part file for t/|name| that holds |text|, not yet published.
Result<PartFile> part_holding(const TempDir &t, const std::string &name, const std::string &text)
{
    auto part = PartFile::create(open_dir(t.path()), t.path(), name);
    REQUIRE(part.ok());
    write_all(part->fd(), text);
    return part;
}
} // namespace

TEST_CASE("publish: part file names are hidden, and fit NAME_MAX for long names")
{
    CHECK(part_name_for("movie.mkv") == ".movie.mkv.part");
    const std::string long_name(250, 'x');
    const std::string part = part_name_for(long_name);
    CHECK(part.size() <= NAME_MAX);
    CHECK(part.front() == '.');
    CHECK(part.substr(part.size() - 5) == ".part");
    CHECK(part_name_for(long_name + "y") != part);
}

TEST_CASE("publish: alternative names keep the extension")
{
    CHECK(alternative_name("photo.jpg", 1) == "photo (1).jpg");
    CHECK(alternative_name("README", 2) == "README (2)");
    CHECK(alternative_name(".bashrc", 1) == ".bashrc (1)");
}

TEST_CASE("publish: the data lives under the part name until commit, then under the real name only")
{
    TempDir t;
    auto part = part_holding(t, "file.txt", "payload");
    CHECK(exists(t / ".file.txt.part"));
    CHECK_FALSE(exists(t / "file.txt"));
    REQUIRE(part->sync_data().ok());
    REQUIRE(part->commit(ConflictPolicy::Refuse).ok());
    CHECK(read_file(t / "file.txt") == "payload");
    CHECK_FALSE(exists(t / ".file.txt.part"));
}

TEST_CASE("publish: FilesystemFirst syncs the filesystem before the file, and a failing syncfs is the error")
{
    TempDir t;
    struct Order : FaultSyscalls {
        std::vector<std::string> log;
        int raw_syncfs(int fd) override
        {
            log.push_back("syncfs");
            return FaultSyscalls::raw_syncfs(fd);
        }
        int raw_fdatasync(int fd) override
        {
            log.push_back("fdatasync");
            return FaultSyscalls::raw_fdatasync(fd);
        }
    } fs;
    ScopedSyscalls seam(fs);
    auto part = part_holding(t, "file.txt", "payload");
    REQUIRE(part->sync_data(DataSync::FilesystemFirst).ok());
    CHECK(fs.log == std::vector<std::string> {"syncfs", "fdatasync"});
    fs.log.clear();
    REQUIRE(part->sync_data().ok());
    CHECK(fs.log == std::vector<std::string> {"fdatasync"});

    fs.syncfs_errno = EIO;
    Status s = part->sync_data(DataSync::FilesystemFirst);
    REQUIRE_FALSE(s.ok());
    CHECK(s.op() == "syncfs");
    CHECK(s.err() == EIO);
}

TEST_CASE("publish: data a share's windows made durable gets no sync of its own, the rest of the steps stay")
{
    TempDir t;
    FaultSyscalls fs;
    ScopedSyscalls seam(fs);
    for (const bool durable : {false, true}) {
        const std::string name = durable ? "synced.txt" : "plain.txt";
        auto part = part_holding(t, name, "payload");
        bool told = false;
        PublishSteps steps;
        steps.on_durable = [&] { told = true; };
        steps.data_durable = durable;
        const int fdatasyncs = fs.fdatasync_calls.load();
        const int fsyncs = fs.fsync_calls.load();
        REQUIRE(publish(part.value(), steps).ok());
        CAPTURE(durable);
        CHECK(fs.fdatasync_calls.load() - fdatasyncs == (durable ? 0 : 1));
        CHECK(fs.fsync_calls.load() - fsyncs == 1); // the folder's, after the rename
        CHECK(told);
        CHECK(read_file(t / name) == "payload");
        CHECK_FALSE(std::filesystem::exists(t / part_name_for(name)));
    }
}

TEST_CASE("publish: an uncommitted part file is removed when it goes out of scope")
{
    TempDir t;
    {
        auto part = PartFile::create(open_dir(t.path()), t.path(), "file.txt");
        REQUIRE(part.ok());
        write_all(part->fd(), "half");
        REQUIRE(exists(t / ".file.txt.part"));
    }
    CHECK(list_tree(t.path()) == ".\tdir\n");
}

TEST_CASE("publish: Refuse never replaces a name that appeared during the copy")
{
    TempDir t;
    auto part = part_holding(t, "file.txt", "new");
    write_text_file(t / "file.txt", "someone else's");
    Status s = part->commit(ConflictPolicy::Refuse);
    CHECK(s.err() == EEXIST);
    CHECK(read_file(t / "file.txt") == "someone else's");
}

TEST_CASE("publish: the new bytes land under the name the policy gives, whatever was there before")
{
    struct Case {
        const char *what;
        std::vector<std::pair<std::string, std::string>> before; // files and what they hold
        ConflictPolicy policy;
        std::string published_as;
    };
    const Case cases[] = {
        {"Overwrite replaces the old file in one rename", {{"a.txt", "old"}}, ConflictPolicy::Overwrite, "a.txt"},
        {"Rename picks the first free alternative",
         {{"a.txt", "1"}, {"a (1).txt", "2"}},
         ConflictPolicy::Rename,
         "a (2).txt"},
        {"a part file left by an interrupted run is replaced",
         {{".a.txt.part", "stale"}},
         ConflictPolicy::Refuse,
         "a.txt"},
    };
    for (const Case &c : cases) {
        INFO(c.what);
        TempDir t;
        for (const auto &[name, text] : c.before)
            write_text_file(t / name, text);
        auto part = part_holding(t, "a.txt", "new");
        std::string final_name;
        REQUIRE(part->commit(c.policy, &final_name).ok());
        CHECK(final_name == c.published_as);
        CHECK(read_file(t / c.published_as) == "new");
        for (const auto &[name, text] : c.before)
            if (name != c.published_as && name[0] != '.')
                CHECK(read_file(t / name) == text); // the alternatives skipped are untouched
        CHECK_FALSE(exists(t / ".a.txt.part"));
    }
}

TEST_CASE("publish: Overwrite never replaces a folder with a file")
{
    TempDir t;
    ::mkdir((t / "name").c_str(), 0755);
    auto part = PartFile::create(open_dir(t.path()), t.path(), "name");
    REQUIRE(part.ok());
    CHECK(part->commit(ConflictPolicy::Overwrite).err() == EISDIR);
    struct stat st {};
    REQUIRE(::stat((t / "name").c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
}

TEST_CASE("publish: a symlink sitting at the part name is not followed")
{
    TempDir t;
    write_text_file(t / "victim", "keep me");
    REQUIRE(::symlink((t / "victim").c_str(), (t / ".a.txt.part").c_str()) == 0);
    auto part = PartFile::create(open_dir(t.path()), t.path(), "a.txt");
    CHECK_FALSE(part.ok());
    CHECK(read_file(t / "victim") == "keep me");
}

TEST_CASE_METHOD(Faulted, "file to file: a filesystem that can't store a file's time still gets its bytes")
{
    // kio-fuse (Dolphin's network folders) answers futimens with ENOTTY; FUSE drivers without it, ENOSYS.
    const int err = GENERATE(ENOTTY, ENOSYS, EOPNOTSUPP);
    fs.futimens_errno = err;
    write_pattern_file(t / "small", 20000);
    write_pattern_file(t / "big", 3 * kMiB);
    JobSpec spec = spec_of({t / "small", t / "big"}, t / "dst");
    ::mkdir((t / "dst").c_str(), 0755);
    JobRun run = run_job(spec);
    INFO("errno " << err);
    CHECK(run.summary.ok());
    CHECK(same_bytes(t / "small", t / "dst/small"));
    CHECK(same_bytes(t / "big", t / "dst/big"));
    CHECK_FALSE(exists(t / ("dst/" + part_name_for("big"))));
}

TEST_CASE("file to file: an existing target is refused by default and stays untouched")
{
    TempDir t;
    write_text_file(t / "src", "new contents");
    write_text_file(t / "dst", "precious");
    JobRun run = run_job(spec_of({t / "src"}, t / "dst"));
    CHECK_FALSE(run.summary.ok());
    REQUIRE(run.first(JobEvent::Kind::Error));
    CHECK(run.first(JobEvent::Kind::Error)->status.err() == EEXIST);
    CHECK(read_file(t / "dst") == "precious");
    CHECK_FALSE(exists(t / ".dst.part"));
}

TEST_CASE("file to file: Skip leaves the existing file and reports it")
{
    TempDir t;
    write_text_file(t / "src", "new contents");
    write_text_file(t / "dst", "precious");
    JobRun run = run_job(spec_of({t / "src"}, t / "dst", ConflictPolicy::Skip));
    CHECK(run.summary.ok());
    CHECK(run.count(JobEvent::Kind::Skipped) == 1);
    CHECK(read_file(t / "dst") == "precious");
}

TEST_CASE("file to file: Overwrite replaces only after the new data is durable")
{
    TempDir t;
    write_pattern_file(t / "src", 3 * 1024 * 1024);
    write_text_file(t / "dst", "old");
    // Watch the order of events: the rename onto "dst" must come after the part file's fdatasync.
    struct Order : FaultSyscalls {
        std::vector<std::string> log;
        int raw_fdatasync(int fd) override
        {
            log.push_back("fdatasync");
            return FaultSyscalls::raw_fdatasync(fd);
        }
        int raw_renameat2(int a, const char *from, int b, const char *to, unsigned flags) override
        {
            log.push_back(std::string("rename ") + to);
            return Syscalls::raw_renameat2(a, from, b, to, flags);
        }
    } fs;
    ScopedSyscalls seam(fs);
    JobRun run = run_job(spec_of({t / "src"}, t / "dst", ConflictPolicy::Overwrite));
    REQUIRE(run.summary.ok());
    CHECK(same_bytes(t / "src", t / "dst"));
    REQUIRE(fs.log.size() >= 2);
    CHECK(fs.log[0] == "fdatasync");
    CHECK(fs.log[1] == "rename dst");
}

TEST_CASE("file to file: asking about a conflict applies the answer to that file")
{
    TempDir t;
    write_text_file(t / "src", "new");
    write_text_file(t / "dst", "old");
    std::vector<ConflictQuestion> asked;
    for (auto answer : {ConflictAnswer::Skip, ConflictAnswer::Rename, ConflictAnswer::Overwrite}) {
        JobSpec spec = spec_of({t / "src"}, t / "dst");
        spec.ask_conflict = [&](const ConflictQuestion &q) {
            asked.push_back(q);
            return answer;
        };
        JobRun run = run_job(spec);
        CHECK(run.summary.errors == 0);
    }
    REQUIRE(asked.size() == 3);
    CHECK(asked[0].target == t / "dst");
    CHECK(asked[0].source_size == 3);
    CHECK(read_file(t / "dst (1)") == "new"); // Rename
    CHECK(read_file(t / "dst") == "new");     // then Overwrite
}

TEST_CASE("file to file: Cancel as the answer to a conflict ends the job with nothing written")
{
    TempDir t;
    write_text_file(t / "src", "new");
    write_text_file(t / "dst", "old");
    JobSpec spec = spec_of({t / "src"}, t / "dst");
    spec.ask_conflict = [](const ConflictQuestion &) { return ConflictAnswer::Cancel; };
    JobRun run = run_job(spec);
    CHECK(run.summary.cancelled);
    CHECK(read_file(t / "dst") == "old");
    CHECK(list_tree(t.path()) == ".\tdir\ndst\tfile\t3\nsrc\tfile\t3\n");
}

TEST_CASE_METHOD(Faulted, "file to file: Retry after a failed file copies it again from the start")
{
    write_pattern_file(t / "src", 4 * 1024 * 1024);
    fs.data_errno = EIO;
    fs.fail_after_bytes = 1024 * 1024;
    JobSpec spec = spec_of({t / "src"}, t / "dst");
    int asked = 0;
    spec.ask_error = [&](const Status &s, const std::string &source) {
        ++asked;
        CHECK(s.err() == EIO);
        CHECK(source == t / "src");
        fs.data_errno = 0; // the user plugged the stick back in
        return ErrorAnswer::Retry;
    };
    JobRun run = run_job(spec);
    CHECK(asked == 1);
    CHECK(run.summary.ok());
    CHECK(same_bytes(t / "src", t / "dst"));
}

TEST_CASE_METHOD(Faulted, "file to file: Skip after a failed file reports it and leaves nothing")
{
    write_pattern_file(t / "src", 4 * 1024 * 1024);
    fs.data_errno = EACCES; // not a device failure, so there is nothing worth keeping for a resume
    fs.fail_after_bytes = 1024 * 1024;
    JobSpec spec = spec_of({t / "src"}, t / "dst");
    spec.ask_error = [](const Status &, const std::string &) { return ErrorAnswer::Skip; };
    JobRun run = run_job(spec);
    CHECK(run.count(JobEvent::Kind::Skipped) == 1);
    CHECK_FALSE(exists(t / "dst"));
    CHECK_FALSE(exists(t / ".dst.part"));
}
