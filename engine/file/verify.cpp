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

Status verify_copy(int source, int copy, uint64_t size, const std::string &path, bool evict,
                   const std::function<bool()> &go_on)
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
        if (go_on && !go_on()) {
            result = Status::from_errno(ECANCELED, "verify", path);
            break;
        }
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

bool same_bytes(int a, int b, uint64_t size, bool evict, const std::function<bool()> &go_on)
{
    if (evict)
        drop_written_pages(b);
    SourceCache a_cache(a, size, evict);
    constexpr size_t kBlock = 1 << 20;
    std::vector<char> x(kBlock), y(kBlock);
    bool same = true;
    for (uint64_t off = 0; same && off < size;) {
        if (go_on && !go_on()) {
            same = false;
            break;
        }
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

uint64_t resume_point(int source, uint64_t source_size, int part, uint64_t part_size, const ChunkLimits &raw_limits,
                      const std::function<bool()> &go_on)
{
    // Every byte of the prefix is compared, not a sample: a part file of another source of the same name (a
    // disk image cloned from the same base, one with the same zeros at the end) or of this source before it was
    // changed in the middle matches wherever the two agree, and a torn tail or a write a share lost in the middle
    // of what was in flight is where they stop agreeing. Reading back costs less than writing again on a stick.
    const uint64_t align = raw_limits.checked().align;
    const uint64_t end = std::min(part_size, source_size) / align * align;
    if (part_size > source_size || end == 0)
        return 0;
    drop_written_pages(part); // the reads go to the device, not to what an earlier run left cached
    SourceCache source_cache(source, end, true);
    constexpr size_t kBlock = 1 << 20; // a block a beat: a second's reading over an 8 Mbit/s link
    std::vector<char> a(kBlock), b(kBlock);
    uint64_t off = 0;
    while (off < end) {
        if (go_on && !go_on())
            break; // stopped: what was compared so far stands
        const size_t want = size_t(std::min<uint64_t>(kBlock, end - off));
        if (read_full(source, a.data(), want, off) != ssize_t(want) ||
            read_full(part, b.data(), want, off) != ssize_t(want))
            break;
        const size_t same = size_t(std::mismatch(a.begin(), a.begin() + ptrdiff_t(want), b.begin()).first - a.begin());
        drop_read_pages(part, off, want);
        off += same;
        source_cache.release_until(off);
        if (same != want)
            break;
    }
    source_cache.release_all();
    return off / align * align;
}

} // namespace sanecopy
