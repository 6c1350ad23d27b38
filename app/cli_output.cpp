// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli_output.h"

#include "i18n.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace sanecopy::cli {

namespace {

// Length of the valid UTF-8 sequence at |s|, or 0 when it is not one.
size_t utf8_sequence(std::string_view s)
{
    const auto c = static_cast<unsigned char>(s[0]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || len > s.size())
        return 0;
    for (size_t i = 1; i < len; ++i)
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80)
            return 0;
    return len;
}

// Terminal columns of UTF-8 text: one a character (the words of every language SaneCopy speaks are narrow).
int columns(std::string_view text)
{
    return int(
        std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// |text| cut to its first |width| columns, never inside a character.
void cut_to_columns(std::string &text, int width)
{
    int seen = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80 && seen++ == std::max(width, 0)) {
            text.resize(i);
            return;
        }
    }
}

std::string number(double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
}

} // namespace

std::string json_string(std::string_view text)
{
    std::string out = "\"";
    for (size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
            ++i;
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
            ++i;
        } else if (size_t n = utf8_sequence(text.substr(i)); n > 0) {
            out.append(text.substr(i, n));
            i += n;
        } else {
            out += "\xEF\xBF\xBD";
            ++i;
        }
    }
    return out + "\"";
}

namespace {

const char *json_bool(bool b) { return b ? "true" : "false"; }

} // namespace

std::string json_device(const DeviceInfo &d)
{
    auto optional = [](const std::optional<uint64_t> &v) { return v ? std::to_string(*v) : std::string("null"); };
    const char *mode = d.writeback == WritebackMode::None      ? "none"
                       : d.writeback == WritebackMode::Windows ? "windows"
                                                               : "chunk-sync";
    std::string out = "{\"type\":\"device\"";
    out += ",\"mount_point\":" + json_string(d.mount_point);
    out += ",\"fs_type\":" + json_string(d.fs_type);
    out += ",\"fs_subtype\":" + json_string(d.fs_subtype);
    out += ",\"block_device\":" + json_string(d.block_device);
    out += ",\"disk\":" + json_string(d.disk);
    out += ",\"bdi\":" + json_string(d.bdi);
    out += ",\"transport\":" + json_string(d.transport);
    out += std::string(",\"removable\":") + json_bool(d.removable);
    out += std::string(",\"rotational\":") + json_bool(d.rotational);
    out += ",\"max_request_bytes\":" + std::to_string(d.max_request_bytes);
    out += ",\"bdi_max_ratio\":" + std::to_string(d.bdi_max_ratio);
    out += std::string(",\"bdi_strict_limit\":") + json_bool(d.bdi_strict_limit);
    out += ",\"free_bytes\":" + optional(d.free_bytes);
    out += ",\"total_bytes\":" + optional(d.total_bytes);
    out += ",\"max_file_size\":" +
           (d.limits.max_file_size == UINT64_MAX ? std::string("null") : std::to_string(d.limits.max_file_size));
    out += std::string(",\"fat_names\":") + json_bool(d.limits.forbids_fat_chars);
    out += std::string(",\"writeback\":\"") + mode + "\"";
    // Whether small files get writeback of their own, and why: decided by what the device is.
    const SmallFileWriteback small = choose_small_file_writeback(d);
    out += std::string(",\"small_file_writeback\":") + json_bool(small.per_file);
    out += ",\"small_file_writeback_why\":" + json_string(small.why);
    // The mount options that change the strategy (engine/device/device_probe.h, MountFlags).
    const MountFlags &m = d.mount_flags;
    out += std::string(",\"flush\":") + json_bool(m.flush);
    out += std::string(",\"sync\":") + json_bool(m.sync);
    out += std::string(",\"dirsync\":") + json_bool(m.dirsync);
    out += ",\"mount_owner\":" + (m.owner_uid ? std::to_string(*m.owner_uid) : std::string("null"));
    out += std::string(",\"runs_as_owner\":") + json_bool(d.runs_as_owner);
    return out + "}";
}

