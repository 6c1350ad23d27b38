// SPDX-License-Identifier: GPL-2.0-or-later
#include "StallNotice.h"

namespace SaneCopyKio {

StallNotice::StallNotice(Desktop desktop) : desktop_(std::move(desktop)) {}

StallNotice::~StallNotice() { withdraw(); }

void StallNotice::update(bool stalled, bool share, double now)
{
    if (stalled) {
        movingSince_ = -1;
        if (!shown_) {
            shown_ = true;
            id_ = desktop_.show(share, kExpirySeconds);
        }
        return;
    }
    if (!shown_)
        return;
    if (movingSince_ < 0)
        movingSince_ = now;
    if (now - movingSince_ >= kSettledSeconds)
        withdraw();
}

void StallNotice::withdraw()
{
    shown_ = false;
    movingSince_ = -1;
    if (id_ != 0)
        desktop_.close(id_);
    id_ = 0;
}

} // namespace SaneCopyKio
