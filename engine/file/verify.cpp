// SPDX-License-Identifier: GPL-2.0-or-later
#include "verify.h"

#include "i18n.h"
#include "page_cache_policy.h"
#include "sys.h"

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <vector>
#include <xxhash.h>

namespace sanecopy {

namespace {

// Reads exactly |len| bytes at |off| unless the file ends first; returns the count or -1.
ssize_t read_full(int fd, char *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = sys().pread(fd, buf + done, len - done, off_t(off + done));
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        done += size_t(n);
    }
    return ssize_t(done);
}

struct Xxh3 {
    XXH3_state_t *state = XXH3_createState();
    Xxh3() { XXH3_64bits_reset(state); }
    ~Xxh3() { XXH3_freeState(state); }
    Xxh3(const Xxh3 &) = delete;
    Xxh3 &operator=(const Xxh3 &) = delete;
};

} // namespace

Status verify_copy(int source, int copy, uint64_t size, const std::string &path, bool evict, const JobControl *control)
{
    // Clean after fdatasync, so this really empties the cache of the copy: the reads below go to the device.
    if (evict)
        drop_written_pages(copy);
    SourceCache source_cache(source, size, evict);
    constexpr size_t kBlock = 1 << 20;
    std::vector<char> a(kBlock), b(kBlock);
    Xxh3 ha, hb;
    Status result;
    for (uint64_t off = 0; off < size;) {
        if (control && control->cancel_requested()) {
            result = Status::from_errno(ECANCELED, "verify", path);
            break;
        }
        if (control)
            control->beat();
        const size_t want = size_t(std::min<uint64_t>(kBlock, size - off));
        const ssize_t na = read_full(source, a.data(), want, off);
        if (na < 0) {
            result = Status::source(errno, "read source", path);
            break;
        }
        const ssize_t nb = read_full(copy, b.data(), want, off);
        if (nb < 0) {
            result = Status::destination(errno, "read back", path);
            break;
        }
        XXH3_64bits_update(ha.state, a.data(), size_t(na));
        XXH3_64bits_update(hb.state, b.data(), size_t(nb));
        if (na != ssize_t(want) || nb != ssize_t(want))
            break; // a short file hashes short, and the digests tell
        off += want;
        source_cache.release_until(off);
        // Drop what was read back as we go: verify must not fill the cache any more than the copy did.
        if (evict)
            drop_read_pages(copy, off - want, want);
    }
    source_cache.release_all();
    if (evict)
        drop_written_pages(copy);
    if (!result.ok())
        return result;
    if (XXH3_64bits_digest(ha.state) != XXH3_64bits_digest(hb.state))
        return Status::destination(EBADMSG, "verify", path)
            .with_detail(i18n("the copy read back from the device differs from the source (verify failed)"));
    return {};
}

bool same_bytes(int a, int b, uint64_t size, bool evict)
{
    if (evict)
        drop_written_pages(b);
    SourceCache a_cache(a, size, evict);
    constexpr size_t kBlock = 1 << 20;
    std::vector<char> x(kBlock), y(kBlock);
    bool same = true;
    for (uint64_t off = 0; same && off < size;) {
        const size_t want = size_t(std::min<uint64_t>(kBlock, size - off));
        same = read_full(a, x.data(), want, off) == ssize_t(want) &&
               read_full(b, y.data(), want, off) == ssize_t(want) && std::memcmp(x.data(), y.data(), want) == 0;
        off += want;
        a_cache.release_until(off);
        if (evict)
            drop_read_pages(b, off - want, want);
    }
    a_cache.release_all();
    return same;
}

uint64_t resume_point(int source, uint64_t source_size, int part, uint64_t part_size, const ChunkLimits &raw_limits)
{
    const ChunkLimits limits = raw_limits.checked();
    const uint64_t kAlign = limits.align;
    // As much as can have been in flight when the copy stopped (the chunk controller's budget): all of it may
    // have been lost, not only the last window.
    const uint64_t kWindow = limits.max_in_flight;
    if (part_size == 0 || part_size > source_size)
        return 0;
    uint64_t at = part_size / kAlign * kAlign;
    if (at == 0)
        return 0;
    // The tail is what a crash or a pulled stick damages (a size that reached the journal before its data, a
    // half-written last window); a prefix whose last window matches the source is taken as the copy so far.
    // A share loses writes from the middle of what was in flight, not only its end (an NFS client sends a
    // window's WRITEs side by side, and a cut link lets later ones through where earlier ones are lost): then the
    // size runs past a hole, and the window before, all of it synced before the last window was sent, is where
    // the copy goes on.
    std::vector<char> a, b;
    for (int back = 0; back < 2 && at > 0; ++back) {
        const uint64_t from = at > kWindow ? at - kWindow : 0;
        const size_t len = size_t(at - from);
        a.resize(len);
        b.resize(len);
        if (read_full(source, a.data(), len, from) != ssize_t(len) ||
            read_full(part, b.data(), len, from) != ssize_t(len))
            return 0;
        if (std::memcmp(a.data(), b.data(), len) == 0)
            return at;
        at = from;
    }
    return 0;
}

} // namespace sanecopy
