// SPDX-License-Identifier: GPL-2.0-or-later
//
// Pure path text: no file is looked at. Shared by the job's destination rules and the stream writer.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace sanecopy {

// "a/b/" -> "a/b"; "/" stays "/".
std::string strip_trailing_slashes(const std::string &path);
// Split at the last '/': ("a/b", "c") for "a/b/c", (".", "c") for "c", ("/", "c") for "/c".
std::pair<std::string, std::string> split_path(const std::string &path);
// True for a URL of another scheme than file: ("smb://nas/photos", "sftp://me@box/x", "webdav:/..."), as Dolphin
// hands over items in its network folders. A scheme is a letter, then letters, digits, '+', '-' or '.', at least
// two in all, then ":/". Whether a local path of that spelling exists (a folder called "smb:") is the caller's to
// ask.
bool looks_like_network_url(std::string_view arg);

} // namespace sanecopy
