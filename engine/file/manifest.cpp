// SPDX-License-Identifier: GPL-2.0-or-later
#include "manifest.h"

#include "i18n.h"
#include "paths.h"
#include "fd.h"
#include "page_cache_policy.h"
#include "stream_writer.h"
#include "sys.h"

#include <algorithm>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <nettle/sha2.h>
#include <sys/stat.h>
#include <vector>

namespace sanecopy {

struct Sha256::Context {
    sha256_ctx ctx;
};

Sha256::Sha256() : ctx_(std::make_unique<Context>()) { sha256_init(&ctx_->ctx); }
Sha256::~Sha256() = default;

void Sha256::update(const void *data, std::size_t len)
{
    sha256_update(&ctx_->ctx, len, static_cast<const uint8_t *>(data));
}

Sha256Digest Sha256::finish()
{
    Sha256Digest d {};
    sha256_digest(&ctx_->ctx, d.size(), d.data()); // also starts the context over
    return d;
}

std::string to_hex(const Sha256Digest &digest)
{
    static const char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(digest.size() * 2);
    for (uint8_t b : digest) {
        out += hex[b >> 4];
        out += hex[b & 15];
    }
    return out;
}

std::string format_manifest_line(const ManifestEntry &entry)
{
    const bool escaped = entry.name.find_first_of("\\\n\r") != std::string::npos;
    std::string line = escaped ? "\\" : "";
    line += to_hex(entry.digest) + "  ";
    for (char c : entry.name) {
        if (!escaped)
            line += c;
        else if (c == '\\')
            line += "\\\\";
        else if (c == '\n')
            line += "\\n";
        else if (c == '\r')
            line += "\\r";
        else
            line += c;
    }
    return line + "\n";
}

namespace {

int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

std::optional<std::string> unescape(std::string_view name)
{
    std::string out;
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (name[i] != '\\') {
            out += name[i];
            continue;
        }
        if (++i == name.size())
            return std::nullopt;
        switch (name[i]) {
        case '\\':
            out += '\\';
            break;
        case 'n':
            out += '\n';
            break;
        case 'r':
            out += '\r';
            break;
        default:
            return std::nullopt;
        }
    }
    return out;
}

} // namespace

