// SPDX-License-Identifier: GPL-2.0-or-later
#include "JobJournal.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>
#include <QUuid>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace SaneCopy {

namespace {

constexpr int kVersion = 1;
const QString kRecordSuffix = QStringLiteral(".json");

// Paths are bytes (Paths.h); JSON holds text. Percent-encoding keeps every byte and stays readable.
QString encodePath(const QByteArray &path) { return QString::fromLatin1(path.toPercentEncoding("/")); }
QByteArray decodePath(const QJsonValue &v) { return QByteArray::fromPercentEncoding(v.toString().toLatin1()); }

// The copy's yes/no choices, each under its name in the record and in EngineBridge::Options: the one place a
// new choice is added to make it survive a crash.
struct Choice {
    QLatin1String key;
    bool JournalEntry::*entry;
    bool EngineBridge::Options::*option;
};
const Choice kChoices[] = {
    {QLatin1String("verify"), &JournalEntry::verify, &EngineBridge::Options::verify},
    {QLatin1String("renameInvalid"), &JournalEntry::renameInvalid, &EngineBridge::Options::renameInvalid},
    {QLatin1String("move"), &JournalEntry::move, &EngineBridge::Options::move},
    {QLatin1String("manifest"), &JournalEntry::manifest, &EngineBridge::Options::manifest},
    // "Copy What Fits": resumed, it copies what fits again
    {QLatin1String("fitToSpace"), &JournalEntry::fitToSpace, &EngineBridge::Options::fitToSpace},
};

QByteArray toJson(const JournalEntry &e)
{
    QJsonArray sources;
    for (const QByteArray &s : e.sources)
        sources.append(encodePath(s));
    QJsonObject o {{QStringLiteral("version"), kVersion},
                   {QStringLiteral("sources"), sources},
                   {QStringLiteral("destination"), encodePath(e.destination)},
                   {QStringLiteral("queued"), e.queued.toString(Qt::ISODate)},
                   {QStringLiteral("conflict"), e.conflict}};
    for (const Choice &c : kChoices)
        o.insert(c.key, e.*c.entry);
    return QJsonDocument(o).toJson();
}

// False for a record this version can't read: it is left alone, not offered and not removed.
bool fromJson(const QByteArray &json, JournalEntry &e)
{
    const QJsonObject o = QJsonDocument::fromJson(json).object();
    if (o.value(QStringLiteral("version")).toInt() != kVersion)
        return false;
    const QJsonArray sources = o.value(QStringLiteral("sources")).toArray();
    for (const auto &s : sources)
        e.sources << decodePath(s);
    e.destination = decodePath(o.value(QStringLiteral("destination")));
    e.queued = QDateTime::fromString(o.value(QStringLiteral("queued")).toString(), Qt::ISODate);
    e.conflict = o.value(QStringLiteral("conflict")).toInt(-1); // absent in records of earlier versions: ask
    for (const Choice &c : kChoices)
        e.*c.entry = o.value(c.key).toBool();
    return !e.sources.isEmpty() && !e.destination.isEmpty();
}

} // namespace

JobJournal::JobJournal(const QString &folder) : folder_(folder.isEmpty() ? defaultFolder() : folder) {}

JobJournal::~JobJournal()
{
    for (int fd : std::as_const(locks_))
        ::close(fd);
}

QString JobJournal::defaultFolder()
{
    // QStandardPaths knows the state folder only from Qt 6.7 on; the XDG rule is short enough to follow here.
    QString state = QFile::decodeName(qgetenv("XDG_STATE_HOME"));
    if (state.isEmpty() || QDir::isRelativePath(state))
        state = QDir::homePath() + QStringLiteral("/.local/state");
    return state + QStringLiteral("/sanecopy/jobs");
}

QString JobJournal::recordPath(const QString &key) const { return folder_ + QLatin1Char('/') + key + kRecordSuffix; }
QString JobJournal::lockPath(const QString &key) const
{
    return folder_ + QLatin1Char('/') + key + QStringLiteral(".lock");
}

bool JobJournal::lock(const QString &key)
{
    const int fd = ::open(QFile::encodeName(lockPath(key)).constData(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        error_ = QString::fromLocal8Bit(std::strerror(errno));
        return false;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) < 0) {
        ::close(fd);
        return false;
    }
    locks_.insert(key, fd);
    return true;
}

QString JobJournal::record(JournalEntry entry)
{
    if (!QDir().mkpath(folder_)) {
        error_ = QStringLiteral("cannot create %1").arg(folder_);
        return {};
    }
    QString key = QUuid::createUuid().toString(QUuid::WithoutBraces);
    // Held before the record exists, so no other window ever sees it unheld.
    if (!lock(key))
        return {};
    if (!entry.queued.isValid())
        entry.queued = QDateTime::currentDateTime();
    QSaveFile file(recordPath(key));
    if (!file.open(QIODevice::WriteOnly) || file.write(toJson(entry)) < 0 || !file.commit()) {
        error_ = file.errorString();
        forget(key);
        return {};
    }
    return key;
}

void JobJournal::forget(const QString &key)
{
    if (key.isEmpty())
        return;
    QFile::remove(recordPath(key));
    // The lock file goes while still held, so a window looking at the folder now finds neither.
    QFile::remove(lockPath(key));
    release(key);
}

void JobJournal::release(const QString &key)
{
    if (auto it = locks_.find(key); it != locks_.end()) {
        ::close(it.value());
        locks_.erase(it);
    }
}

QList<JournalEntry> JobJournal::claimUnfinished()
{
    QList<JournalEntry> found;
    const QStringList names =
        QDir(folder_).entryList({QLatin1Char('*') + kRecordSuffix}, QDir::Files, QDir::Time | QDir::Reversed);
    for (const QString &name : names) {
        const QString key = name.chopped(kRecordSuffix.size());
        if (locks_.contains(key) || !lock(key))
            continue; // ours already, or a running window's
        QFile file(recordPath(key));
        JournalEntry entry;
        if (!file.open(QIODevice::ReadOnly)) {
            // Finished meanwhile, between the listing and the lock: the lock file this made goes too.
            if (!file.exists())
                QFile::remove(lockPath(key));
            release(key);
            continue;
        }
        if (!fromJson(file.readAll(), entry)) {
            release(key); // another version's record: left alone
            continue;
        }
        entry.key = key;
        found << entry;
    }
    return found;
}

JournalEntry journalEntryFor(const EngineBridge::Options &o)
{
    JournalEntry e;
    e.sources = o.sources;
    e.destination = o.destination;
    e.conflict = o.askOnConflict ? -1 : o.conflict;
    for (const Choice &c : kChoices)
        e.*c.entry = o.*c.option;
    return e;
}

EngineBridge::Options optionsFor(const JournalEntry &e)
{
    EngineBridge::Options o;
    o.sources = e.sources;
    o.destination = e.destination;
    if (e.conflict >= 0) {
        o.conflict = e.conflict;
        o.askOnConflict = false;
    }
    for (const Choice &c : kChoices)
        o.*c.option = e.*c.entry;
    return o;
}

} // namespace SaneCopy
