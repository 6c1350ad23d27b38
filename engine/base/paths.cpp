// SPDX-License-Identifier: GPL-2.0-or-later
#include "paths.h"

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

bool looks_like_network_url(std::string_view arg)
{
    const auto colon = arg.find(':');
    if (colon == std::string_view::npos || colon < 2 || arg.substr(colon + 1, 1) != "/")
        return false;
    const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    const std::string_view scheme = arg.substr(0, colon);
    if (!letter(scheme[0]))
        return false;
    for (char c : scheme)
        if (!letter(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.')
            return false;
    std::string lower(scheme);
    for (char &c : lower)
        c = char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return lower != "file";
}

} // namespace sanecopy
