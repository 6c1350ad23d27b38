// SPDX-License-Identifier: GPL-2.0-or-later
//
// Checksum manifests: SHA-256 itself, sha256sum's line format and escapes (checked against the real sha256sum
// where it is installed), the digests a copy records, and a check that reads the files back.
#include "catch.h"

#include "job_helpers.h"
#include "test_support.h"

#include "manifest.h"

#include <algorithm>
#include <cstdio>
#include <fcntl.h>
#include <map>
#include <sys/stat.h>
#include <unistd.h>

using namespace sanecopy;
using namespace sanecopy::test;

namespace {

Sha256Digest sha_of(const std::string &bytes)
{
    Sha256 h;
    h.update(bytes.data(), bytes.size());
    return h.finish();
}

// Names that need every escape and none: a space, a newline, a backslash, a carriage return, Latin-1 bytes
// that are not UTF-8, and plain UTF-8.
const std::vector<std::string> kAwkwardNames = {
    "plain.txt",       "with space.txt",       "new\nline.txt",
    "back\\slash.txt", "carriage\rreturn.txt", "latin1-\xe9t\xe9.txt",
    "utf8-été.txt",
};

std::string run_output(const std::string &command)
{
    std::string out;
    FILE *p = ::popen(command.c_str(), "r");
    REQUIRE(p);
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, p))
        out.append(buf, n);
    const int status = ::pclose(p);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return out;
}

bool have_sha256sum() { return ::system("command -v sha256sum >/dev/null 2>&1") == 0; }

} // namespace

