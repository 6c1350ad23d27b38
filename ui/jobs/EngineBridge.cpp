// SPDX-License-Identifier: GPL-2.0-or-later
#include "EngineBridge.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <algorithm>
#include <future>
#include <mutex>
#include <thread>

namespace SaneCopy {

struct EngineBridge::Pending {
    std::promise<int> promise;
    std::once_flag once;
    void answer(int value)
    {
        std::call_once(once, [&] { promise.set_value(value); });
    }
};

namespace {
JobProgress toProgress(const sanecopy::ProgressSnapshot &s)
{
    JobProgress p;
    p.jobId = s.job_id;
    p.state = int(s.state);
    p.totalBytes = qint64(s.total_bytes);
    p.durableBytes = qint64(s.durable_bytes);
    p.writtenBytes = qint64(s.written_bytes);
    p.unwrittenBytes = qint64(s.unwritten_bytes);
    p.filesDone = qint64(s.files_done);
    p.filesTotal = qint64(s.files_total);
    p.currentFile = QString::fromStdString(s.current_file);
    p.deviceRate = s.device_bytes_per_sec;
    p.etaSeconds = s.eta_seconds;
    p.ownDirtyBytes = s.own_dirty_bytes;
    p.elapsedSeconds = s.elapsed_seconds;
    p.stalledSeconds = s.stalled_seconds;
    p.share = s.share;
    return p;
}

QString qs(const std::string &s) { return QString::fromStdString(s); }
} // namespace

// Lives on the engine's threads; everything it learns is posted to the bridge's thread.
class EngineBridge::Observer : public sanecopy::JobObserver {
public:
    explicit Observer(EngineBridge *bridge) : bridge_(bridge) {}

