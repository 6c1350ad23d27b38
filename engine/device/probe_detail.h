// SPDX-License-Identifier: GPL-2.0-or-later
//
// Helpers shared by the probe's three parts (mount_table.cpp, block_device.cpp, writeback_policy.cpp); not for use
// outside device/.
#pragma once

#include "device_probe.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sanecopy::probe_detail {

template <typename Range, typename T>
bool contains(const Range &range, const T &value)
{
    return std::find(std::begin(range), std::end(range), value) != std::end(range);
}

std::vector<std::string_view> split(std::string_view text, char sep);
std::string_view trim(std::string_view text);

template <typename Int>
bool parse_number(std::string_view text, Int &out)
{
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

std::optional<std::string> read_link(const std::string &path);
bool path_exists(const std::string &path);
std::string_view base_name(std::string_view path);
// Joins a sysfs link's target to the folder holding the link (both relative to the sysfs root) and folds "..";
// nullopt when that would climb out of the root (mount_table.cpp says more).
std::optional<std::string> fold_dots(std::string_view relative_base, std::string_view relative);
// The path the kernel resolved for an open descriptor: no symlinks, relative to this process's root, which
// is also what mountinfo's mount points are relative to. A folder outside that root reads "(unreachable)/...".
std::string resolved_path(int fd, const std::string &fallback);
// The mount that holds |path| on the device |st_dev|, filling mount point, type and flags into |info|
// (mount_table.cpp); the block device behind a fuseblk mount (block_device.cpp).
void probe_mount(const std::string &path, dev_t st_dev, DeviceInfo &info);
void probe_block_source(const MountEntry &mount, DeviceInfo &info);

} // namespace sanecopy::probe_detail
