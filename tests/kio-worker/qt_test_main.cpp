// SPDX-License-Identifier: GPL-2.0-or-later
//
// Catch2's main with a QCoreApplication around it, for tests that use Qt classes wanting one (QProcess, KService);
// with SANECOPY_TEST_WIDGETS a QApplication, for tests that build menus.
#if __has_include(<catch2/catch_session.hpp>)
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#ifdef SANECOPY_TEST_WIDGETS
#include <QApplication>
using TestApplication = QApplication;
#else
#include <QCoreApplication>
using TestApplication = QCoreApplication;
#endif

int main(int argc, char **argv)
{
#ifdef SANECOPY_TEST_WIDGETS
    // catch_discover_tests lists the cases at build time, with no display and none of ctest's environment.
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
#endif
    TestApplication app(argc, argv);
    return Catch::Session().run(argc, argv);
}
