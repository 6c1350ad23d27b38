// SPDX-License-Identifier: GPL-2.0-or-later
#include "small_batch.h"

#include "background_closer.h"
#include "page_cache_policy.h"
#include "sys.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cctype>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <numeric>
#include <system_error>
#include <thread>

namespace sanecopy {

namespace {
// A durable file takes its name once |before_publish| lets it (Hooks::before_publish); else it fails so.
Status commit_when_let(PartFile &part, ConflictPolicy policy, std::string *final_name,
                       const std::function<Status()> &before_publish)
{
    if (before_publish) {
        if (Status s = before_publish(); !s)
            return s;
    }
    return part.commit(policy, final_name);
}
} // namespace

// syncfs on a helper thread. Requests that arrive while one runs are served together by the next, so a burst
// of tickets costs one more syncfs, not one each.
class Syncer {
public:
    Syncer(SharedDirFd dir, std::string display) : dir_(std::move(dir)), display_(std::move(display))
    {
        thread_ = std::thread([this] { loop(); });
    }
    ~Syncer()
    {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }

    // Done once a syncfs that started after this call has returned: whatever was written before is durable.
    uint64_t request()
    {
        std::lock_guard lock(mutex_);
        const uint64_t ticket = ++requested_;
        wake_.notify_all();
        return ticket;
    }
    bool done(uint64_t ticket)
    {
        std::lock_guard lock(mutex_);
        return completed_ >= ticket || !error_.ok();
    }
    // After a failed syncfs nothing written before it can be trusted to be on the device: every ticket not
    // yet done gets that error.
    Status wait(uint64_t ticket)
    {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return completed_ >= ticket || !error_.ok(); });
        return completed_ >= ticket ? Status() : error_;
    }

private:
    void loop()
    {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [&] { return stop_ || (requested_ > completed_ && error_.ok()); });
            if (stop_)
                return;
            const uint64_t serving = requested_;
            lock.unlock();
            const int r = sys().syncfs(dir_->get());
            const int err = errno;
            lock.lock();
            if (r < 0)
                error_ = Status::destination(err, "syncfs", display_);
            else
                completed_ = serving;
            wake_.notify_all();
        }
    }

    SharedDirFd dir_;
    std::string display_;
    std::mutex mutex_;
    std::condition_variable wake_;
    uint64_t requested_ = 0;
    uint64_t completed_ = 0;
    Status error_;
    bool stop_ = false;
    std::thread thread_;
};

SmallFileBatch::SmallFileBatch(WritebackMode mode, GroupSync sync, BatchLimits limits, bool case_insensitive,
                               Hooks hooks, BackgroundCloser *closer)
    : mode_(mode),
      sync_(sync),
      limits_(limits),
      case_insensitive_(case_insensitive),
      hooks_(std::move(hooks)),
      closer_(closer)
{
    group_.max_bytes = std::max<uint64_t>(1, limits_.max_bytes / 16);
    group_.max_files = std::max<std::size_t>(1, limits_.max_files / 16);
}

SmallFileBatch::~SmallFileBatch() { discard(); }

std::pair<int, std::string> SmallFileBatch::key(const BatchedFile &f) const
{
    std::string name = f.part.name();
    if (case_insensitive_)
        for (char &c : name)
            c = char(std::tolower(static_cast<unsigned char>(c)));
    return {f.part.dir()->get(), name};
}

bool SmallFileBatch::holds(int dir, const std::string &name) const
{
    if (names_.empty())
        return false;
    std::string folded = name;
    if (case_insensitive_)
        for (char &c : folded)
            c = char(std::tolower(static_cast<unsigned char>(c)));
    return names_.count({dir, folded}) > 0;
}

bool SmallFileBatch::empty() const
{
    return filling_.files.empty() && syncing_.empty() && renaming_.empty() && naming_.empty() &&
           durable_.files.empty() && settling_.empty();
}

