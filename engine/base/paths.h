// SPDX-License-Identifier: GPL-2.0-or-later
//
// Pure path text: no file is looked at. Shared by the job's destination rules and the stream writer.
#pragma once

#include <string>
#include <utility>

namespace sanecopy {

// "a/b/" -> "a/b"; "/" stays "/".
std::string strip_trailing_slashes(const std::string &path);
// Split at the last '/': ("a/b", "c") for "a/b/c", (".", "c") for "c", ("/", "c") for "/c".
std::pair<std::string, std::string> split_path(const std::string &path);

} // namespace sanecopy
