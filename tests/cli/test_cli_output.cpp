// SPDX-License-Identifier: GPL-2.0-or-later
//
// sanecp's terminal line: the bar, the numbers, and the file on its way, within the terminal's width.
#include "catch.h"

#include "cli_output.h"

using namespace sanecopy;
using namespace sanecopy::cli;

namespace {

int columns(const std::string &s)
{
    int n = 0;
    for (char c : s)
        n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

ProgressSnapshot snapshot(std::string current)
{
    ProgressSnapshot s;
    s.total_bytes = 1000 << 20;
    s.durable_bytes = 400 << 20;
    s.written_bytes = 420 << 20;
    s.files_done = 3;
    s.files_total = 10;
    s.device_bytes_per_sec = 40e6;
    s.eta_seconds = 15;
    s.current_file = std::move(current);
    return s;
}

} // namespace

TEST_CASE("fit_name shortens in the middle, never inside a UTF-8 character")
{
    CHECK(fit_name("short.txt", 20) == "short.txt");
    CHECK(fit_name("0123456789abcdef", 9) == "0123\u2026cdef");
    const std::string accented = "\u00e9t\u00e9-\u00e0-la-plage-\u00e9t\u00e9.jpg"; // 2-byte characters
    for (int width = 1; width < 24; ++width) {
        const std::string fitted = fit_name(accented, width);
        CHECK(columns(fitted) <= width);
        // Every character whole: no continuation byte at the start, none missing at the end.
        CHECK((static_cast<unsigned char>(fitted.front()) & 0xC0) != 0x80);
        CHECK((fitted.find("\u2026") != std::string::npos) == (width < columns(accented)));
    }
}

TEST_CASE("the bar names the file on its way when the terminal has room, and keeps to its width")
{
    const ProgressSnapshot s = snapshot("/home/me/Videos/holiday-2026-08-14-the-long-one.mp4");
    for (int width : {40, 60, 79, 100, 140, 200}) {
        const std::string line = progress_line(s, width);
        INFO(width << ": " << line);
        CHECK(columns(line) <= width);
        CHECK(line.find("40%") != std::string::npos);
    }
    const std::string wide = progress_line(s, 140);
    CHECK(wide.find("holiday-2026-08-14-the-long-one.mp4") != std::string::npos);
    const std::string usual = progress_line(s, 100);
    CHECK(usual.find("holiday") != std::string::npos);
    CHECK(usual.find("/home/me") == std::string::npos); // the name, not the path
    // Too narrow for a bar of 20 and a name: the numbers win.
    CHECK(progress_line(s, 60).find("holiday") == std::string::npos);
    // Nothing on its way (between files): the line ends with the numbers.
    const std::string idle = progress_line(snapshot(""), 100);
    CHECK(idle.compare(idle.size() - 5, 5, "files") == 0);
}

TEST_CASE("a stalled copy says who is not responding, on the bar and in --json")
{
    ProgressSnapshot s = snapshot("/home/me/big.iso");
    s.state = JobState::Running;
    s.stalled_seconds = 12.4;
    s.device_bytes_per_sec = 0;
    s.eta_seconds = -1;
    s.share = true;
    const std::string line = progress_line(s, 120);
    INFO(line);
    CHECK(line.find("the share is not responding (0:12)") != std::string::npos);
    CHECK(columns(line) <= 120);
    CHECK(json_progress(s).find("\"stalled_seconds\":12,\"share\":true") != std::string::npos);
    s.share = false;
    CHECK(progress_line(s, 120).find("the device is not responding (0:12)") != std::string::npos);
    s.stalled_seconds = 0;
    CHECK(progress_line(s, 120).find("not responding") == std::string::npos);
    CHECK(json_progress(s).find("\"stalled_seconds\":0") != std::string::npos);
}

TEST_CASE("while the plan still counts the bar shows no percentage, no time left and the files counted so far")
{
    ProgressSnapshot s = snapshot("/home/me/photos/img_0001.jpg");
    s.state = JobState::Running;
    s.counting = true;
    s.total_bytes = 4 << 20; // counted so far: less than what is durable already
    s.durable_bytes = s.written_bytes = 6 << 20;
    s.files_done = 120;
    s.files_total = 4096;
    s.eta_seconds = -1;
    const std::string line = progress_line(s, 120);
    INFO(line);
    CHECK(line.find("counting: ") != std::string::npos);
    CHECK(line.find("120/4096+ files") != std::string::npos);
    CHECK(line.find('%') == std::string::npos);
    CHECK(line.find("ETA") == std::string::npos);
    CHECK(line.find('#') == std::string::npos); // the bar is not filled against a total that is still growing
    CHECK(columns(line) <= 120);
    CHECK(json_progress(s).find("\"counting\":true") != std::string::npos);
    s.counting = false;
    s.total_bytes = 8 << 20;
    CHECK(progress_line(s, 120).find(" 75% ") != std::string::npos);
    CHECK(json_progress(s).find("\"counting\":false") != std::string::npos);
}