PublishSteps SmallFileBatch::steps_for(const BatchedFile &f) const
{
    PublishSteps steps;
    steps.policy = f.policy;
    if (hooks_.verify)
        steps.verify = [this, &f](const PartFile &) { return hooks_.verify(f); };
    steps.before_commit = hooks_.before_publish;
    return steps;
}

void SmallFileBatch::add(BatchedFile file)
{
    if (!sync_dir_)
        sync_dir_ = file.part.dir();
    names_.insert(key(file));
    filling_.bytes += file.bytes;
    filling_.files.push_back(std::move(file));
    if (filling_.bytes >= group_.max_bytes || filling_.files.size() >= group_.max_files) {
        hand_off();
        group_.max_bytes = std::min(limits_.max_bytes, group_.max_bytes * 2);
        group_.max_files = std::min(limits_.max_files, group_.max_files * 2);
    }
}

void SmallFileBatch::hand_off()
{
    if (filling_.files.empty())
        return;
    if (mode_ != WritebackMode::Windows || sync_ == GroupSync::Inline) {
        if (mode_ == WritebackMode::Windows && closer_)
            settle_renaming(filling_);
        else if (mode_ == WritebackMode::Windows)
            settle_inline(filling_);
        else if (settles_in_background(filling_))
            settle_in_background(std::move(filling_));
        else {
            // The group before first: hooks in the files' order, and no free-name search beside its renames.
            finish_settling();
            settle_each(filling_);
        }
        filling_ = {};
        return;
    }
    if (!syncer_)
        syncer_ = std::make_unique<Syncer>(sync_dir_, filling_.files.front().part.dir_path());
    // Asked for before waiting on the older group, so the device goes on from one group to the next.
    filling_.ticket = syncer_->request();
    syncing_.push_back(std::move(filling_));
    filling_ = {};
    while (syncing_.size() > 1) {
        Group older = std::move(syncing_.front());
        syncing_.pop_front();
        const Status synced = syncer_->wait(older.ticket);
        settle_synced(std::move(older), synced);
    }
    reap_renamed(false);
    reap_names(false);
}

// A group whose data sync was waited for (GroupSync::Background), renamed on a thread of its own when it can be.
void SmallFileBatch::settle_synced(Group group, const Status &synced)
{
    // The group before, renamed first: its hooks come first, and a free-name search of this one on the job's
    // thread must not race its renames in the same folder.
    reap_renamed(true);
    if (!synced || !renames_elsewhere(group)) {
        queue_names(settle_data(group, synced));
        return;
    }
    auto r = std::make_unique<Renaming>();
    r->out.resize(group.files.size());
    for (BatchedFile &f : group.files) {
        r->keys.push_back(key(f));
        f.durable = true;
        hooks_.durable(f);
    }
    r->group = std::move(group);
    Renaming *p = r.get();
    Syncer *syncer = syncer_.get();
    auto rename = [p, syncer, let = hooks_.before_publish] { return rename_files(*p, *syncer, let); };
    try {
        r->names = std::async(std::launch::async, rename);
    } catch (const std::system_error &) { // no thread to be had: renamed when reaped, here
        r->names = std::async(std::launch::deferred, rename);
    }
    renaming_.push_back(std::move(r));
}

// Whether |group| needs the job's thread to be published: a read-back (verify) or a search for a free name
// ("keep both"), one file at a time.
bool SmallFileBatch::needs_job_thread(const Group &group) const
{
    return hooks_.verify || std::any_of(group.files.begin(), group.files.end(),
                                        [](const BatchedFile &f) { return f.policy == ConflictPolicy::Rename; });
}

// No closer either, which takes the descriptors once the names are durable.
bool SmallFileBatch::renames_elsewhere(const Group &group) const { return !closer_ && !needs_job_thread(group); }

