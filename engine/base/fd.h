// SPDX-License-Identifier: GPL-2.0-or-later
//
// UniqueFd: the one owner of a file descriptor. -1 means closed. close() is never retried on EINTR: on
// Linux the descriptor is gone either way, and a retry could close a descriptor another thread just got.
#pragma once

#include <utility>

namespace sanecopy {

class UniqueFd {
public:
    UniqueFd() noexcept = default;
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    UniqueFd(const UniqueFd &) = delete;
    UniqueFd &operator=(const UniqueFd &) = delete;
    UniqueFd(UniqueFd &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    UniqueFd &operator=(UniqueFd &&other) noexcept
    {
        if (this != &other)
            reset(std::exchange(other.fd_, -1));
        return *this;
    }
    ~UniqueFd() { reset(); }

    int get() const noexcept { return fd_; }
    bool valid() const noexcept { return fd_ >= 0; }
    explicit operator bool() const noexcept { return valid(); }
    int release() noexcept { return std::exchange(fd_, -1); }

    // Closes the current descriptor (through the syscall seam) and adopts |fd|. Returns close()'s errno,
    // 0 on success. Callers that need to know whether buffered data made it should fdatasync first;
    // a close error on Linux only repeats what fsync would have said.
    int reset(int fd = -1) noexcept;

private:
    int fd_ = -1;
};

} // namespace sanecopy