std::string json_progress(const ProgressSnapshot &s)
{
    std::string out = "{\"type\":\"progress\"";
    out += ",\"state\":" + json_string(to_string(s.state));
    out += ",\"total_bytes\":" + std::to_string(s.total_bytes);
    out += ",\"durable_bytes\":" + std::to_string(s.durable_bytes);
    out += ",\"written_bytes\":" + std::to_string(s.written_bytes);
    out += ",\"files_done\":" + std::to_string(s.files_done);
    out += ",\"files_total\":" + std::to_string(s.files_total);
    out += ",\"current_file\":" + json_string(s.current_file);
    out += ",\"device_bytes_per_sec\":" + number(s.device_bytes_per_sec);
    out += ",\"eta_seconds\":" + (s.eta_seconds < 0 ? std::string("null") : number(std::ceil(s.eta_seconds)));
    out += ",\"elapsed_seconds\":" + std::to_string(s.elapsed_seconds);
    out += ",\"stalled_seconds\":" + number(std::floor(s.stalled_seconds));
    out += std::string(",\"share\":") + json_bool(s.share);
    out += std::string(",\"counting\":") + json_bool(s.counting);
    return out + "}";
}

namespace {
const char *side_name(Side side)
{
    switch (side) {
    case Side::Source:
        return "source";
    case Side::Destination:
        return "destination";
    case Side::Neither:
        break;
    }
    return "neither";
}
} // namespace

std::string json_event(const JobEvent &e)
{
    switch (e.kind) {
    case JobEvent::Kind::FileDone:
        return "{\"type\":\"file_done\",\"source\":" + json_string(e.path) + ",\"target\":" + json_string(e.target) +
               ",\"bytes\":" + std::to_string(e.bytes) +
               (e.message.empty() ? std::string() : ",\"note\":" + json_string(e.message)) + "}";
    case JobEvent::Kind::Skipped:
        return "{\"type\":\"skipped\",\"source\":" + json_string(e.path) +
               ",\"reason\":" + json_string(to_string(e.reason)) + ",\"message\":" + json_string(e.message) + "}";
    case JobEvent::Kind::Error:
        return "{\"type\":\"error\",\"source\":" + json_string(e.path) +
               ",\"errno\":" + std::to_string(e.status.err()) + ",\"operation\":" + json_string(e.status.op()) +
               ",\"side\":" + json_string(side_name(e.status.side())) +
               ",\"device_removed\":" + (e.status.device_removed() ? "true" : "false") +
               ",\"message\":" + json_string(e.message) + "}";
    case JobEvent::Kind::Done:
        break;
    }
    return {};
}

std::string json_done(const JobSummary &summary, const ProgressSnapshot &last)
{
    std::string out = "{\"type\":\"done\"";
    out += std::string(",\"ok\":") + (summary.ok() ? "true" : "false");
    out += std::string(",\"cancelled\":") + (summary.cancelled ? "true" : "false");
    out += ",\"files_copied\":" + std::to_string(summary.files_copied);
    out += ",\"files_skipped\":" + std::to_string(summary.files_skipped);
    out += ",\"errors\":" + std::to_string(summary.errors);
    out += ",\"bytes\":" + std::to_string(summary.bytes);
    out += ",\"durable_bytes\":" + std::to_string(last.durable_bytes);
    out += ",\"seconds\":" + std::to_string(summary.seconds);
    return out + "}";
}

std::string human_bytes(double bytes)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf,
                  u == 0        ? "%.0f %s"
                  : bytes < 10  ? "%.2f %s"
                  : bytes < 100 ? "%.1f %s"
                                : "%.0f %s",
                  bytes, units[u]);
    return buf;
}

