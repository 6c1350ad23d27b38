// SPDX-License-Identifier: GPL-2.0-or-later
//
// Folder to folder: trees with links, special files, empty files and many small files.
#include "catch.h"

#include "fault_syscalls.h"
#include "job_helpers.h"
#include "job_queue.h"
#include "test_support.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <dirent.h>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

using namespace sanecopy;
using namespace sanecopy::test;

namespace {
void mkdir_p(const std::string &path) { REQUIRE(::mkdir(path.c_str(), 0755) == 0); }

// t/tree holding one file, to be copied into t/out, where a folder of its name already holds one.
void tree_onto_existing(const TempDir &t, std::pair<const char *, const char *> file,
                        std::pair<const char *, const char *> existing)
{
    mkdir_p(t / "tree");
    write_text_file(t / ("tree/" + std::string(file.first)), file.second);
    mkdir_p(t / "out");
    mkdir_p(t / "out/tree");
    write_text_file(t / ("out/tree/" + std::string(existing.first)), existing.second);
}

std::string link_text(const std::string &path)
{
    char buf[4096];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
    REQUIRE(n >= 0);
    return std::string(buf, size_t(n));
}

struct stat lstat_of(const std::string &path)
{
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return st;
}

// Entries in |dir| but "." and "..": /proc/self/fd's descriptors, /proc/self/task's threads.
std::size_t entries_in(const char *dir)
{
    std::size_t n = 0;
    DIR *d = ::opendir(dir);
    REQUIRE(d != nullptr);
    while (const dirent *e = ::readdir(d))
        n += e->d_name[0] != '.';
    ::closedir(d);
    return n;
}

// The path a descriptor was opened at, as /proc/self/fd says it; "" if it can't be read.
std::string path_of_fd(int fd)
{
    char buf[4096];
    const ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), buf, sizeof buf - 1);
    return std::string(buf, n > 0 ? size_t(n) : 0);
}

// Whether |path|, trailing slashes aside, names a folder "out" (the destination of the seams below).
bool names_out(const std::string &path)
{
    const std::string p = strip_trailing_slashes(path);
    return p.size() >= 4 && p.compare(p.size() - 4, 4, "/out") == 0;
}

void set_mtime(const std::string &path, time_t when)
{
    struct timespec times[2] = {{when, 0}, {when, 123456789}};
    REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
}
} // namespace

TEST_CASE("folder to folder: nested folders, files and empty files arrive byte for byte")
{
    TempDir t;
    mkdir_p(t / "tree");
    mkdir_p(t / "tree/a");
    mkdir_p(t / "tree/a/b");
    mkdir_p(t / "tree/empty-dir");
    write_pattern_file(t / "tree/big.bin", 5 * 1024 * 1024 + 3, 1);
    write_pattern_file(t / "tree/a/small.bin", 5000, 2);
    write_pattern_file(t / "tree/a/b/deep.bin", 70000, 3);
    write_text_file(t / "tree/a/empty", "");
    mkdir_p(t / "out");
    JobRun run = run_job(spec_of({t / "tree"}, t / "out"));
    REQUIRE(run.summary.ok());
    CHECK(list_tree(t / "tree") == list_tree(t / "out/tree"));
    CHECK(same_bytes(t / "tree/big.bin", t / "out/tree/big.bin"));
    CHECK(same_bytes(t / "tree/a/small.bin", t / "out/tree/a/small.bin"));
    CHECK(same_bytes(t / "tree/a/b/deep.bin", t / "out/tree/a/b/deep.bin"));
    CHECK(file_size(t / "out/tree/a/empty") == 0);
    CHECK(run.counters->files_done == 4);
    CHECK(run.counters->durable_bytes == run.counters->total_bytes);
}

TEST_CASE("folder to folder: symlinks are copied as links, relative, absolute and dangling alike")
{
    TempDir t;
    mkdir_p(t / "tree");
    write_text_file(t / "tree/target.txt", "x");
    REQUIRE(::symlink("target.txt", (t / "tree/rel").c_str()) == 0);
    REQUIRE(::symlink("/etc/hostname", (t / "tree/abs").c_str()) == 0);
    REQUIRE(::symlink("does/not/exist", (t / "tree/dangling").c_str()) == 0);
    REQUIRE(::symlink(".", (t / "tree/loop").c_str()) == 0); // following it would never end
    mkdir_p(t / "out");
    JobRun run = run_job(spec_of({t / "tree"}, t / "out"));
    REQUIRE(run.summary.ok());
    CHECK(S_ISLNK(lstat_of(t / "out/tree/rel").st_mode));
    CHECK(link_text(t / "out/tree/rel") == "target.txt");
    CHECK(link_text(t / "out/tree/abs") == "/etc/hostname");
    CHECK(link_text(t / "out/tree/dangling") == "does/not/exist");
    CHECK(link_text(t / "out/tree/loop") == ".");
}

TEST_CASE("folder to folder: permission bits and modification times are kept, for files and folders")
{
    TempDir t;
    mkdir_p(t / "tree");
    mkdir_p(t / "tree/private");
    write_text_file(t / "tree/script.sh", "#!/bin/sh\n");
    write_pattern_file(t / "tree/private/big", 2 * 1024 * 1024);
    REQUIRE(::chmod((t / "tree/script.sh").c_str(), 0751) == 0);
    REQUIRE(::chmod((t / "tree/private/big").c_str(), 0600) == 0);
    set_mtime(t / "tree/script.sh", 1000000000);
    set_mtime(t / "tree/private/big", 1100000000);
    REQUIRE(::chmod((t / "tree/private").c_str(), 0700) == 0);
    set_mtime(t / "tree/private", 1200000000);
    mkdir_p(t / "out");
    JobRun run = run_job(spec_of({t / "tree"}, t / "out"));
    REQUIRE(run.summary.ok());
    CHECK((lstat_of(t / "out/tree/script.sh").st_mode & 07777) == 0751);
    CHECK((lstat_of(t / "out/tree/private/big").st_mode & 07777) == 0600);
    CHECK((lstat_of(t / "out/tree/private").st_mode & 07777) == 0700);
    CHECK(lstat_of(t / "out/tree/script.sh").st_mtim.tv_sec == 1000000000);
    CHECK(lstat_of(t / "out/tree/script.sh").st_mtim.tv_nsec == 123456789);
    CHECK(lstat_of(t / "out/tree/private/big").st_mtim.tv_sec == 1100000000);
    CHECK(lstat_of(t / "out/tree/private").st_mtim.tv_sec == 1200000000);
}

