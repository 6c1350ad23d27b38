// SPDX-License-Identifier: GPL-2.0-or-later
//
// When the worker tells the desktop that a copy stands still (StallNotice.h): one notification a stall, kept
// while a device answers only now and then and through a long stall, withdrawn once the copy has moved for a
// while, at once when the copy ends. The D-Bus side is checked end to end in test_kio_worker.py (job_view_stall).
#include "StallNotice.h"

#include "catch.h"

#include <string>
#include <vector>

using SaneCopyKio::StallNotice;

namespace {

// The calls the notice made, as "show device", "show share", "close 7".
struct Recorder {
    std::vector<std::string> calls;
    unsigned next = 7;
    bool serverAnswers = true;

    StallNotice::Desktop desktop()
    {
        return {[this](bool share, int expirySeconds) {
                    CHECK(expirySeconds == StallNotice::kExpirySeconds);
                    calls.push_back(share ? "show share" : "show device");
                    return serverAnswers ? next++ : 0U;
                },
                [this](unsigned id) { calls.push_back("close " + std::to_string(id)); }};
    }
};

using Calls = std::vector<std::string>;

} // namespace

TEST_CASE("stall notice: one notification a stall, withdrawn once the copy has moved for a while")
{
    Recorder r;
    StallNotice notice(r.desktop());
    notice.update(false, false, 0);
    CHECK(r.calls.empty()); // moving: nothing to say
    notice.update(true, false, 6);
    notice.update(true, false, 6.2);
    notice.update(true, false, 20);
    CHECK(r.calls == Calls {"show device"});
    notice.update(false, false, 21);
    notice.update(false, false, 21 + StallNotice::kSettledSeconds - 0.5);
    CHECK(r.calls == Calls {"show device"}); // not yet settled
    notice.update(false, false, 21 + StallNotice::kSettledSeconds);
    CHECK(r.calls == Calls {"show device", "close 7"});
    notice.update(false, false, 40);
    CHECK(r.calls == Calls {"show device", "close 7"});
    // A later stall is a new one.
    notice.update(true, true, 50);
    CHECK(r.calls == Calls {"show device", "close 7", "show share"});
}

TEST_CASE("stall notice: a device that answers now and then keeps one notification")
{
    Recorder r;
    StallNotice notice(r.desktop());
    double t = 0;
    for (int i = 0; i < 5; ++i) { // stalls of 6 s, each ended by one answer and 2 s of movement
        notice.update(true, false, t += 6);
        notice.update(false, false, t += 1);
        notice.update(false, false, t += 1);
    }
    CHECK(r.calls == Calls {"show device"});
}

TEST_CASE("stall notice: the copy's end or a cancel withdraws it at once")
{
    Recorder r;
    {
        StallNotice notice(r.desktop());
        notice.update(true, false, 6);
        notice.withdraw(); // a cancel
        CHECK(r.calls == Calls {"show device", "close 7"});
        notice.update(true, false, 12);
    } // the copy ends while it stands still
    CHECK(r.calls == Calls {"show device", "close 7", "show device", "close 8"});
}

TEST_CASE("stall notice: with no notification server nothing is closed, and it is asked once a stall")
{
    Recorder r;
    r.serverAnswers = false;
    {
        StallNotice notice(r.desktop());
        notice.update(true, false, 6);
        notice.update(true, false, 7);
        notice.update(false, false, 8);
        notice.update(false, false, 8 + StallNotice::kSettledSeconds);
        notice.update(true, false, 30);
    }
    CHECK(r.calls == Calls {"show device", "show device"});
}

TEST_CASE("stall notice: a long stall keeps the one notification, for longer than most stalls last")
{
    STATIC_REQUIRE(StallNotice::kExpirySeconds >= 300);
    Recorder r;
    StallNotice notice(r.desktop());
    for (double t = 6; t < 6 + 2 * StallNotice::kExpirySeconds; t += 0.2)
        notice.update(true, false, t); // not shown again: one the user closed stays closed
    CHECK(r.calls == Calls {"show device"});
}
