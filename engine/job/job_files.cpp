// SPDX-License-Identifier: GPL-2.0-or-later
// One regular file of a job: small ones into the batch, big ones through a part file that a later run resumes.
#include "job_runner.h"

#include "i18n.h"
#include "sys.h"
#include "verify.h"

#include <fcntl.h>
#include <sys/stat.h>

namespace sanecopy {

namespace job_detail {

void JobRunner::copy_file_with_retries(FileTask &task)
{
    if (!settle_conflict(task))
        return;
    for (;;) {
        AttemptBytes bytes;
        Status s = copy_file(task, bytes);
        if (s.ok())
            return;
        take_back(bytes);
        if (s.err() == ECANCELED)
            return;
        // A pulled stick is not a question: nothing the user answers brings it back into this copy.
        s = explain(std::move(s));
        if (!spec_.ask_error || s.device_removed())
            return report_error(std::move(s), task.source);
        switch (spec_.ask_error(s, task.source)) {
        case ErrorAnswer::Retry:
            continue;
        case ErrorAnswer::Skip:
            return report_skip(task.source, s.message(), LeftOut::AfterError);
        case ErrorAnswer::Abort:
            report_error(std::move(s), task.source);
            aborted_ = true;
            return;
        }
    }
}

Status JobRunner::open_source(FileTask &task, UniqueFd &in, struct stat &st)
{
    task.residency.reset();
    if (task.prefetched) {
        in = std::move(task.prefetched->fd);
        st = task.prefetched->st;
        task.residency = std::move(task.prefetched->residency);
        task.prefetched.reset();
        return {};
    }
    // O_NONBLOCK: if the file was swapped for a FIFO since the walk, opening it must not wait for a writer.
    in.reset(sys().openat(task.src_dir->get(), task.src_name.c_str(),
                          O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0));
    if (!in)
        return Status::source(errno, "open source", task.source);
    if (sys().fstat(in.get(), &st) < 0)
        return Status::source(errno, "stat source", task.source);
    if (S_ISREG(st.st_mode)) {
        sys().fcntl_setfl(in.get(), O_RDONLY);
        // What of it was cached before the copy reads it, told by the stat just made: not asked again there.
        task.residency = residency_of(task.source, in.get(), st);
    }
    return {};
}

Status JobRunner::copy_file(FileTask &task, AttemptBytes &bytes)
{
    UniqueFd in;
    struct stat st {};
    if (Status s = open_source(task, in, st); !s)
        return s;
    if (!S_ISREG(st.st_mode)) {
        report_skip(task.source, special_file_reason(st.st_mode), LeftOut::SpecialFile);
        return {};
    }
    counters_.set_current_file(task.source);
    const uint64_t size = uint64_t(st.st_size);
    if (size <= spec_.small_file_limit && syncs())
        return copy_small(task, std::move(in), size, bytes);
    // One of the two at a time keeps durability in order and the dirty budget to one of them.
    batch_->flush();
    if (stopping()) // the flush waited for a plan counted beside the run, which found too little room
        return Status::from_errno(ECANCELED, "copy", task.source);
    return copy_big(task, in, st, bytes);
}

// Onto a share the part file is created and written where its group settles, side by side with the others:
// here only the source is opened. A failure there is reported as the file's error, as a failed sync is, and not
// asked about (Retry, Skip): the group has gone on without it.
Status JobRunner::write_side_by_side(FileTask &task, UniqueFd in, uint64_t size)
{
    BatchedFile f;
    f.part = PartFile::to_create(task.dst_dir, task.dst_display, task.dst_name);
    f.source = task.source;
    f.bytes = size;
    f.policy = task.policy;
    f.note = task.note;
    f.source_dir = task.src_dir;
    f.source_name = task.src_name;
    f.stamp = source_stamp(task.entry);
    f.attributes = PendingAttributes {task.entry.mode, task.entry.mtime};
    f.to_write = DataToWrite {
        std::move(in), session_.route, &counters_, std::move(task.residency), &control_, [this] { return stopping(); }};
    batch_->add(std::move(f));
    return {};
}

Status JobRunner::copy_small(FileTask &task, UniqueFd in, uint64_t size, AttemptBytes &bytes)
{
    if (batch_->writes_side_by_side(task.policy) && !hashes())
        return write_side_by_side(task, std::move(in), size);
    // Created with its final permission bits, so most files need no fchmod; set_attributes settles the rest.
    Result<PartFile> part = PartFile::create(task.dst_dir, task.dst_display, task.dst_name, part_mode(task.entry.mode));
    if (!part.ok())
        return part.status();
    // On a share the server has just answered (a create is a round trip): the copy moves, though nothing it counts
    // has (stall_watch.h), while a group of these settles or waits to.
    if (counters_.share.load())
        control_.beat();
    FileCopyResult copied;
    SourceHash hash;
    session_.hash = hashes() ? &hash : nullptr;
    Status s = copy_small_file_data(in.get(), part->fd(), size, session_, counters_, part->display_path(), copied,
                                    std::move(task.residency));
    session_.hash = nullptr;
    bytes.written = copied.copied;
    std::optional<Sha256Digest> digest;
    if (s)
        s = finish_hash(hash, in.get(), copied.copied, task.source, digest);
    // On a share, setting the attributes is a round trip: there they are set beside the group's syncs.
    std::optional<PendingAttributes> later;
    if (batch_->settles_side_by_side())
        later = PendingAttributes {task.entry.mode, task.entry.mtime};
    else if (s)
        s = part->set_attributes(task.entry.mode, task.entry.mtime);
    if (!s)
        return s; // the part file is removed as |part| goes
    // The batch holds the part's descriptor until its group is durable; the source's only when verify needs it.
    batch_->add({std::move(part.value()),
                 task.source,
                 copied.copied,
                 task.policy,
                 spec_.verify ? std::move(in) : UniqueFd(),
                 task.note,
                 {},
                 false,
                 digest,
                 task.src_dir,
                 task.src_name,
                 later,
                 {},
                 source_stamp(task.entry)});
    return {};
}

// How much of a part file holds the source's bytes (resume_point), read back while the job pauses, beats and
// stops as a copy does. The rate measured before does not span the comparison.
uint64_t JobRunner::compared_prefix(int in, uint64_t size, int part, uint64_t have)
{
    const uint64_t prefix = resume_point(in, size, part, have, session_.limits, [this] { return go_on_reading(); });
    session_.meter.restart_clock(monotonic_seconds(), session_.durable_total);
    return prefix;
}

// A source changed since the part file was last written is copied afresh, as its user would expect, without
// reading the part back. The times come from two clocks (a NAS's may lag): the comparison of every byte is what
// makes a resume right, not this.
static bool changed_since(const struct stat &source, int part)
{
    struct stat part_st {};
    return sys().fstat(part, &part_st) < 0 || timespec_after(source.st_mtim, part_st.st_mtim) ||
           timespec_after(source.st_ctim, part_st.st_mtim);
}

// A part file an interrupted run left (SIGKILL, a crash, a pulled stick) is resumed from its verified prefix;
// otherwise a new one is created. |start| says where the copy goes on.
Result<PartFile> JobRunner::resume_or_create(const FileTask &task, int in, const struct stat &st, uint64_t &start)
{
    start = 0;
    if (syncs()) {
        // Most copies find no part file: a new one is tried first. On a share that is one round trip before the
        // first byte instead of two (a failed open, then the create).
        Result<PartFile> fresh =
            PartFile::create(task.dst_dir, task.dst_display, task.dst_name, part_mode(task.entry.mode), false);
        if (fresh.ok() || fresh.status().err() != EEXIST)
            return fresh;
        uint64_t have = 0;
        Result<PartFile> part = PartFile::reopen(task.dst_dir, task.dst_display, task.dst_name, have);
        if (part.ok() && !changed_since(st, part->fd())) {
            auto reader = part->open_for_reading();
            start = reader.ok() ? compared_prefix(in, uint64_t(st.st_size), reader->get(), have) : 0;
            // Stopped while comparing: nothing is decided, and an interrupt keeps the part file as it was.
            if (stopping()) {
                if (control_.keeps_partial())
                    part->keep();
                start = 0;
                return Status::from_errno(ECANCELED, "resume", task.source);
            }
            // Whatever lies past the verified prefix is not trusted: cut it off.
            if (start > 0 && sys().ftruncate(part->fd(), off_t(start)) == 0)
                return part;
            start = 0;
        }
    }
    return PartFile::create(task.dst_dir, task.dst_display, task.dst_name, part_mode(task.entry.mode));
}

Status JobRunner::copy_big(FileTask &task, const UniqueFd &in, const struct stat &st, AttemptBytes &bytes)
{
    const uint64_t size = uint64_t(st.st_size);
    uint64_t start = 0;
    Result<PartFile> part = resume_or_create(task, in.get(), st, start);
    if (!part.ok())
        return part.status();
    PartFile &pf = part.value();
    // A sparse source is not reserved: reserving its whole size would fill its holes. Nor is a file where
    // reserving costs more than it finds (reserves_space_up_front: shares, FAT); the plan checked the free space.
    const bool sparse = uint64_t(st.st_blocks) * 512 < size;
    if (!sparse && reserves_space_up_front(device_)) {
        if (Status rs = reserve_space(pf, start, size); !rs)
            return rs;
    }
    FileCopyResult copied;
    std::optional<Sha256Digest> digest;
    Status s = fill_part(task, in.get(), size, pf, start, copied, digest);
    bytes = {copied.copied, copied.durable, copied.unwritten};
    if (!s)
        return part_failed(pf, std::move(s)); // unless kept, the part file is removed as |part| goes
    return publish_big(task, in.get(), pf, start, copied, digest, bytes);
}

// After the device failed (EIO, the stick pulled out), or when the job was interrupted rather than cancelled,
// what is on it stays as a part file for the next run to resume; any other failure takes its part file away
// (ENOSPC: so the space comes back).
Status JobRunner::part_failed(PartFile &part, Status error)
{
    const bool failed_there = error.on_destination() && keeps_part_file(error.err());
    if (!failed_there && !(error.err() == ECANCELED && control_.keeps_partial()))
        return error;
    // A share's client writes again what it could not send when the file is closed, and waits for the server as
    // long again (NFS, soft mount, link gone: 30 s more after the 54 s the failed sync took). Nothing waits for
    // that close: not the error, not the job's end, not the process's exit.
    if (failed_there && is_network_share(device_))
        close_unwaited(part.take_fd());
    part.keep();
    return error;
}

// A big file's bytes into its part file from |start|, with its digest and attributes.
Status JobRunner::fill_part(const FileTask &task, int in, uint64_t size, PartFile &part, uint64_t start,
                            FileCopyResult &copied, std::optional<Sha256Digest> &digest)
{
    session_.checkpoint =
        syncs() ? make_checkpoint(part, device_.data_sync, device_.writeback) : std::function<Status()>();
    SourceHash hash;
    session_.hash = hashes() ? &hash : nullptr;
    // Where the last close of a written descriptor sleeps 100 ms (vfat "flush"), the job's end waited for the big
    // file's close, handed over after its rename (13.22 s for 120 MiB on the VM's stick, 13.11 s without flush).
    // Its syncs need no written descriptor: they go through a read-only one, and the written one is closed on the
    // closer once the last byte is written, its sleep beside the last windows' waits and the publish.
    // Without the second descriptor (it could not be opened), the copy goes on as elsewhere. Not where windows are
    // synced by msync (ChunkSync): a shared map of a read-only descriptor is not shared, and its msync syncs nothing.
    UniqueFd sync_fd;
    if (closer_ && syncs() && device_.writeback == WritebackMode::Windows) {
        if (Result<UniqueFd> read_only = part.open_for_reading(); read_only.ok())
            sync_fd = std::move(read_only.value());
    }
    if (sync_fd.valid()) {
        session_.sync_fd = sync_fd.get();
        session_.writes_done = [&] { closer_->close(part.exchange_fd(std::move(sync_fd))); };
    }
    Status s = copy_file_data(in, part.fd(), size, session_, control_, counters_, part.display_path(), copied, start,
                              task.residency);
    session_.sync_fd = -1;
    session_.writes_done = nullptr;
    session_.checkpoint = nullptr;
    session_.hash = nullptr;
    if (s)
        s = finish_hash(hash, in, copied.copied, task.source, digest);
    if (s)
        s = part.set_attributes(task.entry.mode, task.entry.mtime);
    return s;
}

// The filled part file durable under its real name (verified first when the spec asks), then reported.
Status JobRunner::publish_big(const FileTask &task, int in, PartFile &part, uint64_t start,
                              const FileCopyResult &copied, const std::optional<Sha256Digest> &digest,
                              AttemptBytes &bytes)
{
    PublishSteps steps {syncs(), device_.data_sync, task.policy, {}, {}};
    // Onto a share each window was synced to the server as it went (a COMMIT, an SMB flush, an SFTP fsync, each of
    // the whole file, its size too), and the last one before this: one more sync only waits a round trip (cifs:
    // 26 ms, after the attributes' own 62). Not after a hole: a trailing one sets the size after the last window.
    // Nor for a resumed file this run wrote nothing of: no window synced it in this run. What the server keeps of
    // the time just set is as durable there as the rename's new name, which no share lets a client sync.
    steps.data_durable = copied.durable == copied.copied && copied.copied > start && copied.unwritten == start &&
                         device_.writeback == WritebackMode::ChunkSync && is_network_share(device_);
    steps.on_durable = [&] {
        session_.count_durable(copied.copied - copied.durable, counters_);
        bytes.durable = copied.copied;
    };
    if (spec_.verify)
        steps.verify = [&](const PartFile &p) { return verify_part(p, in, copied.copied); };
    if (counting_.valid())
        steps.before_commit = [this] { return wait_for_plan(); };
    std::string final_name;
    if (Status ps = publish(part, steps, &final_name); !ps)
        return part.committed() ? ps : part_failed(part, std::move(ps)); // a failed folder sync comes after the rename
    // Durable under its name: the close's 100 ms sleep need not be waited for. Unless the written descriptor went
    // with the last byte (fill_part): a read-only one's close does not sleep, and the closer would start a thread
    // for it beside the one still sleeping; it is closed with the part file then.
    if (closer_ && !part.holds_read_only())
        closer_->close(part.take_fd());
    std::string notes = task.note;
    if (start > 0)
        notes =
            join_notes(notes, counters_.share.load() ? i18n("resumed after %1 MiB already on the share", start >> 20)
                                                     : i18n("resumed after %1 MiB already on the device", start >> 20));
    if (spec_.move)
        remove_source(task.src_dir, task.src_name, task.source, source_stamp(task.entry));
    report_done(task.source, task.dst_display + "/" + final_name, copied.copied, notes, digest);
    return {};
}

// The digest of what was copied, when the spec asks for one: the parts the copy did not read (a clone, a resumed
// prefix, holes) are read from the source now.
Status JobRunner::finish_hash(SourceHash &hash, int in, uint64_t copied, const std::string &source,
                              std::optional<Sha256Digest> &digest)
{
    if (!hashes())
        return {};
    Result<Sha256Digest> d = hash.finish(in, copied, source);
    if (!d.ok())
        return d.status();
    digest = d.value();
    return {};
}

Status JobRunner::verify_part(const PartFile &part, int source, uint64_t size)
{
    auto reader = part.open_for_reading();
    if (!reader.ok())
        return reader.status();
    counters_.set_current_file(part.display_path() + " (verifying)");
    // The time spent reading back stays in the rate: with verify on, it is part of every file's cost.
    return verify_copy(source, reader->get(), size, part.display_path(), session_.route.evict,
                       [this] { return go_on_reading(); });
}

} // namespace job_detail

} // namespace sanecopy
