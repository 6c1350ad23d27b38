// SPDX-License-Identifier: GPL-2.0-or-later
#include "result.h"

namespace sanecopy {

std::string Status::message() const
{
    if (ok())
        return {};
    std::string text = path_.empty() ? std::string() : path_ + ": ";
    if (!detail_.empty())
        return text + detail_;
    text += code_.message();
    if (!op_.empty())
        text += " (" + op_ + ")";
    return text;
}

} // namespace sanecopy