std::optional<ManifestEntry> parse_manifest_line(std::string_view line)
{
    const bool escaped = !line.empty() && line.front() == '\\';
    if (escaped)
        line.remove_prefix(1);
    ManifestEntry e;
    // 64 hex digits, a space, then ' ' (text) or '*' (binary), then the name.
    if (line.size() < 64 + 2 + 1 || line[64] != ' ' || (line[65] != ' ' && line[65] != '*'))
        return std::nullopt;
    for (std::size_t i = 0; i < 32; ++i) {
        const int hi = hex_value(line[2 * i]), lo = hex_value(line[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return std::nullopt;
        e.digest[i] = uint8_t(hi << 4 | lo);
    }
    std::string_view name = line.substr(66);
    if (!escaped) {
        e.name = std::string(name);
        return e;
    }
    auto plain = unescape(name);
    if (!plain)
        return std::nullopt;
    e.name = std::move(*plain);
    return e;
}

std::vector<ManifestEntry> parse_manifest(std::string_view text, std::size_t *unparsed)
{
    std::vector<ManifestEntry> entries;
    std::size_t bad = 0;
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        if (line.empty())
            continue;
        if (auto e = parse_manifest_line(line))
            entries.push_back(std::move(*e));
        else
            ++bad;
    }
    if (unparsed)
        *unparsed = bad;
    return entries;
}

std::string manifest_name(const std::string &manifest_dir, const std::string &path)
{
    const std::string dir = manifest_dir == "/" ? std::string() : manifest_dir;
    if (path.size() > dir.size() + 1 && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/')
        return path.substr(dir.size() + 1);
    return path;
}

namespace {

// Reads a whole (small) file through the seam. ENOENT comes back as is, for "no manifest yet".
Result<std::string> read_text(const std::string &path)
{
    UniqueFd fd(sys().openat(AT_FDCWD, path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0));
    if (!fd)
        return Status::destination(errno, "open", path);
    std::string text;
    char buf[65536];
    for (off_t off = 0;;) {
        const ssize_t n = sys().pread(fd.get(), buf, sizeof buf, off);
        if (n < 0)
            return Status::destination(errno, "read", path);
        if (n == 0)
            return text;
        text.append(buf, std::size_t(n));
        off += n;
    }
}

} // namespace

Status write_manifest(const std::string &manifest_path, const std::vector<ManifestEntry> &entries)
{
    std::map<std::string, Sha256Digest> merged;
    if (Result<std::string> old = read_text(manifest_path); old.ok()) {
        for (ManifestEntry &e : parse_manifest(old.value()))
            merged[e.name] = e.digest;
    } else if (old.status().err() != ENOENT) {
        return old.status();
    }
    for (const ManifestEntry &e : entries)
        merged[e.name] = e.digest;
    std::string text;
    for (const auto &[name, digest] : merged)
        text += format_manifest_line({name, digest});

    ProgressCounters counters;
    StreamOptions options;
    options.conflict = ConflictPolicy::Overwrite; // by rename, once the new manifest is durable
    options.expected_size = text.size();
    options.mode = 0644;
    Result<StreamWriter> writer = StreamWriter::create(manifest_path, options, counters);
    if (!writer.ok())
        return writer.status();
    if (Status s = writer->write(text.data(), text.size()); !s)
        return s;
    return writer->finish();
}

namespace {
std::string absolute_normal(const std::string &path)
{
    return std::filesystem::absolute(path).lexically_normal().string();
}
} // namespace

std::string default_manifest_path(const std::string &destination)
{
    struct stat st {};
    const bool is_dir = sys().fstatat(AT_FDCWD, destination.c_str(), &st, 0) == 0 && S_ISDIR(st.st_mode);
    const std::string dir = is_dir ? destination : split_path(strip_trailing_slashes(destination)).first;
    return absolute_normal(dir + "/SHA256SUMS");
}

Status write_job_manifest(const std::string &manifest_path,
                          const std::vector<std::pair<std::string, Sha256Digest>> &files)
{
    const std::string path = absolute_normal(manifest_path);
    const std::string dir = split_path(path).first;
    std::vector<ManifestEntry> entries;
    entries.reserve(files.size());
    for (const auto &[target, digest] : files)
        entries.push_back({manifest_name(dir, absolute_normal(target)), digest});
    return write_manifest(path, entries);
}

Status hash_from_device(int fd, const std::string &display, const JobControl &control, Sha256Digest &digest)
{
    sys().fdatasync(fd); // a cached page that is still dirty is not dropped: write it out first
    drop_written_pages(fd);
    sys().fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    Sha256 hash;
    std::vector<char> buf(1 << 20);
    for (uint64_t off = 0;;) {
        if (control.cancel_requested())
            return Status::from_errno(ECANCELED, "check", display);
        const ssize_t n = sys().pread(fd, buf.data(), buf.size(), off_t(off));
        if (n < 0)
            return Status::destination(errno, "read back", display);
        if (n == 0)
            break;
        hash.update(buf.data(), std::size_t(n));
        drop_read_pages(fd, off, uint64_t(n));
        off += uint64_t(n);
    }
    drop_written_pages(fd);
    digest = hash.finish();
    return {};
}

namespace {

CheckedFile check_one(int dirfd, const std::string &dir, const ManifestEntry &e, const JobControl &control,
                      Status &stop)
{
    CheckedFile r {e.name, CheckedFile::Result::Ok, {}};
    const std::string display = e.name.front() == '/' ? e.name : dir + "/" + e.name;
    UniqueFd fd(sys().openat(dirfd, e.name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0));
    if (!fd) {
        r.result = errno == ENOENT ? CheckedFile::Result::Missing : CheckedFile::Result::Unreadable;
        r.status = Status::destination(errno, "open", display);
        return r;
    }
    // A name that is a device or a FIFO now (/dev/zero has no end): not the file that was summed.
    struct stat st {};
    if (sys().fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        r.result = CheckedFile::Result::Unreadable;
        r.status = Status::destination(EINVAL, "open", display).with_detail(i18n("is not a regular file"));
        return r;
    }
    Sha256Digest digest {};
    if (Status s = hash_from_device(fd.get(), display, control, digest); !s) {
        if (s.err() == ECANCELED)
            stop = s;
        r.result = CheckedFile::Result::Unreadable;
        r.status = std::move(s);
        return r;
    }
    if (digest != e.digest)
        r.result = CheckedFile::Result::Mismatch;
    return r;
}

} // namespace

Status check_manifest(const std::string &manifest_path, const JobControl &control,
                      const std::function<void(const CheckedFile &)> &each)
{
    Result<std::string> text = read_text(manifest_path);
    if (!text.ok())
        return text.status();
    std::size_t unparsed = 0;
    const std::vector<ManifestEntry> entries = parse_manifest(text.value(), &unparsed);
    if (entries.empty())
        return Status::from_errno(EINVAL, "check", manifest_path).with_detail(i18n("holds no SHA-256 checksum lines"));
    const std::string dir = split_path(manifest_path).first;
    UniqueFd dirfd(sys().openat(AT_FDCWD, dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
    if (!dirfd)
        return Status::destination(errno, "open folder", dir);
    for (const ManifestEntry &e : entries) {
        Status stop;
        const CheckedFile r = check_one(dirfd.get(), dir, e, control, stop);
        if (!stop.ok())
            return stop;
        each(r);
    }
    return {};
}

} // namespace sanecopy
