// SPDX-License-Identifier: GPL-2.0-or-later
#include "paths.h"

#include <algorithm>

namespace sanecopy {

std::string strip_trailing_slashes(const std::string &path)
{
    std::string p = path;
    while (p.size() > 1 && p.back() == '/')
        p.pop_back();
    return p;
}

std::pair<std::string, std::string> split_path(const std::string &path)
{
    const std::string p = strip_trailing_slashes(path);
    const auto slash = p.rfind('/');
    if (slash == std::string::npos)
        return {".", p};
    if (slash == 0)
        return {"/", p.substr(1)};
    return {p.substr(0, slash), p.substr(slash + 1)};
}

namespace {

bool ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// RFC 3986's scheme: a letter, then letters, digits, '+', '-' or '.'.
bool is_scheme(std::string_view s)
{
    if (s.empty() || !ascii_letter(s[0]))
        return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return ascii_letter(c) || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
    });
}

} // namespace

bool looks_like_network_url(std::string_view arg)
{
    const auto colon = arg.find(':');
    if (colon == std::string_view::npos || colon < 2 || arg.substr(colon + 1, 1) != "/")
        return false;
    const std::string_view scheme = arg.substr(0, colon);
    if (!is_scheme(scheme))
        return false;
    std::string lower(scheme);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; });
    return lower != "file";
}

} // namespace sanecopy
