// SPDX-License-Identifier: GPL-2.0-or-later
#include "test_support.h"

#include <algorithm>
#include <fcntl.h>
#include <sys/mman.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ftw.h>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace sanecopy::test {

TempDir::TempDir()
{
    const char *base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/var/tmp") + "/sanecopy-test-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data()))
        throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
    path_ = buf.data();
}

TempDir::~TempDir()
{
    // Tests may leave read-only folders behind; make them writable again on the way down so removal works.
    auto remove_one = [](const char *p, const struct stat *st, int type, FTW *) -> int {
        (void)st;
        if (type == FTW_DP)
            ::rmdir(p);
        else
            ::unlink(p);
        return 0;
    };
    auto unlock = [](const char *p, const struct stat *st, int type, FTW *) -> int {
        if (type == FTW_D)
            ::chmod(p, (st->st_mode & 07777) | S_IRWXU);
        return 0;
    };
    ::nftw(path_.c_str(), unlock, 32, FTW_PHYS);
    ::nftw(path_.c_str(), remove_one, 32, FTW_PHYS | FTW_DEPTH);
}

void write_pattern_file(const std::string &path, uint64_t size, unsigned seed)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    std::vector<char> block(1 << 16);
    uint64_t x = 0x9E3779B97F4A7C15ull * (seed + 1);
    for (uint64_t done = 0; done < size;) {
        for (auto &c : block) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            c = static_cast<char>(x);
        }
        auto n = static_cast<std::streamsize>(std::min<uint64_t>(block.size(), size - done));
        out.write(block.data(), n);
        done += static_cast<uint64_t>(n);
    }
    if (!out)
        throw std::runtime_error("cannot write " + path);
}

void write_text_file(const std::string &path, const std::string &text)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out)
        throw std::runtime_error("cannot write " + path);
}

std::string read_file(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw std::runtime_error("cannot read " + path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool exists(const std::string &path)
{
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

bool same_bytes(const std::string &a, const std::string &b) { return read_file(a) == read_file(b); }

uint64_t file_size(const std::string &path)
{
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0)
        throw std::runtime_error("cannot stat " + path);
    return static_cast<uint64_t>(st.st_size);
}

namespace {
std::vector<std::string> *g_lines;
std::size_t g_prefix;
} // namespace

std::string list_tree(const std::string &root)
{
    std::vector<std::string> lines;
    g_lines = &lines;
    g_prefix = root.size();
    ::nftw(
        root.c_str(),
        [](const char *p, const struct stat *st, int, FTW *) -> int {
            std::string rel = std::string(p).substr(g_prefix);
            if (!rel.empty() && rel[0] == '/')
                rel.erase(0, 1);
            const char *kind = S_ISDIR(st->st_mode)   ? "dir"
                               : S_ISLNK(st->st_mode) ? "link"
                               : S_ISREG(st->st_mode) ? "file"
                                                      : "other";
            std::ostringstream line;
            line << (rel.empty() ? "." : rel) << '\t' << kind;
            if (S_ISREG(st->st_mode))
                line << '\t' << st->st_size;
            g_lines->push_back(line.str());
            return 0;
        },
        32, FTW_PHYS);
    std::sort(lines.begin(), lines.end());
    std::string out;
    for (auto &l : lines)
        out += l + "\n";
    return out;
}

double residency(const std::string &path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw std::runtime_error("cannot open " + path);
    const uint64_t size = file_size(path);
    void *map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED)
        throw std::runtime_error("cannot map " + path);
    const long ps = ::sysconf(_SC_PAGESIZE);
    std::vector<unsigned char> vec((size + ps - 1) / ps);
    const int rc = ::mincore(map, size, vec.data());
    ::munmap(map, size);
    if (rc != 0)
        throw std::runtime_error("mincore failed on " + path);
    const auto in = std::count_if(vec.begin(), vec.end(), [](unsigned char v) { return (v & 1) != 0; });
    return double(in) / double(vec.size());
}

void evict(const std::string &path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
}

} // namespace sanecopy::test
