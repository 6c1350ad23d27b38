// SPDX-License-Identifier: GPL-2.0-or-later
//
// The engine's error currency. GCC 12 has no std::expected, so this is kept tiny: an error_code, the
// operation that failed ("sendfile", "renameat", ...), the path it failed on, and which side of the copy it
// failed on. Nothing in the engine API throws or exits; every fallible call returns a Status (or a Result<T>)
// that the caller must look at.
//
// The side is decided where the error is made, by the code that knows which descriptor failed: only a failing
// destination ends a job or keeps a part file for a resume, and front ends pick their words (KIO's "could not
// read" or "could not write") from it, so nobody guesses it later from an operation's name or a path prefix.
#pragma once

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

namespace sanecopy {

// Which side of a copy failed. Neither: the request itself (a usage error, a plan that can't work).
enum class Side : unsigned char { Neither, Source, Destination };

class [[nodiscard]] Status {
public:
    Status() = default;
    Status(std::error_code code, std::string op, std::string path, Side side = Side::Neither)
        : code_(code), op_(std::move(op)), path_(std::move(path)), side_(side)
    {}

    // An error of the request itself, on neither side.
    static Status from_errno(int err, std::string op, std::string path)
    {
        return {std::error_code(err, std::generic_category()), std::move(op), std::move(path)};
    }
    // Reading the source failed (opening, listing, reading it).
    static Status source(int err, std::string op, std::string path)
    {
        return {std::error_code(err, std::generic_category()), std::move(op), std::move(path), Side::Source};
    }
    // Writing the destination failed (creating, writing, syncing, renaming there).
    static Status destination(int err, std::string op, std::string path)
    {
        return {std::error_code(err, std::generic_category()), std::move(op), std::move(path), Side::Destination};
    }

    bool ok() const noexcept { return !code_; }
    explicit operator bool() const noexcept { return ok(); }
    const std::error_code &code() const noexcept { return code_; }
    int err() const noexcept { return code_.value(); }
    const std::string &op() const noexcept { return op_; }
    const std::string &path() const noexcept { return path_; }
    Side side() const noexcept { return side_; }
    bool on_source() const noexcept { return side_ == Side::Source; }
    bool on_destination() const noexcept { return side_ == Side::Destination; }
    // The same error, said of another path (a batch's one syncfs failing for each of its files).
    Status for_path(std::string path) const
    {
        Status s = *this;
        s.path_ = std::move(path);
        return s;
    }

    // A sentence that says more than strerror can ("cannot copy a folder into itself").
    Status &&with_detail(std::string detail) &&
    {
        detail_ = std::move(detail);
        return std::move(*this);
    }
    const std::string &detail() const noexcept { return detail_; }

    // The destination's device went away (a pulled stick): what failed matters less than that. Set by the
    // engine once it has checked that the device is gone (device_removed() in device_probe.h).
    Status &&as_device_removed() &&
    {
        device_removed_ = true;
        return std::move(*this);
    }
    bool device_removed() const noexcept { return device_removed_; }

    // "path: what went wrong (op)", or "path: detail": what a user reads on stderr or in a dialog.
    std::string message() const;

    // Marks a Status deliberately dropped (best-effort clean-up on an error path).
    void ignore() const noexcept {}

private:
    std::error_code code_;
    std::string op_;
    std::string path_;
    std::string detail_;
    Side side_ = Side::Neither;
    bool device_removed_ = false;
};

// errno values after which no further file is attempted: the device is full, gone or read-only. Only said of
// errors on the destination side.
bool is_device_fatal(int err);
// errno values after which a part file stays for a later run to resume: the device failed or went away (a pulled
// stick, a share that stopped answering), but what it has is still good.
bool keeps_part_file(int err);

template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : value_(std::move(value)) {}
    Result(Status error) : status_(std::move(error)) {}

    bool ok() const noexcept { return status_.ok(); }
    const Status &status() const noexcept { return status_; }
    T &value() noexcept { return value_; }
    const T &value() const noexcept { return value_; }
    T *operator->() noexcept { return &value_; }
    const T *operator->() const noexcept { return &value_; }

private:
    T value_ {};
    Status status_;
};

} // namespace sanecopy
