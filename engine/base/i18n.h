// SPDX-License-Identifier: GPL-2.0-or-later
//
// The engine's words in the user's language: what it says in an error, a skip or a note reaches a person through
// sanecp's stderr, the window or Dolphin. gettext, domain "sanecopy" (the engine and sanecp, engine/po/), looked
// up by LANGUAGE and LC_MESSAGES like any other program's; the window's own strings are in sanecopy_qt and the KIO
// worker's in kio_sanecopy.
//
// Written as KDE's i18n() reads, for the translators who know it: "%1", "%2" stand for the arguments in order, and
// a translation may put them in another order. Not KI18n itself, which is Qt; not std::format, which GCC 12 lacks.
// The extraction (engine/po/CMakeLists.txt) takes i18n(), i18nc() and i18np() calls from engine/ and app/.
//
// Only .cpp files include this header: the KIO worker includes the engine's public headers and has KI18n's
// i18n() of its own.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

namespace sanecopy {

namespace i18n_detail {
// The catalogue's text for text (context: what a translator is told about it), or text itself.
const char *lookup(const char *context, const char *text);
const char *lookup_plural(const char *singular, const char *plural, std::uint64_t n);
// pattern with %1 ... %9 replaced by args[0] ... args[8]; "%%" and a '%' before anything else are kept as they are.
std::string substitute(std::string_view pattern, std::initializer_list<std::string_view> args);

inline std::string_view as_text(const std::string &s) { return s; }
inline std::string_view as_text(const char *s) { return s; }
inline std::string_view as_text(std::string_view s) { return s; }
template <typename Number>
    requires std::is_arithmetic_v<Number>
std::string as_text(Number n)
{
    return std::to_string(n);
}

template <typename... Args>
std::string fill(const char *pattern, const Args &...args)
{
    if constexpr (sizeof...(args) == 0)
        return pattern;
    else {
        // Numbers become text here, and live until substitute() has copied them.
        const auto keep = [](const auto &a) -> decltype(auto) { return as_text(a); };
        return [&](const auto &...texts) { return substitute(pattern, {std::string_view(texts)...}); }(keep(args)...);
    }
}
} // namespace i18n_detail

// i18n("the share at %1 stopped answering", mount_point)
template <typename... Args>
std::string i18n(const char *text, const Args &...args)
{
    return i18n_detail::fill(i18n_detail::lookup(nullptr, text), args...);
}

// The same, with a word for the translator on where the text is shown or what %1 is.
template <typename... Args>
std::string i18nc(const char *context, const char *text, const Args &...args)
{
    return i18n_detail::fill(i18n_detail::lookup(context, text), args...);
}

// A count: i18np("%1 file", "%1 files", n, ...): n is %1, the rest follow as %2, %3.
template <typename... Args>
std::string i18np(const char *singular, const char *plural, std::uint64_t n, const Args &...args)
{
    return i18n_detail::fill(i18n_detail::lookup_plural(singular, plural, n), n, args...);
}

} // namespace sanecopy