TEST_CASE_METHOD(Faulted, "folder to folder: FIFOs and sockets are skipped with a message and never opened")
{
    mkdir_p(t / "tree");
    write_text_file(t / "tree/file", "data");
    REQUIRE(::mkfifo((t / "tree/pipe").c_str(), 0644) == 0);
    int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr {};
    addr.sun_family = AF_UNIX;
    const std::string sock_path = t / "tree/sock";
    REQUIRE(sock_path.size() < sizeof addr.sun_path);
    std::strcpy(addr.sun_path, sock_path.c_str());
    REQUIRE(::bind(sock, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0);
    mkdir_p(t / "out");

    std::vector<std::string> opened;
    std::mutex opened_mutex; // the plan's probe opens from a thread of its own
    fs.on_open = [&](const char *path, int) {
        std::lock_guard<std::mutex> lock(opened_mutex);
        opened.emplace_back(path);
    };
    JobRun run = run_job(spec_of({t / "tree"}, t / "out"));
    ::close(sock);
    CHECK(run.summary.ok());
    CHECK(run.count(JobEvent::Kind::Skipped) == 2);
    // Nothing failed, but two requested entries are not on the device: not complete.
    CHECK(run.summary.files_refused == 2);
    CHECK_FALSE(run.summary.complete());
    CHECK(run.first(JobEvent::Kind::Skipped)->message.find("FIFO") != std::string::npos);
    CHECK(std::find(opened.begin(), opened.end(), "pipe") == opened.end());
    CHECK(std::find(opened.begin(), opened.end(), "sock") == opened.end());
    CHECK(read_file(t / "out/tree/file") == "data");
    CHECK_FALSE(exists(t / "out/tree/pipe"));
}

TEST_CASE("file to folder: a FIFO given as a source does not hang and copies nothing")
{
    TempDir t;
    REQUIRE(::mkfifo((t / "pipe").c_str(), 0644) == 0);
    mkdir_p(t / "out");
    JobRun run = run_job(spec_of({t / "pipe"}, t / "out")); // would block forever if it opened the FIFO
    CHECK_FALSE(run.summary.ok()); // asked for by name, so not copying it is an error, not a quiet skip
    REQUIRE(run.first(JobEvent::Kind::Error));
    CHECK(run.first(JobEvent::Kind::Error)->message.find("FIFO") != std::string::npos);
    CHECK(list_tree(t / "out") == ".\tdir\n");
}

TEST_CASE_METHOD(Faulted, "folder to folder: many small files share one sync per batch, not one each")
{
    mkdir_p(t / "tree");
    for (int d = 0; d < 4; ++d) {
        mkdir_p(t / ("tree/d" + std::to_string(d)));
        for (int f = 0; f < 50; ++f)
            write_pattern_file(t / ("tree/d" + std::to_string(d) + "/f" + std::to_string(f)), uint64_t(4096 + 997 * f),
                               unsigned(d * 100 + f));
    }
    mkdir_p(t / "out");
    JobRun run = run_job(spec_of({t / "tree"}, t / "out"));
    REQUIRE(run.summary.ok());
    CHECK(run.counters->files_done == 200);
    CHECK(list_tree(t / "tree") == list_tree(t / "out/tree"));
    CHECK(same_bytes(t / "tree/d3/f49", t / "out/tree/d3/f49"));
    CHECK(fs.fdatasync_calls == 0); // no per-file sync...
    CHECK(fs.syncfs_calls >= 2);    // ...but a sync for the data and one for the names
    // Groups grow from a sixteenth of 12 MiB: four groups for these 5.9 MiB, two syncs each at most, and the
    // job's last one.
    CHECK(fs.syncfs_calls <= 9);
    CHECK(run.counters->durable_bytes == run.counters->total_bytes);
}

namespace {

// The read-ahead has a thread of its own: while the job's thread makes the first part file (held in |fs|'s open
// hook until the files after it were asked for, or ten seconds), the next files are opened and asked for there.
// Records the threads that open sources ("f3", opened in its folder) and those that make part files.
struct ReadAheadWatch {
    explicit ReadAheadWatch(FaultSyscalls &fs)
    {
        fs.on_open = [this, &fs](const char *path, int flags) {
            if ((flags & O_CREAT) && std::strstr(path, ".part")) {
                record(making_parts);
                if (advised_at_first_part.load() < 0) {
                    for (int i = 0; i < 1000 && fs.willneed_calls.load() < 2; ++i)
                        std::this_thread::sleep_for(std::chrono::milliseconds(10));
                    advised_at_first_part = fs.willneed_calls.load();
                }
            } else if (path[0] == 'f') {
                record(opening_sources);
            }
        };
    }
    void record(std::set<std::thread::id> &threads)
    {
        std::lock_guard lock(mutex);
        threads.insert(std::this_thread::get_id());
    }
    bool opened_off_the_job_thread()
    {
        std::lock_guard lock(mutex);
        return std::any_of(opening_sources.begin(), opening_sources.end(),
                           [&](std::thread::id id) { return making_parts.count(id) == 0; });
    }

    std::atomic<int> advised_at_first_part {-1}; // WILLNEEDs when the first part file was made
    std::mutex mutex;
    std::set<std::thread::id> opening_sources, making_parts;
};

} // namespace

TEST_CASE_METHOD(Faulted, "small files: the next sources are read ahead of the copy, and only its own pages dropped")
{
    mkdir_p(t / "tree");
    for (int f = 0; f < 20; ++f) {
        const std::string path = t / ("tree/f" + std::to_string(f));
        write_pattern_file(path, 6000, unsigned(f));
        if (f < 10)
            (void)read_file(path); // in use by someone else: cached before the copy
        else
            evict(path);
    }
    mkdir_p(t / "out");
    ReadAheadWatch watch(fs);
    JobRun run = run_job(spec_of({t / "tree"}, t / "out"));
    REQUIRE(run.summary.ok());
    // Each file asked for once at most: one the thread had not begun when the copy came to it, the copy opened
    // and read itself.
    CHECK(fs.willneed_calls.load() <= 20);
    CHECK(watch.advised_at_first_part > 1);   // files beyond the first were asked for while it was being written
    CHECK(watch.opened_off_the_job_thread()); // ...by a thread that makes no part file: the read-ahead's
    for (int f = 0; f < 20; ++f) {
        const std::string name = "f" + std::to_string(f);
        INFO(name);
        CHECK(read_file(t / ("out/tree/" + name)) == read_file(t / ("tree/" + name)));
    }
    // Checked after the comparison above read them all again: only the job's own reads count, so check a copy
    // of the state taken by a second run into another folder.
    for (int f = 10; f < 20; ++f)
        evict(t / ("tree/f" + std::to_string(f)));
    mkdir_p(t / "again");
    REQUIRE(run_job(spec_of({t / "tree"}, t / "again")).summary.ok());
    for (int f = 0; f < 20; ++f) {
        INFO("f" << f);
        const double cached = residency(t / ("tree/f" + std::to_string(f)));
        if (f < 10)
            CHECK(cached > 0.95);
        else
            CHECK(cached < 0.05);
    }
}

TEST_CASE("small files: a source is fstat'ed once, and one whose residency the kernel hides is dropped behind")
{
    // Run by someone who neither owns the files nor is root: the kernel's mincore then says every page is cached.
    // The owner comes from the fstat that opened the file (a second one was one of a file's eighteen calls).
    struct Hidden : FaultSyscalls {
        std::string sources;
        std::atomic<int> source_fstats {0};
        uid_t raw_geteuid() override { return 4242; }
        int raw_mincore(void *, size_t len, unsigned char *vec) override
        {
            std::memset(vec, 1, (len + 4095) / 4096);
            return 0;
        }
        int raw_fstat(int fd, struct stat *st) override
        {
            char link[4096];
            const ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), link, sizeof link);
            if (n > 0 && std::string(link, size_t(n)).rfind(sources, 0) == 0)
                ++source_fstats;
            return FaultSyscalls::raw_fstat(fd, st);
        }
    } hidden;
    TempDir t;
    mkdir_p(t / "tree");
    hidden.sources = t / "tree/f";
    for (int f = 0; f < 20; ++f) {
        write_pattern_file(t / ("tree/f" + std::to_string(f)), 6000, unsigned(f));
        evict(t / ("tree/f" + std::to_string(f)));
    }
    mkdir_p(t / "out");
    {
        ScopedSyscalls seam(hidden);
        REQUIRE(run_job(spec_of({t / "tree"}, t / "out")).summary.ok());
    }
    CHECK(hidden.source_fstats.load() == 20);
    for (int f = 0; f < 20; ++f) {
        const std::string name = "f" + std::to_string(f);
        INFO(name);
        CHECK(residency(t / ("tree/" + name)) < 0.05);
        CHECK(residency(t / ("out/tree/" + name)) < 0.05);
        CHECK(read_file(t / ("out/tree/" + name)) == read_file(t / ("tree/" + name)));
    }
}

