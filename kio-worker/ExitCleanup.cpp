// SPDX-License-Identifier: GPL-2.0-or-later
#include "ExitCleanup.h"

#include <atomic>
#include <cstdlib>

namespace SaneCopyKio {

namespace {
// The innermost live ExitCleanup. Process-wide because ::exit() is: there is exactly one thing to undo.
std::atomic<ExitCleanup *> g_current {nullptr};
} // namespace

ExitCleanup::ExitCleanup(std::function<void()> onExit) : onExit_(std::move(onExit)), outer_(g_current.exchange(this)) {}

ExitCleanup::~ExitCleanup() { g_current.store(outer_); }

void ExitCleanup::installHook()
{
    std::atexit([] {
        // Innermost first, each taken off the list before it runs.
        while (ExitCleanup *c = g_current.load()) {
            g_current.store(c->outer_);
            if (c->onExit_)
                c->onExit_();
        }
    });
}

} // namespace SaneCopyKio
