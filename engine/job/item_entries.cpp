// SPDX-License-Identifier: GPL-2.0-or-later
// An item's entries, walked again as the run meets them (job_runner.h, ItemEntries).
#include "job_runner.h"

namespace sanecopy::job_detail {

// A folder that can't be opened is still an entry marked unreadable, and is reported as left out when the run
// meets it.
ItemEntries::ItemEntries(const ItemPlan &plan, const JobSpec &spec, const DeviceInfo &device,
                         std::function<void(Status)> report)
    : plan_(plan),
      spec_(spec),
      device_(device),
      report_(std::move(report)),
      tree_(
          plan.item.source_dir, plan.item.source_name, plan.item.source, [this](Status s) { report_(std::move(s)); },
          plan.item.receiving)
{}

bool ItemEntries::advance()
{
    if (started_ && !queue_.empty())
        queue_.pop_front();
    started_ = true;
    return !queue_.empty() || read_one();
}

const std::deque<ItemEntries::Entry> &ItemEntries::ahead(std::size_t n)
{
    while (queue_.size() <= n && read_one()) {
    }
    return queue_;
}

// The next entry of the walk, decided as the plan decided it: what the device refuses, what found no room.
bool ItemEntries::read_one()
{
    PlanEntry e;
    if (!tree_.next(e))
        return false;
    check_against_device(plan_.item, e, spec_, device_);
    if (e.skip_reason.empty() && e.kind == EntryKind::File && plan_.no_room.count(e.rel) > 0)
        left_for_want_of_room(e);
    queue_.push_back({read_++, std::move(e)});
    return true;
}

} // namespace sanecopy::job_detail