TEST_CASE_METHOD(
    Faulted, "small files: a durable group is renamed off the job's thread and a failed rename fails that file alone")
{
    mkdir_p(t / "tree");
    for (int f = 0; f < 300; ++f)
        write_pattern_file(t / ("tree/f" + std::to_string(f)), 3000, unsigned(f));
    mkdir_p(t / "out");
    std::mutex mutex;
    std::set<std::thread::id> making_parts, renaming;
    fs.on_open = [&](const char *path, int flags) {
        if ((flags & O_CREAT) && std::strstr(path, ".part")) {
            std::lock_guard lock(mutex);
            making_parts.insert(std::this_thread::get_id());
        }
    };
    fs.on_rename = [&](const char *from, const char *to) {
        std::lock_guard lock(mutex);
        if (std::strstr(from, ".part"))
            renaming.insert(std::this_thread::get_id());
        return std::strcmp(to, "f7") == 0 ? EACCES : 0; // a file's own failure, not the device's
    };
    {
        const Result<DeviceInfo> device = probe_device(t / "out");
        REQUIRE(device.ok());
        INFO("the test's folder must be on a filesystem whose syncfs reaches the disk (ext4, xfs, btrfs)");
        REQUIRE(device.value().group_sync == GroupSync::Background);
    }
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    spec.batch_files = 32; // groups of 2, 4, ... 32 files: most are renamed while the walk goes on
    JobRun run = run_job(spec);
    CHECK_FALSE(run.summary.aborted);
    CHECK(run.summary.errors == 1);
    REQUIRE(run.count(JobEvent::Kind::Error) == 1);
    CHECK(run.first(JobEvent::Kind::Error)->path == t / "tree/f7");
    CHECK(run.count(JobEvent::Kind::FileDone) == 299);
    {
        std::lock_guard lock(mutex);
        REQUIRE(making_parts.size() == 1);
        CHECK(renaming.count(*making_parts.begin()) == 0);
    }
    // Nothing half done under any name: f7 is neither under its name nor left as a part file.
    CHECK_FALSE(exists(t / "out/tree/f7"));
    for (int f = 0; f < 300; ++f) {
        if (f == 7)
            continue;
        const std::string name = "f" + std::to_string(f);
        INFO(name);
        CHECK(read_file(t / ("out/tree/" + name)) == read_file(t / ("tree/" + name)));
    }
    CHECK(list_tree(t / "out/tree").find(".part") == std::string::npos);
}

TEST_CASE_METHOD(Faulted, "folder to folder: a failed batch sync publishes none of the batch's files")
{
    mkdir_p(t / "tree");
    for (int f = 0; f < 10; ++f)
        write_pattern_file(t / ("tree/f" + std::to_string(f)), 5000, unsigned(f));
    mkdir_p(t / "out");
    fs.syncfs_errno = EIO;
    JobRun run = run_job(spec_of({t / "tree"}, t / "out"));
    CHECK_FALSE(run.summary.ok());
    CHECK(run.count(JobEvent::Kind::FileDone) == 0);
    CHECK(list_tree(t / "out") == ".\tdir\ntree\tdir\n");
}

