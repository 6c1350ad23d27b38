// SPDX-License-Identifier: GPL-2.0-or-later
#include "result.h"

#include <cerrno>

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

namespace {
// A share's server or the link to it gone (a soft mount timing out, a dropped connection), or a share that still
// answers "try again" after the copy wrote its unsynced bytes again (copy_file.cpp, ChunkedCopy::write_again).
bool link_lost(int err)
{
    return err == ETIMEDOUT || err == EHOSTDOWN || err == EHOSTUNREACH || err == ENETUNREACH || err == EAGAIN;
}
} // namespace

bool keeps_part_file(int err)
{
    return err == EIO || err == ENODEV || err == ENXIO || err == ENOTCONN || err == ESHUTDOWN || link_lost(err);
}

bool is_device_fatal(int err)
{
    return err == ENOSPC || err == EDQUOT || err == EIO || err == EROFS || err == ENODEV || err == ENXIO ||
           err == ENOTCONN || err == ESHUTDOWN || link_lost(err);
}

} // namespace sanecopy