    void on_progress(const sanecopy::ProgressSnapshot &s) override
    {
        post([p = toProgress(s)](EngineBridge *b) { Q_EMIT b->progress(p); });
    }
    void on_event(uint64_t jobId, const sanecopy::JobEvent &e) override
    {
        using K = sanecopy::JobEvent::Kind;
        const QString source = qs(e.path), target = qs(e.target), message = qs(e.message);
        switch (e.kind) {
        case K::FileDone:
            post([=](EngineBridge *b) { Q_EMIT b->fileDone(jobId, source, target); });
            break;
        case K::Skipped:
            post([=](EngineBridge *b) { Q_EMIT b->skipped(jobId, source, message); });
            break;
        case K::Error:
            post([=](EngineBridge *b) { Q_EMIT b->failed(jobId, source, message); });
            break;
        case K::Done:
            break;
        }
    }
    void on_finished(uint64_t jobId, const sanecopy::JobSummary &s) override
    {
        post([=](EngineBridge *b) {
            if (s.device_removed)
                Q_EMIT b->deviceRemoved(jobId);
            Q_EMIT b->finished(jobId, s.ok(), s.cancelled, qint64(s.bytes), qint64(s.files_copied), qint64(s.errors));
        });
    }

private:
    template <typename Fn>
    void post(const Fn &fn)
    {
        QPointer<EngineBridge> guard(bridge_);
        QMetaObject::invokeMethod(
            bridge_,
            [guard, fn] {
                if (guard)
                    fn(guard.data());
            },
            Qt::QueuedConnection);
    }
    EngineBridge *bridge_;
};

EngineBridge::EngineBridge(QObject *parent, double tickSeconds)
    : QObject(parent), queue_(std::make_unique<sanecopy::JobQueue>(tickSeconds))
{
    qRegisterMetaType<SaneCopy::JobProgress>();
    qRegisterMetaType<SaneCopy::PlanSummary>();
}

EngineBridge::~EngineBridge()
{
    // Unblock any job waiting for an answer before the queue cancels and joins them.
    {
        std::lock_guard lock(askedMutex_);
        for (auto &weak : asked_)
            if (auto p = weak.lock())
                p->answer(-1);
    }
    queue_.reset();
}

int EngineBridge::ask(const std::function<void(quint64)> &post, int answerIfGone)
{
    auto pending = std::make_shared<Pending>();
    std::future<int> answer = pending->promise.get_future();
    {
        std::lock_guard lock(askedMutex_);
        asked_.erase(std::remove_if(asked_.begin(), asked_.end(), [](const auto &w) { return w.expired(); }),
                     asked_.end());
        asked_.push_back(pending);
    }
    QPointer<EngineBridge> guard(this);
    QMetaObject::invokeMethod(
        this,
        [guard, pending, post] {
            if (!guard) {
                pending->answer(-1);
                return;
            }
            const quint64 id = guard->nextQuestion_++;
            guard->pending_.insert(id, pending);
            post(id);
        },
        Qt::QueuedConnection);
    const int value = answer.get();
    return value < 0 ? answerIfGone : value;
}

// The engine's spec for |options|, without the questions (submit() adds those).
static sanecopy::JobSpec specFor(const EngineBridge::Options &options)
{
    sanecopy::JobSpec spec;
    for (const QByteArray &s : options.sources)
        spec.sources.push_back(s.toStdString());
    spec.destination = options.destination.toStdString();
    spec.conflict = sanecopy::ConflictPolicy(options.conflict);
    spec.verify = options.verify;
    spec.rename_invalid = options.renameInvalid;
    spec.move = options.move;
    spec.manifest = options.manifest;
    spec.resume = options.resume;
    spec.fit_to_space = options.fitToSpace;
    spec.source_share = options.share;
    spec.share_member = options.shareMember;
    return spec;
}

quint64 EngineBridge::submit(const Options &options)
{
    sanecopy::JobSpec spec = specFor(options);

    // The job's id is known only after submit; the callbacks read it from here.
    auto jobIdBox = std::make_shared<std::atomic<quint64>>(0);
    if (options.askOnConflict) {
        spec.ask_conflict = [this, jobIdBox](const sanecopy::ConflictQuestion &q) {
            // regression: a job can ask before submit() has returned its id; "apply to all" is kept per id.
            jobIdBox->wait(0);
            const quint64 job = jobIdBox->load();
            const QString source = qs(q.source), target = qs(q.target);
            const qint64 ss = qint64(q.source_size), ts = qint64(q.target_size);
            const bool dir = q.target_is_dir;
            const auto when = [](const struct timespec &t) {
                return QDateTime::fromMSecsSinceEpoch(qint64(t.tv_sec) * 1000 + t.tv_nsec / 1000000);
            };
            const QDateTime sm = when(q.source_mtime), tm = when(q.target_mtime);
            return sanecopy::ConflictAnswer(
                ask([this, job, source, target, ss, ts, dir, sm,
                     tm](quint64 id) { Q_EMIT conflictAsked(job, id, source, target, ss, ts, dir, sm, tm); },
                    int(sanecopy::ConflictAnswer::Cancel)));
        };
    }
    if (options.askOnError) {
        spec.ask_error = [this, jobIdBox](const sanecopy::Status &s, const std::string &source) {
            jobIdBox->wait(0);
            const quint64 job = jobIdBox->load();
            const QString src = qs(source), message = qs(s.message());
            return sanecopy::ErrorAnswer(
                ask([this, job, src, message](quint64 id) { Q_EMIT errorAsked(job, id, src, message); },
                    int(sanecopy::ErrorAnswer::Abort)));
        };
    }
    auto job = queue_->submit(std::move(spec), std::make_shared<Observer>(this));
    jobIdBox->store(job->id());
    jobIdBox->notify_all();
    jobs_.insert(job->id(), job);
    return job->id();
}

void EngineBridge::pause(quint64 jobId)
{
    if (auto job = jobs_.value(jobId))
        job->pause();
}

void EngineBridge::resume(quint64 jobId)
{
    if (auto job = jobs_.value(jobId))
        job->resume();
}

void EngineBridge::cancel(quint64 jobId)
{
    if (auto job = jobs_.value(jobId))
        job->cancel();
}

void EngineBridge::answerConflict(quint64 questionId, int answer)
{
    if (auto p = pending_.take(questionId))
        p->answer(answer);
}

void EngineBridge::answerError(quint64 questionId, int answer)
{
    if (auto p = pending_.take(questionId))
        p->answer(answer);
}

void EngineBridge::discardAsync(quint64 requestId, const Options &options)
{
    QPointer<EngineBridge> guard(this);
    // It walks the source tree and looks at the device: never on the GUI thread.
    std::thread([guard, requestId, spec = specFor(options)] {
        const sanecopy::DiscardResult result = sanecopy::discard_unfinished(spec);
        QStringList errors;
        for (const sanecopy::Status &s : result.errors)
            errors << qs(s.message());
        const qint64 removed = qint64(result.removed);
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [guard, requestId, removed, errors] {
                if (guard)
                    Q_EMIT guard->discarded(requestId, removed, errors);
            },
            Qt::QueuedConnection);
    }).detach();
}