TEST_CASE_METHOD(Faulted,
                 "folder to folder: a device gone mid-copy (ENODEV) is reported as removed, once, and ends the job")
{
    mkdir_p(t / "tree");
    for (int f = 0; f < 4; ++f)
        write_pattern_file(t / ("tree/big" + std::to_string(f)), 4 << 20, unsigned(f));
    mkdir_p(t / "out");
    fs.data_errno = ENODEV;
    fs.fail_after_bytes = 6 << 20;
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    int asked = 0;
    SECTION("without a question callback (sanecp)") {}
    SECTION("with one (the window): a pulled stick is not a question")
    {
        spec.ask_error = [&](const Status &, const std::string &) {
            ++asked;
            return ErrorAnswer::Retry; // would retry forever if it were asked
        };
    }
    JobRun run = run_job(std::move(spec));
    CHECK(asked == 0);
    CHECK(run.summary.aborted);
    CHECK(run.summary.device_removed);
    REQUIRE(run.first(JobEvent::Kind::Error));
    CHECK(run.first(JobEvent::Kind::Error)->message.find("the device was removed") != std::string::npos);
    CHECK(run.count(JobEvent::Kind::Error) == 1); // no further file is tried, no final sync is reported
}

TEST_CASE("folder to folder: skips the conflict policy asked for leave the job complete")
{
    TempDir t;
    tree_onto_existing(t, {"a", "new"}, {"a", "old"});
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    spec.conflict = ConflictPolicy::Skip;
    JobRun run = run_job(spec);
    CHECK(run.count(JobEvent::Kind::Skipped) == 1);
    CHECK(run.summary.files_refused == 0);
    CHECK(run.summary.complete());
    CHECK(read_file(t / "out/tree/a") == "old");
}

TEST_CASE("folder to folder: copying into an existing folder of the same name merges")
{
    TempDir t;
    tree_onto_existing(t, {"new", "n"}, {"kept", "k"});
    JobRun run = run_job(spec_of({t / "tree"}, t / "out"));
    REQUIRE(run.summary.ok());
    CHECK(read_file(t / "out/tree/new") == "n");
    CHECK(read_file(t / "out/tree/kept") == "k");
}

TEST_CASE("folder to folder: two sources of one name merge, and a file both hold is a conflict the second time")
{
    TempDir t;
    for (const char *dir : {"a", "a/x", "a/x/sub", "b", "b/x", "b/x/sub", "out"})
        mkdir_p(t / dir);
    write_text_file(t / "a/x/f", "first");
    write_text_file(t / "a/x/sub/g", "first");
    write_text_file(t / "b/x/f", "second");
    write_text_file(t / "b/x/sub/g", "second");
    write_text_file(t / "b/x/h", "only in b");
    // The second x is met after the walk left the first: what the job made in x is no longer taken as free.
    JobRun run = run_job(spec_of({t / "a/x", t / "b/x"}, t / "out"));
    CHECK(run.summary.errors == 2);
    CHECK(read_file(t / "out/x/f") == "first");
    CHECK(read_file(t / "out/x/sub/g") == "first");
    CHECK(read_file(t / "out/x/h") == "only in b");
}

TEST_CASE("walk: pre-order, names in byte order, and only the folders on the current path are open")
{
    TempDir t;
    mkdir_p(t / "tree");
    for (int i = 0; i < 40; ++i) {
        const std::string dir = t / ("tree/d" + std::to_string(100 + i));
        mkdir_p(dir);
        mkdir_p(dir + "/inner");
        write_text_file(dir + "/inner/f", "x");
    }
    write_text_file(t / "tree/B", "upper case sorts first");
    const auto open_fds = [] { return entries_in("/proc/self/fd") - 1; }; // less the listing's own
    const std::size_t before = open_fds();
    std::vector<Status> errors;
    std::vector<std::string> rels;
    std::size_t most_open = 0;
    {
        TreeWalk walk(t.path(), "tree", t / "tree", [&](Status s) { errors.push_back(std::move(s)); });
        for (PlanEntry e; walk.next(e);) {
            rels.push_back(e.rel);
            most_open = std::max(most_open, open_fds() - before);
        }
    }
    CHECK(errors.empty());
    REQUIRE(rels.size() == 2 + 40 * 3);
    CHECK(rels[0] == "");
    CHECK(rels[1] == "B");
    CHECK(rels[2] == "d100");
    CHECK(rels[3] == "d100/inner");
    CHECK(rels[4] == "d100/inner/f");
    CHECK(rels.back() == "d139/inner/f");
    CHECK(most_open <= 3); // the tree, one of its folders, that folder's inner
    CHECK(open_fds() == before);
}

TEST_CASE("folder to folder: cancel before the first byte leaves nothing behind")
{
    TempDir t;
    mkdir_p(t / "tree");
    write_pattern_file(t / "tree/a", 3 * 1024 * 1024);
    mkdir_p(t / "out");
    JobControl control;
    control.cancel();
    JobRun run = run_job(spec_of({t / "tree"}, t / "out"), control);
    CHECK(run.summary.cancelled);
    CHECK(list_tree(t / "out") == ".\tdir\n");
}

TEST_CASE("plan: problems are known before the first byte, and nothing is written")
{
    TempDir t;
    mkdir_p(t / "tree");
    write_pattern_file(t / "tree/a", 10000);
    REQUIRE(::mkfifo((t / "tree/pipe").c_str(), 0644) == 0);
    mkdir_p(t / "out");
    JobPlan plan = plan_job(spec_of({t / "tree", t / "missing"}, t / "out"));
    CHECK(plan.files == 1);
    CHECK(plan.total_bytes == 10000);
    CHECK(plan.device_known);
    REQUIRE(plan.errors.size() == 1);
    CHECK(plan.errors[0].err() == ENOENT);
    REQUIRE(plan.left_out.size() == 1);
    CHECK(plan.left_out[0].path == t / "tree/pipe");
    CHECK(plan.left_out[0].reason == LeftOut::SpecialFile);
    CHECK(plan.problems().size() == 2);
    CHECK(list_tree(t / "out") == ".\tdir\n");
}