TEST_CASE("sha256: the standard test vectors, in one piece and in many")
{
    CHECK(to_hex(sha_of("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(to_hex(sha_of("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    Sha256 h;
    const std::string a(1000, 'a');
    for (int i = 0; i < 1000; ++i)
        h.update(a.data(), a.size());
    CHECK(to_hex(h.finish()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("manifest lines: every awkward name goes out and comes back")
{
    for (const std::string &name : kAwkwardNames) {
        const ManifestEntry e {name, sha_of(name)};
        const std::string line = format_manifest_line(e);
        REQUIRE(line.back() == '\n');
        CHECK(std::count(line.begin(), line.end(), '\n') == 1); // a newline in a name never splits the line
        const auto back = parse_manifest_line(line.substr(0, line.size() - 1));
        REQUIRE(back);
        CHECK(back->name == name);
        CHECK(back->digest == e.digest);
    }
    // Escaped only when needed, as sha256sum does.
    CHECK(format_manifest_line({"with space.txt", {}})[0] != '\\');
    CHECK(format_manifest_line({"new\nline.txt", {}})[0] == '\\');
    // Not entries: too short, a bad digit, a bad escape, the BSD form.
    CHECK_FALSE(parse_manifest_line("abc  file"));
    CHECK_FALSE(parse_manifest_line(std::string(63, '0') + "g  file"));
    CHECK_FALSE(parse_manifest_line("\\" + std::string(64, '0') + "  a\\qb"));
    CHECK_FALSE(parse_manifest_line("SHA256 (file) = " + std::string(64, '0')));
    // sha256sum -b's binary marker is read too.
    const auto binary = parse_manifest_line(std::string(64, 'a') + " *file");
    REQUIRE(binary);
    CHECK(binary->name == "file");
}

TEST_CASE("manifest lines: what the real sha256sum writes is read, and what we write it checks")
{
    // coreutils is Essential on Debian: sha256sum is always there, and its absence is a broken test bed.
    REQUIRE(have_sha256sum());
    TempDir t;
    std::map<std::string, std::string> content;
    std::string names;
    for (const std::string &name : kAwkwardNames) {
        content[name] = "content of " + name;
        write_text_file(t / name, content[name]);
    }
    // Its own output, every name passed through a NUL-separated list so the shell never sees them.
    const std::string theirs = run_output("cd '" + t.path() +
                                          "' && find . -maxdepth 1 -type f -printf '%P\\0' | "
                                          "xargs -0 sha256sum");
    std::size_t unparsed = 0;
    const std::vector<ManifestEntry> parsed = parse_manifest(theirs, &unparsed);
    CHECK(unparsed == 0);
    REQUIRE(parsed.size() == kAwkwardNames.size());
    for (const ManifestEntry &e : parsed) {
        REQUIRE(content.count(e.name) == 1);
        CHECK(e.digest == sha_of(content[e.name]));
    }
    // Ours, checked by it.
    std::vector<ManifestEntry> ours;
    for (const auto &[name, bytes] : content)
        ours.push_back({name, sha_of(bytes)});
    REQUIRE(write_manifest(t / "SHA256SUMS", ours).ok());
    CHECK(::system(("cd '" + t.path() + "' && sha256sum --quiet -c SHA256SUMS").c_str()) == 0);
}

TEST_CASE("manifest names: relative below the manifest's folder, absolute elsewhere")
{
    CHECK(manifest_name("/media/STICK", "/media/STICK/a/b.txt") == "a/b.txt");
    CHECK(manifest_name("/media/STICK", "/media/STICKER/b.txt") == "/media/STICKER/b.txt");
    CHECK(manifest_name("/media/STICK", "/elsewhere/b.txt") == "/elsewhere/b.txt");
    CHECK(manifest_name("/", "/b.txt") == "b.txt");
}

TEST_CASE("a copy records each file's SHA-256, small and big, and write_manifest keeps older lines")
{
    TempDir t;
    REQUIRE(::mkdir((t / "tree").c_str(), 0755) == 0);
    write_pattern_file(t / "tree/small", 5000, 1);
    write_pattern_file(t / "tree/big", 3 * 1024 * 1024 + 17, 2);
    write_text_file(t / "tree/empty", "");
    REQUIRE(::mkdir((t / "out").c_str(), 0755) == 0);
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    spec.hash_sources = true;
    JobRun run = run_job(spec);
    REQUIRE(run.summary.ok());
    std::map<std::string, Sha256Digest> got;
    for (const JobEvent &e : run.events)
        if (e.kind == JobEvent::Kind::FileDone && e.digest)
            got[e.target] = *e.digest;
    REQUIRE(got.size() == 3);
    for (const std::string name : {"small", "big", "empty"})
        CHECK(got.at(t / ("out/tree/" + name)) == sha_of(read_file(t / ("tree/" + name))));

    write_text_file(t / "out/SHA256SUMS", format_manifest_line({"older", sha_of("x")}));
    REQUIRE(write_manifest(t / "out/SHA256SUMS", {{"tree/small", got.at(t / "out/tree/small")}}).ok());
    const std::vector<ManifestEntry> merged = parse_manifest(read_file(t / "out/SHA256SUMS"));
    REQUIRE(merged.size() == 2);
    CHECK(merged[0].name == "older");
    CHECK(merged[1].name == "tree/small");
}

TEST_CASE("check: a flipped byte and a missing file are found, and an intact copy passes")
{
    TempDir t;
    write_text_file(t / "a", "first file");
    write_text_file(t / "b", "second file");
    REQUIRE(write_manifest(t / "SHA256SUMS", {{"a", sha_of("first file")}, {"b", sha_of("second file")}}).ok());
    auto results = [&] {
        std::map<std::string, CheckedFile::Result> r;
        const JobControl control;
        REQUIRE(check_manifest(t / "SHA256SUMS", control, [&](const CheckedFile &f) { r[f.name] = f.result; }).ok());
        return r;
    };
    CHECK(results() ==
          std::map<std::string, CheckedFile::Result> {{"a", CheckedFile::Result::Ok}, {"b", CheckedFile::Result::Ok}});
    write_text_file(t / "a", "first filE");
    REQUIRE(::unlink((t / "b").c_str()) == 0);
    CHECK(results() == std::map<std::string, CheckedFile::Result> {{"a", CheckedFile::Result::Mismatch},
                                                                   {"b", CheckedFile::Result::Missing}});
    // A name that is a FIFO or a device now: said so at once, never read without end or waited on.
    REQUIRE(::unlink((t / "a").c_str()) == 0);
    REQUIRE(::mkfifo((t / "a").c_str(), 0644) == 0);
    REQUIRE(::symlink("/dev/zero", (t / "b").c_str()) == 0);
    CHECK(results() == std::map<std::string, CheckedFile::Result> {{"a", CheckedFile::Result::Unreadable},
                                                                   {"b", CheckedFile::Result::Unreadable}});
    // Not a manifest at all.
    write_text_file(t / "notes.txt", "just text\n");
    const JobControl control;
    CHECK_FALSE(check_manifest(t / "notes.txt", control, [](const CheckedFile &) {}).ok());
}
