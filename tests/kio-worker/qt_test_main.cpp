// SPDX-License-Identifier: GPL-2.0-or-later
//
// Catch2's main with a QApplication around it, for tests that use Qt classes wanting one (QProcess, KService) and
// for tests that build menus; offscreen when there is no display.
#if __has_include(<catch2/catch_session.hpp>)
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#include <QApplication>

int main(int argc, char **argv)
{
    // catch_discover_tests lists the cases at build time, with no display and none of ctest's environment.
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    return Catch::Session().run(argc, argv);
}