TEST_CASE("plan: files whose target name is taken are listed before the first byte, and nothing is written")
{
    TempDir t;
    for (const char *dir : {"src", "src/tree", "src/tree/sub", "out", "out/tree", "out/tree/sub", "out/tree/sub/b"})
        mkdir_p(t / dir);
    write_pattern_file(t / "src/tree/a", 3000);
    write_pattern_file(t / "src/tree/sub/b", 5000);
    write_pattern_file(t / "src/tree/new", 10);
    REQUIRE(::symlink("a", (t / "src/tree/link").c_str()) == 0);
    write_pattern_file(t / "out/tree/a", 100);  // an older, smaller copy; out/tree/sub/b is a folder where
    write_pattern_file(t / "out/tree/link", 7); // a file goes, and this a file where a link goes
    const std::string before = list_tree(t / "out");
    JobPlan plan = plan_job(spec_of({t / "src/tree"}, t / "out"));
    REQUIRE(plan.taken.size() == 3);
    std::sort(plan.taken.begin(), plan.taken.end(), [](const auto &x, const auto &y) { return x.target < y.target; });
    CHECK(plan.taken[0].target == t / "out/tree/a");
    CHECK(plan.taken[0].source == t / "src/tree/a");
    CHECK(plan.taken[0].source_size == 3000);
    CHECK(plan.taken[0].existing.size == 100);
    CHECK_FALSE(plan.taken[0].existing.is_dir);
    CHECK(plan.taken[0].source_mtime.tv_sec > 0);
    CHECK(plan.taken[1].target == t / "out/tree/link");
    CHECK(plan.taken[2].target == t / "out/tree/sub/b");
    CHECK(plan.taken[2].existing.is_dir);
    CHECK(plan.files == 4);                // taken names are still planned: the policy decides each
    CHECK(list_tree(t / "out") == before); // planning wrote nothing
    // Resuming: taken names are what a resume expects, not conflicts.
    JobSpec resume = spec_of({t / "src/tree"}, t / "out");
    resume.resume = true;
    CHECK(plan_job(resume).taken.empty());
}

TEST_CASE("plan: what a folder whose target does not exist yet holds is not looked up file by file")
{
    // One lookup a folder, not a file: a million lookups for a tree of a million files, a round trip each on a share.
    TempDir t;
    for (const char *dir : {"src", "src/tree", "src/tree/new", "src/tree/old", "out", "out/tree", "out/tree/old"})
        mkdir_p(t / dir);
    for (const char *file : {"a", "b", "c"}) {
        write_pattern_file(t / (std::string("src/tree/new/") + file), 100);
        write_pattern_file(t / (std::string("src/tree/old/") + file), 100);
    }
    write_pattern_file(t / "out/tree/old/b", 10);
    struct Lookups : Syscalls {
        std::vector<std::string> paths;
        std::mutex mutex; // the plan's probe looks up from a thread of its own
        int raw_fstatat(int dirfd, const char *path, struct stat *st, int flags) override
        {
            if (dirfd == AT_FDCWD) {
                std::lock_guard<std::mutex> lock(mutex);
                paths.emplace_back(path);
            }
            return Syscalls::raw_fstatat(dirfd, path, st, flags);
        }
    } lookups;
    JobPlan plan;
    {
        ScopedSyscalls seam(lookups);
        plan = plan_job(spec_of({t / "src/tree"}, t / "out"));
    }
    REQUIRE(plan.taken.size() == 1);
    CHECK(plan.taken[0].target == t / "out/tree/old/b");
    CHECK(plan.files == 6);
    const auto looked_up = [&](const std::string &path) {
        return std::count(lookups.paths.begin(), lookups.paths.end(), path);
    };
    CHECK(looked_up(t / "out/tree/new") == 1);
    CHECK(looked_up(t / "out/tree/new/a") == 0);
    CHECK(looked_up(t / "out/tree/new/c") == 0);
    CHECK(looked_up(t / "out/tree/old/a") == 1); // its folder is there: each file is looked at
    CHECK(looked_up(t / "out/tree/old/c") == 1);
}

TEST_CASE("a file's target found absent as it is resolved is not looked up again by the plan or the run")
{
    // A lookup is a round trip onto a share: three of them stood before a big file's first byte.
    TempDir t;
    mkdir_p(t / "src");
    mkdir_p(t / "out");
    write_pattern_file(t / "src/big", 300000);
    struct Lookups : Syscalls {
        int of_target = 0;
        std::string seen;
        static std::string folder_of(int fd)
        {
            const std::string path = path_of_fd(fd);
            return path.substr(path.rfind('/') + 1);
        }
        int raw_fstatat(int dirfd, const char *path, struct stat *st, int flags) override
        {
            const std::string p(path);
            if (p.size() >= 8 && p.compare(p.size() - 8, 8, "/out/big") == 0)
                ++of_target, seen += "path;"; // resolved and planned by path
            else if (dirfd != AT_FDCWD && p == "big" && folder_of(dirfd) == "out")
                ++of_target, seen += "rel;"; // run: against the target folder
            return Syscalls::raw_fstatat(dirfd, path, st, flags);
        }
    } lookups;
    JobRun run;
    {
        ScopedSyscalls seam(lookups);
        run = run_job(spec_of({t / "src/big"}, t / "out"));
    }
    CHECK(run.summary.ok());
    CHECK(same_bytes(t / "src/big", t / "out/big"));
    INFO(lookups.seen);
    CHECK(lookups.of_target == 1);
}

