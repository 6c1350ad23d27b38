// SPDX-License-Identifier: GPL-2.0-or-later
#include "catch.h"

#include "destination.h"
#include "fault_syscalls.h"
#include "test_support.h"

#include <sys/stat.h>

using namespace sanecopy;
using sanecopy::test::TempDir;

TEST_CASE("dest rules: split_path and strip_trailing_slashes")
{
    CHECK(split_path("a/b/c") == std::pair<std::string, std::string>("a/b", "c"));
    CHECK(split_path("c") == std::pair<std::string, std::string>(".", "c"));
    CHECK(split_path("/c") == std::pair<std::string, std::string>("/", "c"));
    CHECK(split_path("a/b/") == std::pair<std::string, std::string>("a", "b"));
    CHECK(strip_trailing_slashes("/") == "/");
    CHECK(strip_trailing_slashes("x//") == "x");
}

TEST_CASE("dest rules: network URLs are told from paths")
{
    for (const char *url : {"smb://nas/photos", "sftp://me@box/home/me", "webdav:/dav/x", "SMB://NAS/x", "a+b.c-d://x"})
        CHECK(looks_like_network_url(url));
    for (const char *path : {"file:///tmp/a", "FILE:///tmp/a", "/tmp/smb://x", "photos", "c:/x", "smb:", "smb:x",
                             "1ab://x", "sm b://x", "", ":/x"})
        CHECK_FALSE(looks_like_network_url(path));
}

TEST_CASE("dest rules: an existing folder receives the sources under their own names")
{
    TempDir t;
    test::write_text_file(t / "a", "1");
    test::write_text_file(t / "b", "2");
    ::mkdir((t / "out").c_str(), 0755);
    Resolution r = resolve_destination({t / "a", t / "b"}, t / "out");
    REQUIRE(r.fatal.ok());
    REQUIRE(r.errors.empty());
    REQUIRE(r.items.size() == 2);
    CHECK(r.items[0].target_dir == t / "out");
    CHECK(r.items[0].target_name == "a");
    CHECK(r.items[1].target_name == "b");
}

TEST_CASE("dest rules: one source and a new name copies as that name")
{
    TempDir t;
    test::write_text_file(t / "a", "1");
    Resolution r = resolve_destination({t / "a"}, t / "renamed");
    REQUIRE(r.fatal.ok());
    REQUIRE(r.items.size() == 1);
    CHECK(r.items[0].target_dir == t.path());
    CHECK(r.items[0].target_name == "renamed");
}

TEST_CASE("dest rules: a destination ending in '/' must be an existing folder")
{
    TempDir t;
    test::write_text_file(t / "a", "1");
    Resolution missing = resolve_destination({t / "a"}, t / "nope/");
    CHECK(missing.fatal.err() == ENOENT);
    CHECK(missing.items.empty());
    Resolution file = resolve_destination({t / "a"}, t / "a/");
    CHECK(file.fatal.err() == ENOTDIR);
}

TEST_CASE("dest rules: several sources need an existing folder")
{
    TempDir t;
    test::write_text_file(t / "a", "1");
    test::write_text_file(t / "b", "2");
    Resolution r = resolve_destination({t / "a", t / "b"}, t / "new");
    CHECK_FALSE(r.fatal.ok());
    CHECK(r.items.empty());
}

TEST_CASE("dest rules: a destination whose parent folder does not exist is refused")
{
    TempDir t;
    test::write_text_file(t / "a", "1");
    Resolution r = resolve_destination({t / "a"}, t / "missing/dir/file");
    CHECK(r.fatal.err() == ENOENT);
    CHECK(r.fatal.message().find("does not exist") != std::string::npos);
}

TEST_CASE("dest rules: a missing source is reported and the others still go")
{
    TempDir t;
    test::write_text_file(t / "a", "1");
    ::mkdir((t / "out").c_str(), 0755);
    Resolution r = resolve_destination({t / "gone", t / "a"}, t / "out");
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].err() == ENOENT);
    CHECK(r.errors[0].path() == t / "gone");
    REQUIRE(r.items.size() == 1);
    CHECK(r.items[0].source_name == "a");
}

TEST_CASE("dest rules: a folder is never copied into itself or below itself")
{
    TempDir t;
    ::mkdir((t / "tree").c_str(), 0755);
    ::mkdir((t / "tree/sub").c_str(), 0755);
    Resolution into_sub = resolve_destination({t / "tree"}, t / "tree/sub");
    REQUIRE(into_sub.errors.size() == 1);
    CHECK(into_sub.errors[0].message().find("into itself") != std::string::npos);
    CHECK(into_sub.items.empty());
    Resolution into_self = resolve_destination({t / "tree"}, t / "tree");
    CHECK(into_self.items.empty());
    // A sibling whose name merely starts the same is fine.
    ::mkdir((t / "tree2").c_str(), 0755);
    Resolution sibling = resolve_destination({t / "tree"}, t / "tree2");
    CHECK(sibling.items.size() == 1);
}

