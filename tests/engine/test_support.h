// SPDX-License-Identifier: GPL-2.0-or-later
//
// Shared pieces for the engine tests: a fresh temporary folder per test, and file helpers.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>

namespace sanecopy::test {

// A fresh folder under $TMPDIR (or /var/tmp, which is disk-backed, unlike /tmp on some systems),
// removed with everything in it when the test ends, pass or fail.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;

    const std::string &path() const { return path_; }
    std::string operator/(const std::string &name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

// Writes |size| bytes of a deterministic, seed-dependent pattern (no long runs, so it does not compress).
void write_pattern_file(const std::string &path, uint64_t size, unsigned seed = 1);
void write_text_file(const std::string &path, const std::string &text);
std::string read_file(const std::string &path);
bool exists(const std::string &path); // lstat succeeds
bool same_bytes(const std::string &a, const std::string &b);
std::string list_tree(const std::string &root); // sorted "rel\ttype" lines, for comparisons
uint64_t file_size(const std::string &path);
// The share of |path|'s pages in the page cache (mincore), and dropping them (after writing them out).
double residency(const std::string &path);
void evict(const std::string &path);

} // namespace sanecopy::test
