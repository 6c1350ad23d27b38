// SPDX-License-Identifier: GPL-2.0-or-later
//
// What the worker's parts share (SaneCopyWorker.cpp, WorkerBrowse.cpp, WorkerChange.cpp, WorkerTransfer.cpp);
// not for use outside the worker.
#pragma once

#include "units.h"

#include <KIO/WorkerBase>

#include <QByteArray>
#include <QDateTime>
#include <QUrl>

#include <chrono>
#include <string>
#include <utility>

#include <sys/stat.h>

namespace SaneCopyKio {

using namespace std::chrono_literals;
constexpr auto kProgressPeriod = 200ms;            // KIO passes progress on at about this rate anyway
constexpr std::size_t kReadBlock = sanecopy::kMiB; // get(): one data() message per block

KIO::WorkerResult malformed(const QUrl &url);
std::string toStd(const QByteArray &bytes);
QByteArray fromStd(const std::string &s);
// (folder, name) of an absolute path; ("/", name) at the root.
std::pair<QByteArray, QByteArray> splitPath(const QByteArray &path);
// fsync on the folder holding |path|, so a new or renamed name in it survives a pulled stick. Best effort: the
// operation itself succeeded, and KIO has no way to say "done, but maybe not durable".
void syncParent(const QByteArray &path);
bool isDir(const QByteArray &path);
struct timespec toTimespec(const QDateTime &t);

} // namespace SaneCopyKio
