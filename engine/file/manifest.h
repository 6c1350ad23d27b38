// SPDX-License-Identifier: GPL-2.0-or-later
//
// Checksum manifests: a SHA256SUMS file on the destination that stock tools check later (`sha256sum -c`, run in
// the manifest's folder), and a check of one that reads every file back from the device.
//
// SHA-256 and not the XXH3 that verify uses: the point of a manifest is that anyone can check it anywhere, and
// sha256sum is in every coreutils, where xxhsum is a package of its own. The hash comes from Nettle (GNU), a
// small, well-kept library that GnuTLS is built on.
//
// The format is GNU sha256sum's: "<64 hex digits>  <name>" per line, the name relative to the manifest's folder
// (absolute when the file is not below it). A name holding a backslash, a newline or a carriage return is
// escaped as sha256sum does: the line starts with a backslash, and in the name "\\" stands for a backslash,
// "\n" for a newline and "\r" for a carriage return. Other bytes, UTF-8 or not, are written as they are.
//
// The hashes are of the source's bytes as the copy read them (CopySession::hash): the source is read from its
// device once, and a file that changed during the copy is recorded as it was copied.
#pragma once

#include "job_control.h"
#include "result.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sanecopy {

using Sha256Digest = std::array<uint8_t, 32>;

// Incremental SHA-256.
class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256 &) = delete;
    Sha256 &operator=(const Sha256 &) = delete;
    void update(const void *data, std::size_t len);
    // The digest of everything so far; the hash starts over afterwards.
    Sha256Digest finish();

private:
    struct Context;
    std::unique_ptr<Context> ctx_;
};

std::string to_hex(const Sha256Digest &digest);

struct ManifestEntry {
    std::string name; // as written in the manifest: relative to its folder, or absolute
    Sha256Digest digest {};
};

// One manifest line, with its newline, escaped as sha256sum escapes it. Pure.
std::string format_manifest_line(const ManifestEntry &entry);
// One line as sha256sum writes it (the text or binary marker, escapes), without its newline. Pure.
std::optional<ManifestEntry> parse_manifest_line(std::string_view line);
// Splits a manifest's text into entries; lines that are not entries (blank, comments) are left out and counted
// in |unparsed|. Pure.
std::vector<ManifestEntry> parse_manifest(std::string_view text, std::size_t *unparsed = nullptr);

// |path| as the manifest in |manifest_dir| names it: relative when below it, absolute otherwise. Both absolute
// and normalised. Pure.
std::string manifest_name(const std::string &manifest_dir, const std::string &path);

// Writes |entries| to |manifest_path| through the publish pipeline (part file, durable, then renamed onto the
// old manifest). Entries of an existing manifest at that path whose names this run did not write again are
// kept, so copying onto the same stick twice leaves one manifest of both. Sorted by name.
Status write_manifest(const std::string &manifest_path, const std::vector<ManifestEntry> &entries);

// Where a job's manifest goes when no file is named: SHA256SUMS in |destination| when that is a folder now
// (copied into, or created as a copy of one), else beside it. Absolute and normalised.
std::string default_manifest_path(const std::string &destination);

// The manifest of what a job copied: (target path, digest) of each file, named relative to the manifest's folder
// (write_manifest). |manifest_path| may be relative.
Status write_job_manifest(const std::string &manifest_path,
                          const std::vector<std::pair<std::string, Sha256Digest>> &files);

// SHA-256 of the file open at |fd| as its device holds it: whatever of it is cached is written out and dropped
// first, so the reads go to the device, and what they bring in is dropped behind them. ECANCELED when |control|
// is cancelled.
Status hash_from_device(int fd, const std::string &display, const JobControl &control, Sha256Digest &digest);

struct CheckedFile {
    enum class Result { Ok, Mismatch, Missing, Unreadable };
    std::string name; // as the manifest names it
    Result result = Result::Ok;
    Status status; // Missing, Unreadable: why
};

// Reads every file of the manifest back from its device (its cached pages are dropped first, and what the check
// read is dropped again) and compares its SHA-256. |each| is called for every file as it is done. ECANCELED when
// |control| is cancelled; a manifest that can't be read or holds no entry is an error too.
Status check_manifest(const std::string &manifest_path, const JobControl &control,
                      const std::function<void(const CheckedFile &)> &each);

} // namespace sanecopy
