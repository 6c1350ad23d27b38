// SPDX-License-Identifier: GPL-2.0-or-later
//
// Catch2's main with a QCoreApplication around it, for tests that use Qt classes wanting one (QProcess, KService).
#if __has_include(<catch2/catch_session.hpp>)
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#include <QCoreApplication>

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    return Catch::Session().run(argc, argv);
}