TEST_CASE("the receiving folder is opened for the run while its device is probed, not after")
{
    // Onto a share the probe's statfs and the folder's open are a round trip each, and the first byte waited for
    // both one after the other. Here the first of each waits (10 s at most) for the first of the other to have
    // begun; a later call meets a flag already set, so only the first counts.
    TempDir t;
    mkdir_p(t / "src");
    mkdir_p(t / "out");
    write_pattern_file(t / "src/a", 100000);
    struct Meeting : Syscalls {
        std::mutex mutex;
        std::condition_variable changed;
        bool opening = false, probing = false;
        std::atomic<int> met {0}; // 1: the open met the probe; 2: the probe met the open
        void meet(bool &mine, const bool &other, int bit)
        {
            std::unique_lock<std::mutex> lock(mutex);
            if (mine)
                return; // not the first
            mine = true;
            changed.notify_all();
            if (changed.wait_for(lock, std::chrono::seconds(10), [&] { return other; }))
                met |= bit;
        }
        int raw_openat(int dirfd, const char *path, int flags, mode_t mode) override
        {
            if (dirfd == AT_FDCWD && (flags & O_DIRECTORY) && !(flags & O_PATH) && names_out(path))
                meet(opening, probing, 1);
            return Syscalls::raw_openat(dirfd, path, flags, mode);
        }
        int raw_fstatfs(int fd, struct statfs *st) override
        {
            if (names_out(path_of_fd(fd)))
                meet(probing, opening, 2);
            return Syscalls::raw_fstatfs(fd, st);
        }
    } meeting;
    JobRun run;
    {
        ScopedSyscalls seam(meeting);
        run = run_job(spec_of({t / "src/a"}, t / "out"));
    }
    CHECK(run.summary.ok());
    CHECK(same_bytes(t / "src/a", t / "out/a"));
    CHECK(meeting.met == 3);
}

TEST_CASE("until the copy creates its first file, the destination folder is known from the kernel's cache")
{
    // Onto a share a stat of the folder whose cached attributes have aged is a round trip (an NFS GETATTR): the
    // queue's lane, the plan and the run each made one before the first byte (23-25 ms each over the VM's link).
    // What they ask (is it a folder, on which device, is it the one the plan opened) the client knows without
    // its server; the probe's statfs, beside the target's lookup and the folder's open, goes out.
    TempDir t;
    mkdir_p(t / "src");
    mkdir_p(t / "out");
    write_pattern_file(t / "src/a", 100000);
    struct Questions : Syscalls {
        std::mutex mutex;
        bool probed = false, created = false;
        std::vector<std::string> asked; // looks at the folder that would go to a server, before the create
        void note(const std::string &what)
        {
            std::lock_guard<std::mutex> lock(mutex);
            if (!created)
                asked.push_back(what);
        }
        int raw_openat(int dirfd, const char *path, int flags, mode_t mode) override
        {
            if (flags & O_CREAT) {
                std::lock_guard<std::mutex> lock(mutex);
                created = true;
            }
            return Syscalls::raw_openat(dirfd, path, flags, mode);
        }
        int raw_fstatat(int dirfd, const char *path, struct stat *st, int flags) override
        {
            const bool of_fd = *path == '\0';
            if ((dirfd == AT_FDCWD || of_fd) && names_out(of_fd ? path_of_fd(dirfd) : path) &&
                !(flags & kCachedAttributes))
                note(of_fd ? "fstatat of a descriptor" : "fstatat " + std::string(path));
            return Syscalls::raw_fstatat(dirfd, path, st, flags);
        }
        int raw_fstat(int fd, struct stat *st) override
        {
            if (names_out(path_of_fd(fd)))
                note("fstat");
            return Syscalls::raw_fstat(fd, st);
        }
        int raw_fstatfs(int fd, struct statfs *st) override
        {
            if (names_out(path_of_fd(fd))) {
                std::lock_guard<std::mutex> lock(mutex);
                probed = true;
            }
            return Syscalls::raw_fstatfs(fd, st);
        }
    } questions;
    const JobSpec spec = spec_of({t / "src/a"}, t / "out/");
    std::string lane;
    JobRun run;
    {
        ScopedSyscalls seam(questions);
        lane = JobQueue::default_lane(spec); // as the queue does when the job is submitted
        run = run_job(spec);
    }
    CHECK(run.summary.ok());
    CHECK(same_bytes(t / "src/a", t / "out/a"));
    CHECK(lane.rfind("path:", 0) == std::string::npos); // the device was found, from the cache
    CHECK(questions.probed);
    CHECK(questions.created);
    std::string asked;
    for (const std::string &a : questions.asked)
        asked += a + "; ";
    INFO(asked);
    CHECK(questions.asked.empty());
}

TEST_CASE("two sources with one name: the second still meets the first's copy as a conflict")
{
    // Both targets were absent when resolved; the second's is not any more when its turn comes.
    TempDir t;
    for (const char *dir : {"a", "b", "out"})
        mkdir_p(t / dir);
    write_text_file(t / "a/x", "first");
    write_text_file(t / "b/x", "second");
    JobRun refused = run_job(spec_of({t / "a/x", t / "b/x"}, t / "out"));
    CHECK(read_file(t / "out/x") == "first");
    CHECK(refused.summary.errors == 1);
    mkdir_p(t / "out2");
    JobRun skipped = run_job(spec_of({t / "a/x", t / "b/x"}, t / "out2", ConflictPolicy::Skip));
    CHECK(read_file(t / "out2/x") == "first");
    CHECK(skipped.summary.errors == 0);
    CHECK(skipped.summary.files_skipped == 1);
    // A move on one filesystem renames the first into place: the second still finds it there.
    mkdir_p(t / "out3");
    JobSpec move = spec_of({t / "a/x", t / "b/x"}, t / "out3", ConflictPolicy::Skip);
    move.move = true;
    JobRun moved = run_job(move);
    CHECK(read_file(t / "out3/x") == "first");
    CHECK(moved.summary.files_skipped == 1);
    CHECK(read_file(t / "b/x") == "second"); // skipped: its source stays
}

namespace {
// The device shows |free| bytes free; the folders listed are counted.
struct SmallDevice : FaultSyscalls {
    uint64_t free = 0;
    std::atomic<int> listings {0};
    int raw_fstatfs(int fd, struct statfs *st) override
    {
        const int r = Syscalls::raw_fstatfs(fd, st);
        if (r == 0 && st->f_blocks > 0)
            st->f_bavail = st->f_bfree = free / (st->f_frsize ? st->f_frsize : st->f_bsize);
        return r;
    }
    int raw_list_dir(int dirfd, std::vector<std::string> &names) override
    {
        ++listings;
        return Syscalls::raw_list_dir(dirfd, names);
    }
};
} // namespace