std::string human_duration(double seconds)
{
    if (seconds < 0 || !std::isfinite(seconds))
        return "--:--";
    const long s = std::lround(seconds);
    char buf[32];
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
    else
        std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
    return buf;
}

std::string fit_name(const std::string &name, int columns)
{
    // Byte offsets of each character's start, so a cut never splits one.
    std::vector<size_t> starts;
    for (size_t i = 0; i < name.size(); ++i)
        if ((static_cast<unsigned char>(name[i]) & 0xC0) != 0x80)
            starts.push_back(i);
    const int chars = int(starts.size());
    if (chars <= columns)
        return name;
    if (columns <= 1)
        return columns == 1 ? "\u2026" : "";
    const int head = (columns - 1) / 2, tail = columns - 1 - head;
    return name.substr(0, starts[size_t(head)]) + "\u2026" + name.substr(starts[size_t(chars - tail)]);
}

std::string padded_name(const std::string &name, int width)
{
    std::string fitted = fit_name(name, width);
    return fitted + std::string(std::size_t(std::max(0, width - columns(fitted))), ' ');
}

std::string stall_text(const ProgressSnapshot &s)
{
    const std::string how_long = human_duration(s.stalled_seconds);
    return " " + (s.share ? i18nc("%1 is a time, 0:12", "the share is not responding (%1)", how_long)
                          : i18nc("%1 is a time, 0:12", "the device is not responding (%1)", how_long));
}

std::string progress_line(const ProgressSnapshot &s, int width)
{
    // While the plan still counts (JobSpec::count_while_copying) the totals are what it has found so far: the bar
    // stays empty and no percentage or time left is guessed.
    const double total = double(std::max<uint64_t>(s.total_bytes, 1));
    const double durable = s.counting ? 0.0 : std::min(1.0, double(s.durable_bytes) / total);
    const double written = s.counting ? 0.0 : std::min(1.0, double(s.written_bytes) / total);
    char percent[8];
    std::snprintf(percent, sizeof percent, "%3d%%", int(std::floor(durable * 100)));
    const std::string tail =
        s.counting ? " " + i18nc("the progress line while the files are still counted: %1 the rate, %2 files done, "
                                 "%3 files counted so far",
                                 "counting: %1/s %2/%3+ files", human_bytes(s.device_bytes_per_sec), s.files_done,
                                 s.files_total)
                   : std::string(" ") + percent + " " +
                         i18nc("the progress line: %1 the rate, %2 the time left, %3 files done, %4 files in all",
                               "%1/s ETA %2 %3/%4 files", human_bytes(s.device_bytes_per_sec),
                               human_duration(s.eta_seconds), s.files_done, s.files_total);
    std::string state = s.state == JobState::Paused ? " " + i18n("(paused)") : "";
    if (s.stalled_seconds > 0)
        state = stall_text(s);
    const std::string numbers = " " + i18nc("%1 is a size", "%1 on device", human_bytes(double(s.durable_bytes)));
    std::string right = numbers + tail + state;
    int bar = width - columns(right) - 2;
    if (bar < 10) {
        right = tail + state;
        bar = std::max(10, width - columns(right) - 2);
    }
    // The file on its way, after two spaces, in what the bar can spare above 20 columns (at most 40).
    std::string file;
    const size_t slash = s.current_file.rfind('/');
    const std::string name = slash == std::string::npos ? s.current_file : s.current_file.substr(slash + 1);
    if (const int spare = std::min(bar - 20, 42) - 2; !name.empty() && spare >= 8) {
        const std::string fitted = fit_name(name, spare);
        file = "  " + fitted;
        bar -= 2 + columns(fitted);
    }
    const int d = int(durable * bar), w = std::max(d, int(written * bar));
    std::string line = "[" + std::string(size_t(d), '#') + std::string(size_t(w - d), '-') +
                       std::string(size_t(bar - w), ' ') + "]" + right;
    cut_to_columns(line, width);
    return line + file;
}

} // namespace sanecopy::cli