namespace {
// The space line for one way of dealing with the names taken and, without room for everything, what "copy what
// fits" would copy; all counted in the plan's one walk.
PlanSummary::Room roomOf(const sanecopy::JobPlan &plan, sanecopy::JobPlan::TakenNames how)
{
    const sanecopy::JobPlan::Room &r = plan.room(how);
    PlanSummary::Room room;
    room.files = qint64(r.files);
    if (r.space.ok())
        return room;
    room.problem = QString::fromStdString(r.space.message());
    room.fitFiles = qint64(r.fit_files);
    room.fitBytes = qint64(r.fit_bytes);
    return room;
}
} // namespace

const PlanSummary::Room &PlanSummary::roomFor(int policy) const
{
    return policy == int(sanecopy::ConflictPolicy::Skip)        ? roomIfSkipped
           : policy == int(sanecopy::ConflictPolicy::Overwrite) ? roomIfReplaced
                                                                : room;
}

QStringList PlanSummary::problemsFor(int policy) const
{
    const Room &r = roomFor(policy);
    return r.problem.isEmpty() ? problems : QStringList {r.problem} + problems;
}

namespace {

// The names the plan found taken, as the plan dialog lists them: relative to the destination.
QList<PlanSummary::Taken> takenNames(const sanecopy::JobPlan &plan, const std::string &destination)
{
    const auto timeOf = [](const struct timespec &t) {
        return QDateTime::fromMSecsSinceEpoch(qint64(t.tv_sec) * 1000 + t.tv_nsec / 1000000);
    };
    const std::string below = destination + (destination.ends_with('/') ? "" : "/");
    QList<PlanSummary::Taken> list;
    for (const auto &t : plan.taken) {
        PlanSummary::Taken taken;
        const std::string rel = t.target.starts_with(below) ? t.target.substr(below.size()) : t.target;
        taken.name = displayPath(QByteArray::fromStdString(rel));
        taken.target = displayPath(QByteArray::fromStdString(t.target));
        taken.sourceSize = qint64(t.source_size);
        taken.targetSize = qint64(t.existing.size);
        taken.sourceTime = timeOf(t.source_mtime);
        taken.targetTime = timeOf(t.existing.mtime);
        taken.targetIsDir = t.existing.is_dir;
        list.append(taken);
    }
    return list;
}

// The plan of |spec| as the window shows it. Walks the tree: never on the GUI thread.
PlanSummary summarize(const sanecopy::JobSpec &spec)
{
    const sanecopy::JobPlan plan = sanecopy::plan_job(spec);
    PlanSummary summary;
    for (const sanecopy::Status &s : plan.errors)
        summary.problems << qs(s.message());
    for (const auto &entry : plan.left_out) {
        summary.problems << qs(entry.path + ": " + entry.why);
        summary.badNames += entry.reason == sanecopy::LeftOut::RefusedName;
    }
    summary.totalBytes = qint64(plan.total_bytes);
    summary.files = qint64(plan.files);
    summary.mountPoint = qs(plan.device.mount_point);
    summary.blockDevice = qs(plan.device.block_device);
    summary.removable = plan.device.removable;
    if (!plan.items.empty())
        summary.firstTarget = qs(plan.items.front().item.target_dir + '/' + plan.items.front().item.target_name);
    summary.taken = takenNames(plan, spec.destination);
    using How = sanecopy::JobPlan::TakenNames;
    summary.room = roomOf(plan, How::AskedOrKept);
    summary.roomIfSkipped = roomOf(plan, How::Skipped);
    summary.roomIfReplaced = roomOf(plan, How::Replaced);
    return summary;
}

} // namespace

void EngineBridge::planAsync(quint64 requestId, const PathList &sources, const QByteArray &destination)
{
    sanecopy::JobSpec spec;
    for (const QByteArray &s : sources)
        spec.sources.push_back(s.toStdString());
    spec.destination = destination.toStdString();
    QPointer<EngineBridge> guard(this);
    // Walking a tree may take a while: never on the GUI thread.
    std::thread([guard, requestId, spec] {
        const PlanSummary summary = summarize(spec);
        // The application object outlives this thread; the bridge may not, hence the guard checked over there.
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [guard, requestId, summary] {
                if (guard)
                    Q_EMIT guard->planned(requestId, summary);
            },
            Qt::QueuedConnection);
    }).detach();
}

} // namespace SaneCopy