namespace {
// Removes |victim| right after the |nth| listing of a folder: between the plan's walk and the copy's.
struct RemovedAfterListing : FaultSyscalls {
    std::string victim;
    int nth = 2;
    std::atomic<int> listings {0};
    int raw_list_dir(int dirfd, std::vector<std::string> &names) override
    {
        const int r = Syscalls::raw_list_dir(dirfd, names);
        if (++listings == nth)
            ::unlink(victim.c_str());
        return r;
    }
};
} // namespace

TEST_CASE("walk: a tree big enough to be read ahead on threads is planned the same, and the threads end with it")
{
    TempDir t;
    mkdir_p(t / "tree");
    // Past the 20,000 entries after which the plan's walk gets help (TreeWarmer).
    for (int d = 0; d < 120; ++d) {
        const std::string dir = t / ("tree/d" + std::to_string(d));
        mkdir_p(dir);
        for (int f = 0; f < 200; ++f)
            REQUIRE(::close(::open((dir + "/f" + std::to_string(f)).c_str(), O_CREAT | O_WRONLY, 0644)) == 0);
    }
    const auto threads = [] { return entries_in("/proc/self/task"); };
    const std::size_t before = threads();
    mkdir_p(t / "out");
    const JobPlan plan = plan_job(spec_of({t / "tree"}, t / "out"));
    CHECK(plan.errors.empty());
    CHECK(plan.files == 120 * 200);
    CHECK(plan.total_bytes == 0);
    CHECK(threads() == before);
}

namespace {
// The lookup of a path ending in |target| waits (up to 10 s) for the destination's statfs: whether it came while
// the lookup was out.
struct LookupWaitsForStatfs : FaultSyscalls {
    std::string target;
    std::mutex mutex;
    std::condition_variable statfs_seen;
    bool statfs = false;
    bool overlapped = false;
    int raw_fstatfs(int fd, struct statfs *st) override
    {
        {
            std::lock_guard<std::mutex> lock(mutex);
            statfs = true;
        }
        statfs_seen.notify_all();
        return FaultSyscalls::raw_fstatfs(fd, st);
    }
    int raw_fstatat(int dirfd, const char *path, struct stat *st, int flags) override
    {
        const std::string p(path);
        if (p.size() >= target.size() && p.compare(p.size() - target.size(), target.size(), target) == 0) {
            std::unique_lock<std::mutex> lock(mutex);
            overlapped = statfs_seen.wait_for(lock, std::chrono::seconds(10), [&] { return statfs; });
        }
        return FaultSyscalls::raw_fstatat(dirfd, path, st, flags);
    }
};
} // namespace

TEST_CASE("plan: the destination's device is probed while the sources' targets are looked up")
{
    // Onto a share the probe's statfs and each lookup are a round trip: one after another, the first byte waited
    // for all of them.
    TempDir t;
    write_text_file(t / "x", "x");
    mkdir_p(t / "out");
    LookupWaitsForStatfs fs;
    fs.target = "/out/x"; // as resolved: the folder's real path and the name
    JobPlan plan;
    {
        ScopedSyscalls seam(fs);
        plan = plan_job(spec_of({t / "x"}, t / "out"));
    }
    CHECK(fs.overlapped);
    CHECK(plan.errors.empty());
    CHECK(plan.device_known);
    CHECK_FALSE(plan.target_root); // opened only for a run's own plan
    CHECK(plan.files == 1);
    CHECK(plan.taken.empty());
}

TEST_CASE("run: the receiving folder opened beside the probe is the one written into, unless replaced since")
{
    // Onto NFS every open of a folder is a round trip: the plan's opening serves the run.
    TempDir t;
    mkdir_p(t / "src");
    write_text_file(t / "src/x", "x");
    mkdir_p(t / "out");
    const std::string out = t / "out";
    FaultSyscalls fs;
    std::atomic<int> opens {0};
    fs.on_open = [&](const char *path, int flags) {
        if (path == out && (flags & O_DIRECTORY) && !(flags & O_PATH))
            ++opens;
    };
    {
        ScopedSyscalls seam(fs);
        JobRun run = run_job(spec_of({t / "src/x"}, out));
        CHECK(run.summary.ok());
    }
    CHECK(opens == 1);
    CHECK(read_file(t / "out/x") == "x");

    // Replaced after the plan opened it (the plan may wait for a user): the copy goes where the path says now.
    mkdir_p(t / "out2");
    const std::string out2 = t / "out2";
    std::atomic<bool> opened {false}, replaced {false}; // the plan's probe opens from a thread of its own
    fs.on_open = [&](const char *path, int flags) {
        if (path == out2 && (flags & O_DIRECTORY) && !(flags & O_PATH))
            opened = true;
        else if (opened && !replaced && path == t / "src" && (flags & O_DIRECTORY)) {
            REQUIRE(::rename(out2.c_str(), (t / "out2-old").c_str()) == 0);
            mkdir_p(out2);
            replaced = true;
        }
    };
    {
        ScopedSyscalls seam(fs);
        JobRun run = run_job(spec_of({t / "src/x"}, out2));
        CHECK(run.summary.ok());
    }
    REQUIRE(replaced);
    CHECK(read_file(t / "out2/x") == "x");
    CHECK(entries_in(std::string(t / "out2-old").c_str()) == 0);
}

TEST_CASE("walk: a source removed between the plan and the copy is reported, not passed over")
{
    TempDir t;
    mkdir_p(t / "tree");
    mkdir_p(t / "out");
    write_text_file(t / "tree/a", "a");
    write_text_file(t / "tree/gone", "g");
    RemovedAfterListing fs;
    fs.victim = t / "tree/gone";
    JobRun run;
    {
        ScopedSyscalls seam(fs);
        run = run_job(spec_of({t / "tree"}, t / "out"));
    }
    CHECK(fs.listings == 2); // the plan's walk and the copy's, one listing each
    CHECK(run.summary.errors == 1);
    const JobEvent *error = run.first(JobEvent::Kind::Error);
    REQUIRE(error != nullptr);
    CHECK(error->path == t / "tree/gone");
    CHECK(read_file(t / "out/tree/a") == "a");
}

