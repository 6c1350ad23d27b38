// SPDX-License-Identifier: GPL-2.0-or-later
//
// sanecopy-open-target FOLDER...: opens each folder as sanecopy:///FOLDER in Dolphin. The "Open as Safe Copy
// Target" service menu runs it with %F.
//
// Why a program and not an Exec line: the desktop-entry field codes can only hand over a path or a URL as it
// is, and "sanecopy:%f" would let Dolphin read '#', '?' and '%' in a folder's name as URL syntax. Here the
// path's bytes are percent-encoded one by one into the URL and Dolphin is exec'ed with it: no shell, no
// quoting, nothing in a name means anything.
//
// A path arrives as bytes in argv. Dolphin spells a name that is not UTF-8 the KDE way (U+10FE00 + byte, see
// UrlMapping.h) and its launcher turns that into UTF-8, so a path that does not exist as given is tried with
// those characters turned back into the bytes they stand for.
#include "UrlMapping.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

bool isFolder(const QByteArray &path)
{
    struct stat st {};
    return ::stat(path.constData(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: sanecopy-open-target FOLDER...\n");
        return 2;
    }
    std::vector<QByteArray> urls;
    for (int i = 1; i < argc; ++i) {
        QByteArray path(argv[i]);
        if (path.startsWith("file:")) {
            const auto local = SaneCopyKio::localPathFromUrl(QUrl::fromEncoded(path));
            path = local ? *local : QByteArray();
        }
        if (!isFolder(path)) {
            const QByteArray raw = SaneCopyKio::legacyBytesToRaw(path);
            if (!isFolder(raw)) {
                std::fprintf(stderr, "sanecopy-open-target: %s: not a folder\n", argv[i]);
                return 1;
            }
            path = raw;
        }
        if (!path.startsWith('/')) {
            // Relative to where we were started; Dolphin's own working folder may differ.
            std::vector<char> cwd(4096);
            if (!::getcwd(cwd.data(), cwd.size())) {
                std::fprintf(stderr, "sanecopy-open-target: %s\n", std::strerror(errno));
                return 1;
            }
            path = QByteArray(cwd.data()) + '/' + path;
        }
        urls.push_back(SaneCopyKio::urlFromLocalPath(path).toEncoded());
    }
    std::vector<char *> args;
    std::string program = "dolphin", newWindow = "--new-window";
    args.push_back(program.data());
    args.push_back(newWindow.data());
    for (QByteArray &u : urls)
        args.push_back(u.data());
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "sanecopy-open-target: cannot run dolphin: %s\n", std::strerror(errno));
    return 127;
}
