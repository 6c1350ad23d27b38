// SPDX-License-Identifier: GPL-2.0-or-later
//
// What sanecp prints, kept apart from main() so tests can check it: the terminal progress line and the
// NDJSON records of --json.
#pragma once

#include "copy_job.h"
#include "job_queue.h"

#include <string>
#include <string_view>

namespace sanecopy::cli {

// A JSON string literal, quotes included. Bytes that are not UTF-8 (file names may hold any byte but '/' and
// NUL) become U+FFFD, since JSON text must be UTF-8.
std::string json_string(std::string_view text);

std::string json_progress(const ProgressSnapshot &s);
std::string json_event(const JobEvent &e);
std::string json_done(const JobSummary &summary, const ProgressSnapshot &last);

// What the engine found out about the device behind a destination folder (sanecp --probe), as one JSON object.
std::string json_device(const DeviceInfo &d);

// "1.4 GiB", "512 KiB", "37 B".
std::string human_bytes(double bytes);
// "0:37", "1:02:03", "--:--" when unknown.
std::string human_duration(double seconds);

// One terminal line of |width| columns: a bar with durable bytes ('#') and bytes still in the page cache ('-'),
// then the percentage of durable bytes, the device rate, the ETA and the file count, and, where the bar keeps
// 20 columns, the name of the file being copied (shortened in the middle, never inside a UTF-8 character).
std::string progress_line(const ProgressSnapshot &s, int width);
// What progress_line says in place of the state while the copy has stalled (ProgressSnapshot::stalled_seconds):
// " the share is not responding (0:12)", or the device for a local one.
std::string stall_text(const ProgressSnapshot &s);

// |name| in at most |columns| columns (one per character, which is what most names in a terminal take): the
// head and tail with "…" between them when it is longer. Pure.
std::string fit_name(const std::string &name, int columns);
// fit_name's, padded with spaces to |columns| columns.
std::string padded_name(const std::string &name, int columns);

} // namespace sanecopy::cli