TEST_CASE("plan: what each answer to the names taken would need and copy is counted in the one walk")
{
    TempDir t;
    for (const char *dir : {"src", "src/tree", "out", "out/tree"})
        mkdir_p(t / dir);
    write_pattern_file(t / "src/tree/film", 5 << 20);  // an update of the film already there
    write_pattern_file(t / "src/tree/notes", 1 << 20); // new
    write_pattern_file(t / "src/tree/zz", 1 << 20);    // new, last
    write_pattern_file(t / "out/tree/film", 5 << 20);
    SmallDevice fs;
    fs.free = 3 << 20; // of it 1 MiB is the fit's margin: 2 MiB for files
    JobPlan plan;
    {
        ScopedSyscalls seam(fs);
        plan = plan_job(spec_of({t / "src/tree"}, t / "out"));
    }
    CHECK(fs.listings == 1); // the tree's one folder, once
    REQUIRE(plan.taken.size() == 1);
    using How = JobPlan::TakenNames;
    // Asked one by one, or kept both: 7 MiB in full. In order, the film does not fit in 2 MiB; the new files do.
    const JobPlan::Room &asked = plan.room(How::AskedOrKept);
    CHECK_FALSE(asked.space.ok());
    CHECK(asked.files == 3);
    CHECK(asked.fit_files == 2);
    CHECK(asked.fit_bytes == 2u << 20);
    // Skipped: the film is not written; the two new files fit.
    const JobPlan::Room &skipped = plan.room(How::Skipped);
    CHECK(skipped.space.ok());
    CHECK(skipped.files == 2);
    CHECK(skipped.bytes == 2u << 20);
    // Replaced: the film's difference is nothing, but old and new stand side by side for a moment.
    const JobPlan::Room &replaced = plan.room(How::Replaced);
    CHECK_FALSE(replaced.space.ok());
    CHECK(replaced.files == 3);
    CHECK(replaced.fit_files == 3);
    // The job's own count is the one it was asked for (refuse, and ask): as "asked".
    CHECK(plan.files == 3);
    CHECK(plan.space.message() == asked.space.message());
    CHECK(list_tree(t / "out/tree") == ".\tdir\nfilm\tfile\t5242880\n"); // planning wrote nothing
}

namespace {
// A random tree: nested folders (some empty), files from empty to past the small-file limit, links relative,
// absolute and dangling, and names with spaces, quotes, newlines, non-UTF-8 bytes and leading dashes.
void make_random_tree(const std::string &root, std::mt19937 &rng, int depth)
{
    static const std::vector<std::string> pieces = {"a",         "photo 01", "it's", "say \"hi\"",
                                                    "new\nline", "caf\xe9",  "日本", "-dash",
                                                    ".hidden",   "x.y.z",    "#tag", "   spaced"};
    auto pick = [&](size_t n) { return size_t(rng() % n); };
    const int entries = 2 + int(pick(6));
    for (int i = 0; i < entries; ++i) {
        const std::string name = pieces[pick(pieces.size())] + "-" + std::to_string(i);
        const std::string path = root + "/" + name;
        switch (pick(depth > 0 ? 5 : 3)) {
        case 0: { // a file; sometimes big enough for the chunked path
            const uint64_t size = pick(8) == 0 ? 1024 * 1024 + pick(300000) : pick(70000);
            write_pattern_file(path, size, unsigned(rng()));
            break;
        }
        case 1:
            write_text_file(path, "");
            break;
        case 2: {
            const char *targets[] = {"pieces/../x", "/etc/hostname", "no such thing", "."};
            REQUIRE(::symlink(targets[pick(4)], path.c_str()) == 0);
            break;
        }
        default:
            REQUIRE(::mkdir(path.c_str(), 0755) == 0);
            make_random_tree(path, rng, depth - 1);
            break;
        }
    }
}

// Relative paths below |root|, found with readdir so names with newlines stay whole.
void collect(const std::string &root, const std::string &rel, std::vector<std::string> &out)
{
    DIR *dir = ::opendir((root + (rel.empty() ? "" : "/" + rel)).c_str());
    REQUIRE(dir);
    while (const dirent *e = ::readdir(dir)) {
        const std::string name = e->d_name;
        if (name == "." || name == "..")
            continue;
        const std::string child = rel.empty() ? name : rel + "/" + name;
        out.push_back(child);
        if (e->d_type == DT_DIR)
            collect(root, child, out);
    }
    ::closedir(dir);
}

void require_same_tree(const std::string &a, const std::string &b)
{
    std::vector<std::string> pa, pb;
    collect(a, "", pa);
    collect(b, "", pb);
    std::sort(pa.begin(), pa.end());
    std::sort(pb.begin(), pb.end());
    REQUIRE(pa == pb);
    for (const std::string &rel : pa) {
        const std::string fa = a + "/" + rel, fb = b + "/" + rel;
        struct stat sa {}, sb {};
        REQUIRE(::lstat(fa.c_str(), &sa) == 0);
        REQUIRE(::lstat(fb.c_str(), &sb) == 0);
        INFO(rel);
        CHECK((sa.st_mode & S_IFMT) == (sb.st_mode & S_IFMT));
        if (S_ISREG(sa.st_mode))
            CHECK(same_bytes(fa, fb));
        if (S_ISLNK(sa.st_mode))
            CHECK(link_text(fa) == link_text(fb));
    }
}
} // namespace

TEST_CASE("property: random trees arrive byte for byte and link for link")
{
    for (unsigned seed = 1; seed <= 6; ++seed) {
        INFO("seed " << seed);
        TempDir t;
        std::mt19937 rng(seed);
        mkdir_p(t / "tree");
        make_random_tree(t / "tree", rng, 3);
        mkdir_p(t / "out");
        JobRun run = run_job(spec_of({t / "tree"}, t / "out"));
        REQUIRE(run.summary.ok());
        require_same_tree(t / "tree", t / "out/tree");
        CHECK(run.counters->durable_bytes == run.counters->total_bytes);
    }
}
