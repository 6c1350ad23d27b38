// SPDX-License-Identifier: GPL-2.0-or-later
//
// KIO ends a worker whose application has gone away (kioclient5 interrupted, Dolphin closed or crashed) with
// ::exit() from inside whichever call noticed the broken connection: processedSize(), dataReq(), ... So the
// running operation never returns, its destructors never run, and its part file would stay on the stick. An
// ExitCleanup names what to do instead for as long as it lives; an atexit hook runs it.
//
// One operation runs at a time in a worker, on the thread that talks to KIO, which is also the thread that
// calls ::exit(): the hook runs while the operation's frame is still on that thread's stack, so what it
// refers to is alive.
#pragma once

#include <functional>

namespace SaneCopyKio {

class ExitCleanup {
public:
    explicit ExitCleanup(std::function<void()> onExit);
    ~ExitCleanup();
    ExitCleanup(const ExitCleanup &) = delete;
    ExitCleanup &operator=(const ExitCleanup &) = delete;

    // Registers the atexit hook; called once from kdemain(), after the engine's statics exist, so they are
    // still alive when the hook runs.
    static void installHook();

private:
    std::function<void()> onExit_;
    ExitCleanup *outer_;
};

} // namespace SaneCopyKio