TEST_CASE("dest rules: copying a file onto itself is refused")
{
    TempDir t;
    test::write_text_file(t / "a", "1");
    Resolution r = resolve_destination({t / "a"}, t.path());
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].message().find("same file") != std::string::npos);
}

TEST_CASE("dest rules: a link onto the file it points to is refused")
{
    TempDir t;
    ::mkdir((t / "d").c_str(), 0755);
    ::mkdir((t / "s").c_str(), 0755);
    test::write_text_file(t / "d/f", "the only copy");
    REQUIRE(::symlink("../d/f", (t / "s/f").c_str()) == 0);
    Resolution r = resolve_destination({t / "s/f"}, t / "d");
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].message().find("points to the file it would replace") != std::string::npos);
    CHECK(r.items.empty());
    // Elsewhere the same link is copied as a link.
    ::mkdir((t / "e").c_str(), 0755);
    CHECK(resolve_destination({t / "s/f"}, t / "e").items.size() == 1);
    // And so it is where nothing would be replaced (skipped, or copied under a new name).
    Resolution keeping = resolve_destination({t / "s/f"}, t / "d", DestinationRule::FollowCp, {}, false);
    CHECK(keeping.errors.empty());
    CHECK(keeping.items.size() == 1);
}

TEST_CASE("dest rules: '.' as a source takes the folder's real name")
{
    TempDir t;
    ::mkdir((t / "photos").c_str(), 0755);
    ::mkdir((t / "out").c_str(), 0755);
    Resolution r = resolve_destination({t / "photos/."}, t / "out");
    REQUIRE(r.items.size() == 1);
    CHECK(r.items[0].target_name == "photos");
}

TEST_CASE("dest rules: an exact target never means 'into the folder'")
{
    TempDir t;
    test::write_text_file(t / "a", "1");
    ::mkdir((t / "name").c_str(), 0755);
    Resolution r = resolve_destination({t / "a"}, t / "name", DestinationRule::ExactTarget);
    REQUIRE(r.fatal.ok());
    REQUIRE(r.items.size() == 1);
    CHECK(r.items[0].target_dir == t.path());
    CHECK(r.items[0].target_name == "name");
    Resolution two = resolve_destination({t / "a", t / "a"}, t / "x", DestinationRule::ExactTarget);
    CHECK_FALSE(two.fatal.ok());
}

namespace {

// A flatpak sandbox's /.flatpak-info, as the seam shows it: any open of that path gets |info| instead.
struct SandboxSyscalls : test::FaultSyscalls {
    std::string info;
    int raw_openat(int dirfd, const char *path, int flags, mode_t mode) override
    {
        if (std::string(path) == "/.flatpak-info")
            return test::FaultSyscalls::raw_openat(dirfd, info.c_str(), flags, mode);
        return test::FaultSyscalls::raw_openat(dirfd, path, flags, mode);
    }
};

} // namespace

TEST_CASE("dest rules: inside a flatpak sandbox a missing path says what the sandbox hides and how to grant it")
{
    TempDir t;
    test::write_text_file(t / "a", "1");
    test::write_text_file(t / "flatpak-info", "[Application]\nname=io.github.sanecopy.SaneCopy\nruntime=x\n");
    SandboxSyscalls seam;
    seam.info = t / "flatpak-info";
    ScopedSyscalls scoped(seam);

    Resolution dest = resolve_destination({t / "a"}, "/opt/sanecopy-nowhere/");
    REQUIRE_FALSE(dest.fatal.ok());
    const std::string message = dest.fatal.message();
    CHECK(message.find("flatpak sandbox") != std::string::npos);
    CHECK(message.find("flatpak override --user --filesystem=/opt/sanecopy-nowhere io.github.sanecopy.SaneCopy") !=
          std::string::npos);

    Resolution source = resolve_destination({"/opt/sanecopy-nowhere/file"}, t.path());
    REQUIRE(source.errors.size() == 1);
    CHECK(source.errors[0].message().find("--filesystem=/opt/sanecopy-nowhere/file io.github") != std::string::npos);

    // Outside a sandbox (no /.flatpak-info) the message is the plain one.
    seam.info = t / "no-such-info";
    CHECK(sandbox_note("/opt/x").empty());
    CHECK(resolve_destination({t / "a"}, "/opt/sanecopy-nowhere/").fatal.message().find("flatpak") ==
          std::string::npos);
}
