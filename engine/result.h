// SPDX-License-Identifier: GPL-2.0-or-later
//
// The engine's error currency. GCC 12 has no std::expected, so this is kept tiny: an error_code, the
// operation that failed ("sendfile", "renameat", ...) and the path it failed on. Nothing in the engine API
// throws or exits; every fallible call returns a Status (or a Result<T>) that the caller must look at.
#pragma once

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

namespace sanecopy {

class [[nodiscard]] Status {
public:
    Status() = default;
    Status(std::error_code code, std::string op, std::string path)
        : code_(code), op_(std::move(op)), path_(std::move(path)) {}

    static Status from_errno(int err, std::string op, std::string path)
    {
        return {std::error_code(err, std::generic_category()), std::move(op), std::move(path)};
    }

    bool ok() const noexcept { return !code_; }
    explicit operator bool() const noexcept { return ok(); }
    const std::error_code &code() const noexcept { return code_; }
    int err() const noexcept { return code_.value(); }
    const std::string &op() const noexcept { return op_; }
    const std::string &path() const noexcept { return path_; }

    // A sentence that says more than strerror can ("cannot copy a folder into itself").
    Status &&with_detail(std::string detail) &&
    {
        detail_ = std::move(detail);
        return std::move(*this);
    }
    const std::string &detail() const noexcept { return detail_; }

    // "path: what went wrong (op)", or "path: detail": what a user reads on stderr or in a dialog.
    std::string message() const;

    // Marks a Status deliberately dropped (best-effort clean-up on an error path).
    void ignore() const noexcept {}

private:
    std::error_code code_;
    std::string op_;
    std::string path_;
    std::string detail_;
};

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
    T value_{};
    Status status_;
};

} // namespace sanecopy