// On the renaming thread: settle_data's part for files whose durable hooks have run. Returns the ticket of the
// syncfs that makes the renames durable, asked for once they are all made.
uint64_t SmallFileBatch::rename_files(Renaming &r, Syncer &syncer, const std::function<Status()> &before_publish)
{
    for (std::size_t i = 0; i < r.group.files.size(); ++i) {
        PartFile &part = r.group.files[i].part;
        drop_written_pages(part.fd());
        part.close_fd().ignore(); // synced already; the name is what is left to publish
        r.out[i].published = commit_when_let(part, r.group.files[i].policy, &r.out[i].final_name, before_publish);
    }
    return syncer.request();
}

// The renamed groups, oldest first (all, or those done when |wait| is false), queued for their names' syncfs.
void SmallFileBatch::reap_renamed(bool wait)
{
    while (!renaming_.empty()) {
        if (!wait && renaming_.front()->names.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
            return;
        // Off the queue before its result is taken: whatever throws, no spent future is left for the next reap.
        const std::unique_ptr<Renaming> done = std::move(renaming_.front());
        renaming_.pop_front();
        Renaming &r = *done;
        const uint64_t ticket = r.names.get();
        Group named;
        for (std::size_t i = 0; i < r.group.files.size(); ++i) {
            BatchedFile &f = r.group.files[i];
            names_.erase(r.keys[i]);
            if (!r.out[i].published) {
                hooks_.failed(f, std::move(r.out[i].published));
                continue;
            }
            f.target = f.part.dir_path() + "/" + r.out[i].final_name;
            named.files.push_back(std::move(f));
        }
        if (!named.files.empty()) {
            named.ticket = ticket;
            naming_.push_back(std::move(named));
        }
    }
}

// A group's data is on the device (or |synced| says why not): count it, drop its pages, verify and rename; each
// file is closed before its rename, or with a closer once its name is durable too (publish_group). Returns the
// files renamed, whose renames are yet to be made durable.
SmallFileBatch::Group SmallFileBatch::settle_data(Group &group, const Status &synced)
{
    std::vector<BatchedFile *> durable;
    for (BatchedFile &f : group.files) {
        names_.erase(key(f));
        if (!synced) {
            hooks_.failed(f, synced.for_path(f.part.display_path()));
            continue;
        }
        f.durable = true;
        hooks_.durable(f);
        drop_written_pages(f.part.fd());
        if (!closer_)
            f.part.close_fd().ignore(); // synced already; the name is what is left to publish
        durable.push_back(&f);
    }
    Group named;
    for (BatchedFile *f : durable) {
        std::string final_name;
        if (Status s = publish_synced(f->part, steps_for(*f), &final_name); !s) {
            hooks_.failed(*f, std::move(s));
            continue;
        }
        f->target = f->part.dir_path() + "/" + final_name;
        named.files.push_back(std::move(*f));
    }
    return named;
}

// Renamed files wait for a syncfs that starts after their renames.
void SmallFileBatch::queue_names(Group named)
{
    if (named.files.empty())
        return;
    named.ticket = syncer_->request();
    naming_.push_back(std::move(named));
}

void SmallFileBatch::publish_group(Group &group, const Status &names_synced)
{
    for (BatchedFile &f : group.files) {
        // Synced, renamed and the rename synced: the close has nothing left to write, only vfat's 100 ms sleep
        // (settle_renaming's files are closing already).
        if (closer_)
            closer_->close(f.part.take_fd());
        if (names_synced)
            hooks_.published(f);
        else
            hooks_.failed(f, names_synced.for_path(f.target));
    }
}

void SmallFileBatch::reap_names(bool wait)
{
    while (!naming_.empty() && (wait || syncer_->done(naming_.front().ticket))) {
        Group group = std::move(naming_.front());
        naming_.pop_front();
        publish_group(group, syncer_->wait(group.ticket));
    }
}

// The two syncs on the job's thread: the group's data (its writeback started file by file), then its renames.
void SmallFileBatch::settle_inline(Group &group)
{
    // Copies: settle_data moves the files out of |group|.
    const SharedDirFd dir = group.files.front().part.dir();
    const std::string display = group.files.front().part.dir_path();
    auto sync = [&] { return sys().syncfs(dir->get()) < 0 ? Status::destination(errno, "syncfs", display) : Status(); };
    Group named = settle_data(group, sync());
    if (!named.files.empty())
        publish_group(named, sync());
}

Status SmallFileBatch::sync_now(const BatchedFile &any) const
{
    return sys().syncfs(any.part.dir()->get()) < 0 ? Status::destination(errno, "syncfs", any.part.dir_path())
                                                   : Status();
}

// settle_inline where closes sleep: one syncfs makes this group's data and the group before's renames durable.
// Right after it, with nothing left for a close to write, the group's descriptors go to the closer, whose 100 ms
// sleeps pass while the job writes the next group. The group is renamed just ahead of the next syncfs, so its
// folder's blocks are not left dirty while the next group's files are created; its names stay taken until then.
void SmallFileBatch::settle_renaming(Group &group)
{
    Group named = rename_durable();
    const Status synced = sync_now(group.files.front());
    if (!named.files.empty())
        publish_group(named, synced);
    for (BatchedFile &f : group.files) {
        if (!synced) {
            names_.erase(key(f));
            hooks_.failed(f, synced.for_path(f.part.display_path()));
            continue;
        }
        f.durable = true;
        hooks_.durable(f);
        drop_written_pages(f.part.fd());
        closer_->close(f.part.take_fd()); // just synced: nothing left for its close to write
        durable_.files.push_back(std::move(f));
    }
}

// The durable group, verified and renamed, or failed. Returns the files renamed.
SmallFileBatch::Group SmallFileBatch::rename_durable()
{
    Group named;
    for (BatchedFile &f : durable_.files) {
        names_.erase(key(f));
        std::string final_name;
        if (Status s = publish_synced(f.part, steps_for(f), &final_name); !s) {
            hooks_.failed(f, std::move(s));
            continue;
        }
        f.target = f.part.dir_path() + "/" + final_name;
        named.files.push_back(std::move(f));
    }
    durable_ = {};
    return named;
}

// The last group's renames, made durable.
void SmallFileBatch::flush_renamed()
{
    Group named = rename_durable();
    if (!named.files.empty())
        publish_group(named, sync_now(named.files.front()));
}

// Without a syncfs that reaches the device: each file's data, then each folder's renames.
namespace {
// Runs |work|(i) for every i below |count|, on |threads| threads at most (the caller's among them).
void for_each_index(std::size_t count, unsigned threads, const std::function<void(std::size_t)> &work)
{
    std::atomic<std::size_t> next {0};
    auto drain = [&] {
        for (std::size_t i; (i = next.fetch_add(1)) < count;)
            work(i);
    };
    std::vector<std::thread> helpers;
    for (unsigned t = 1; t < std::min<std::size_t>(threads, count); ++t)
        helpers.emplace_back(drain);
    drain();
    for (std::thread &t : helpers)
        t.join();
}

// The order a group's files settle in: a file of each folder in turn, each folder's files in their own order.
// Onto a share the client holds a folder's lock for the whole round trip of a create or a rename in it, so
// settle threads working in one folder queue there: 2000 files in folders of 100 onto cifs, a rename took 0.62 s
// of a settle thread and a create about 0.5 s, each several times its own round trip, and the copy 1.10x cp -r.
// Files of different folders settle side by side.
std::vector<std::size_t> folders_in_turn(const std::vector<BatchedFile> &files)
{
    std::vector<std::size_t> rank(files.size()); // the file's place among its folder's
    std::map<std::string, std::size_t> seen;
    for (std::size_t i = 0; i < files.size(); ++i)
        rank[i] = seen[files[i].part.dir_path()]++;
    std::vector<std::size_t> order(files.size());
    std::iota(order.begin(), order.end(), std::size_t {0});
    // Stable: among the files of one rank, the folders in the order they came.
    std::stable_sort(order.begin(), order.end(), [&rank](std::size_t a, std::size_t b) { return rank[a] < rank[b]; });
    return order;
}
} // namespace

// The part of settle_each that waits on the device (or the server): attributes, sync, close, rename.
std::vector<SmallFileBatch::Settled> SmallFileBatch::settle_files(Group &group)
{
    std::vector<Settled> out(group.files.size());
    const bool together = !needs_job_thread(group);
    const std::vector<std::size_t> order = folders_in_turn(group.files);
    for_each_index(group.files.size(), together ? limits_.settle_threads : 1, [&](std::size_t k) {
        const std::size_t i = order[k];
        BatchedFile &f = group.files[i];
        if (f.to_write) {
            DataToWrite w = std::move(*f.to_write);
            f.to_write.reset();
            if (out[i].synced = write_now(f, std::move(w)); !out[i].synced)
                return;
        }
        if (f.attributes) {
            if (out[i].synced = f.part.set_attributes(f.attributes->mode, f.attributes->mtime); !out[i].synced)
                return;
        }
        if (out[i].synced = f.part.sync_data(); !out[i].synced)
            return;
        drop_written_pages(f.part.fd());
        f.part.close_fd().ignore();
        if (!hooks_.verify)
            out[i].published = commit_when_let(f.part, f.policy, &out[i].final_name, hooks_.before_publish);
    });
    return out;
}

// A to_write file's part file, created and written: on a settle thread, beside the group's other files. Its
// |bytes| become what was written (counted so), whatever fails.
Status SmallFileBatch::write_now(BatchedFile &f, DataToWrite w)
{
    const uint64_t size = std::exchange(f.bytes, 0);
    if (w.stop && w.stop())
        return Status::from_errno(ECANCELED, "copy", f.part.display_path());
    if (Status s = f.part.create_file(f.attributes ? part_mode(f.attributes->mode) : 0600); !s)
        return s;
    if (w.control)
        w.control->beat();
    CopySession session(w.route);
    FileCopyResult copied;
    Status s = copy_small_file_data(w.source.get(), f.part.fd(), size, session, *w.counters, f.part.display_path(),
                                    copied, std::move(w.residency));
    f.bytes = copied.copied;
    if (s && w.control)
        w.control->beat();
    return s;
}

void SmallFileBatch::settle_each(Group &group)
{
    // Each file's sync, close and rename, side by side on a share (BatchLimits::settle_threads): there each is a
    // round trip, and one file after another took 2.6x cp -r + sync onto cifs over a 20 ms link. A search for a
    // free name ("Keep both") or a read-back stays one file at a time. The hooks run here, in the files' order.
    report_settled(group, settle_files(group));
}

// Whether |group| may settle while the job writes the next one: its files side by side (a share), with no
// read-back and no search for a free name, which need the job's thread.
bool SmallFileBatch::settles_in_background(const Group &group) const
{
    return settles_side_by_side() && !needs_job_thread(group);
}

// settle_each with its round trips on a thread of its own: the group's syncs, closes and renames go on while the
// job creates and writes the next group, whose own round trips then overlap them (a share: creating a file is a
// round trip, so is each step of settling one; one after the other, 100 small files onto cifs took 1.23x cp -r +
// sync). Up to kSettlingGroups settle at once, so the share is kept busy while the oldest one's last files and
// its folders' syncs finish: one at a time, the link idled at every group's end. Groups are reported in order,
// on the job's thread.
void SmallFileBatch::settle_in_background(Group group)
{
    // A group written already holds its data in the cache: then one settles at a time, as the dirty budget has
    // room for it and the group being filled (BatchLimits::max_bytes each), not for three.
    const bool written =
        std::any_of(group.files.begin(), group.files.end(), [](const BatchedFile &f) { return !f.to_write; });
    while (!settling_.empty() && (settling_.size() >= kSettlingGroups || written))
        finish_oldest();
    auto settling = std::make_unique<Settling>();
    settling->group = std::move(group);
    Group *g = &settling->group;
    settling->results = std::async(std::launch::async, [this, g] { return settle_files(*g); });
    settling_.push_back(std::move(settling));
}

void SmallFileBatch::finish_oldest()
{
    std::unique_ptr<Settling> done = std::move(settling_.front());
    settling_.pop_front();
    report_settled(done->group, done->results.get());
}

void SmallFileBatch::finish_settling()
{
    while (!settling_.empty())
        finish_oldest();
}

// The hooks for a settled group, in its files' order, and its folders' syncs, which make its renames durable.
void SmallFileBatch::report_settled(Group &group, std::vector<Settled> out)
{
    std::vector<BatchedFile *> named;
    for (std::size_t i = 0; i < group.files.size(); ++i) {
        BatchedFile &f = group.files[i];
        names_.erase(key(f));
        if (!out[i].synced) {
            hooks_.failed(f, std::move(out[i].synced));
            continue;
        }
        f.durable = true;
        hooks_.durable(f);
        if (hooks_.verify)
            out[i].published = publish_synced(f.part, steps_for(f), &out[i].final_name);
        if (!out[i].published) {
            hooks_.failed(f, std::move(out[i].published));
            continue;
        }
        f.target = f.part.dir_path() + "/" + out[i].final_name;
        named.push_back(&f);
    }
    // Each folder once, side by side on a share (a round trip each), while the next group goes on settling.
    std::map<int, std::size_t> dir_index;
    std::vector<const BatchedFile *> dirs;
    for (BatchedFile *f : named) {
        if (dir_index.emplace(f->part.dir()->get(), dirs.size()).second)
            dirs.push_back(f);
    }
    std::vector<Status> dir_synced(dirs.size());
    for_each_index(dirs.size(), limits_.settle_threads, [&](std::size_t i) {
        dir_synced[i] = sync_directory(dirs[i]->part.dir()->get(), dirs[i]->part.dir_path());
    });
    for (BatchedFile *f : named) {
        const Status &s = dir_synced[dir_index[f->part.dir()->get()]];
        if (s)
            hooks_.published(*f);
        else
            hooks_.failed(*f, s.for_path(f->target));
    }
}

void SmallFileBatch::flush()
{
    hand_off();
    finish_settling();
    flush_renamed();
    while (!syncing_.empty()) {
        Group group = std::move(syncing_.front());
        syncing_.pop_front();
        const Status synced = syncer_->wait(group.ticket);
        settle_synced(std::move(group), synced);
    }
    reap_renamed(true);
    reap_names(true);
}

// Part files about to be removed unpublished: closed side by side first where each close sleeps, so a cancel
// does not wait 100 ms a file, and before their names go, so their pages are dropped, not written.
void SmallFileBatch::close_unpublished()
{
    if (!closer_)
        return;
    bool any = false;
    auto take = [&](Group &group) {
        for (BatchedFile &f : group.files) {
            closer_->close(f.part.take_fd());
            any = true;
        }
    };
    take(filling_);
    for (Group &group : syncing_)
        take(group);
    if (any)
        closer_->drain(); // waits for a shared closer's other closes too: at most 100 ms, and only on a cancel
}

void SmallFileBatch::discard()
{
    // Settling already: its files are durable or failed, and reported so.
    finish_settling();
    // The unpublished part files go first, so no syncfs still to come writes them.
    close_unpublished();
    filling_ = {}; // part files go with their PartFile
    syncing_.clear();
    // Durable already: renamed, and reported once their names are durable, like those renamed before.
    reap_renamed(true);
    names_.clear();
    flush_renamed();
    reap_names(true);
}

} // namespace sanecopy
