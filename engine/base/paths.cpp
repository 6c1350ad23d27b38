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

} // namespace sanecopy
