// SPDX-License-Identifier: GPL-2.0-or-later
#include "i18n.h"

#include <cstdlib>
#include <cstring>
#include <libintl.h>
#include <mutex>

namespace sanecopy::i18n_detail {

namespace {

constexpr const char *kDomain = "sanecopy";

// Where the catalogues are: SANECOPY_LOCALE_DIR from the environment (the build folder's, for the tests), else
// where CMake installs them. Bound once, before the first lookup; the program itself chooses the language, with
// setlocale() (Qt's and KDE's programs do so at start, sanecp in main()).
void bind_once()
{
    static std::once_flag bound;
    std::call_once(bound, [] {
        const char *dir = std::getenv("SANECOPY_LOCALE_DIR");
        ::bindtextdomain(kDomain, dir != nullptr && *dir != '\0' ? dir : SANECOPY_LOCALE_DIR);
        ::bind_textdomain_codeset(kDomain, "UTF-8");
    });
}

} // namespace

const char *lookup(const char *context, const char *text)
{
    bind_once();
    if (context == nullptr)
        return ::dgettext(kDomain, text);
    // gettext's form of a context: "context\004text"; a text without a translation comes back whole.
    std::string key = std::string(context) + '\004' + text;
    const char *found = ::dgettext(kDomain, key.c_str());
    return found == key.c_str() ? text : found;
}

const char *lookup_plural(const char *singular, const char *plural, std::uint64_t n)
{
    bind_once();
    return ::dngettext(kDomain, singular, plural, static_cast<unsigned long>(n));
}

std::string substitute(std::string_view pattern, std::initializer_list<std::string_view> args)
{
    std::string out;
    out.reserve(pattern.size() + 32);
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '%' && i + 1 < pattern.size() && pattern[i + 1] >= '1' && pattern[i + 1] <= '9') {
            const auto index = static_cast<std::size_t>(pattern[i + 1] - '1');
            if (index < args.size()) {
                out += *(args.begin() + index);
                ++i;
                continue;
            }
        }
        out += c;
    }
    return out;
}

} // namespace sanecopy::i18n_detail
