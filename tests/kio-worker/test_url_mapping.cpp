// SPDX-License-Identifier: GPL-2.0-or-later
//
// URL <-> path mapping of the sanecopy: worker, without KIO running: every name a user can have must map to
// its exact bytes and back.
#include "catch.h"

#include "UrlMapping.h"

#include <QUrl>

using namespace SaneCopyKio;

namespace {
QByteArray pathOf(const char *url)
{
    const auto p = localPathFromUrl(QUrl(QString::fromUtf8(url)));
    REQUIRE(p.has_value());
    return *p;
}

bool rejected(const char *url) { return !localPathFromUrl(QUrl(QString::fromUtf8(url))).has_value(); }

// The same path, the long way round: bytes -> URL -> its encoded text -> a URL parsed from that -> bytes.
QByteArray roundTrip(const QByteArray &path)
{
    const QUrl url = urlFromLocalPath(path);
    const auto back = localPathFromUrl(QUrl::fromEncoded(url.toEncoded()));
    REQUIRE(back.has_value());
    return *back;
}
} // namespace

TEST_CASE("url mapping: sanecopy:///abs/path is the local path /abs/path")
{
    CHECK(pathOf("sanecopy:///media/me/STICK") == "/media/me/STICK");
    CHECK(pathOf("sanecopy:/media/me/STICK") == "/media/me/STICK");
    CHECK(pathOf("sanecopy://localhost/media/me") == "/media/me");
    CHECK(pathOf("sanecopy:///") == "/");
    CHECK(pathOf("sanecopy://") == "/");
    CHECK(pathOf("sanecopy:///media/me/STICK/") == "/media/me/STICK"); // a folder's trailing slash is not a name
    CHECK(pathOf("file:///home/me/a%20b.txt") == "/home/me/a b.txt");
}

TEST_CASE("url mapping: other hosts, other schemes and broken paths are refused")
{
    CHECK(rejected("sanecopy://otherhost/media/me"));
    CHECK(rejected("smb://server/share/file"));
    CHECK(rejected("sanecopy:relative/path"));
    CHECK(rejected("sanecopy:///a%00b"));     // no NUL in a path
    CHECK(rejected("sanecopy:///media/a?b")); // an unencoded '?' split the name: not ours to guess
    CHECK(rejected("sanecopy:///media/a#b"));
    CHECK(rejected("not a url at all"));
}

TEST_CASE("url mapping: percent-encoded bytes are the path's bytes, UTF-8 or not")
{
    CHECK(pathOf("sanecopy:///media/caf%C3%A9") == "/media/caf\xC3\xA9");
    CHECK(pathOf("sanecopy:///media/caf\xC3\xA9") == "/media/caf\xC3\xA9");
    CHECK(pathOf("sanecopy:///media/latin1-%E9") == "/media/latin1-\xE9");
    CHECK(pathOf("sanecopy:///media/100%25") == "/media/100%");
    CHECK(pathOf("sanecopy:///media/a%23b%3Fc") == "/media/a#b?c");
}

TEST_CASE("url mapping: a name KDE spelled with U+10FExx maps back to its raw bytes")
{
    // Dolphin lists "latin1-\xE9" from the file worker as "latin1-" U+10FE69 and puts that into the URL.
    const QString kdeName = decodeFileName("latin1-\xE9");
    CHECK(kdeName.size() == 9); // 7 ASCII + one surrogate pair
    CHECK(kdeName.toUcs4().last() == 0x10FE69u);
    QUrl url(QStringLiteral("sanecopy:///media/"));
    url.setPath(url.path() + kdeName);
    CHECK(localPathFromUrl(url) == QByteArray("/media/latin1-\xE9"));
}

TEST_CASE("url mapping: file names decode the KDE way and encode back to the same bytes")
{
    const QByteArray names[] = {
        "plain",
        "with space",
        "quote\"s and 'apostrophes'",
        "new\nline",
        "tab\there",
        "caf\xC3\xA9",
        "\xE6\x97\xA5\xE6\x9C\xAC",
        "latin1-\xE9",
        "\xFF\xFE",
        "mixed-\xC3\xA9-\xE9",
        "\xEF\xBB\xBF"
        "bom",
        "emoji-\xF0\x9F\x98\x80",
        "%41 not an escape",
        "$HOME `cmd` \\ back",
    };
    for (const QByteArray &n : names) {
        INFO(n.toHex().constData());
        CHECK(encodeFileName(decodeFileName(n)) == n);
    }
    CHECK(decodeFileName("caf\xC3\xA9") == QString::fromUtf8("caf\xC3\xA9"));
    // Not UTF-8: every byte >= 0x80 of the name stands alone, even the ones that would form a valid sequence.
    CHECK(decodeFileName("\xC3\xA9\xE9").toUcs4() == QVector<uint>({0x10FE43, 0x10FE29, 0x10FE69}));
}

TEST_CASE("url mapping: every path survives bytes -> URL -> text -> URL -> bytes")
{
    QByteArray all;
    for (int b = 1; b < 256; ++b)
        if (b != '/')
            all.append(char(b));
    const QByteArray paths[] = {
        "/",
        "/media/me/STICK",
        "/media/a b/c  d",
        "/media/quote\"s/'single'",
        "/media/new\nline/x",
        "/media/hash#/question?/percent%/amp&/plus+/semi;/eq=",
        "/media/latin1-\xE9/\xFF",
        "/media/caf\xC3\xA9",
        "/media/" + all,
        "/media/.hidden/..dots",
        "/media/~tilde/-dash/_under",
    };
    for (const QByteArray &p : paths) {
        INFO(p.toHex().constData());
        CHECK(roundTrip(p) == p);
        CHECK(urlFromLocalPath(p).scheme() == QLatin1String("sanecopy"));
    }
    CHECK(urlFromLocalPath("/media/a b").toEncoded() == "sanecopy:///media/a%20b");
    CHECK(urlFromLocalPath("/x", QStringLiteral("file")).toEncoded() == "file:///x");
}

TEST_CASE("url mapping: argv bytes from a launcher that wrote the KDE spelling as UTF-8")
{
    const QByteArray raw = "/media/latin1-\xE9/\xFF";
    CHECK(legacyBytesToRaw(encodeFileName(decodeFileName(raw))) == raw);
    CHECK(legacyBytesToRaw(decodeFileName(raw).toUtf8()) == raw);
    CHECK(legacyBytesToRaw("/plain/caf\xC3\xA9") == "/plain/caf\xC3\xA9");
    CHECK(legacyBytesToRaw("\xF4\x8F") == "\xF4\x8F"); // a cut-off sequence is left alone
}

TEST_CASE("url mapping: paths for messages stay readable per component")
{
    CHECK(displayPath("/media/caf\xC3\xA9/x") == QString::fromUtf8("/media/caf\xC3\xA9/x"));
    const QString shown = displayPath("/media/caf\xC3\xA9/\xE9");
    CHECK(shown.startsWith(QString::fromUtf8("/media/caf\xC3\xA9/")));
}

TEST_CASE("url mapping: sanecopy://devices/ is the list of sticks, and a path on one of them")
{
    auto dev = [](const char *url) {
        const auto p = devicePathFromUrl(QUrl(QString::fromUtf8(url)));
        REQUIRE(p.has_value());
        return *p;
    };
    CHECK(dev("sanecopy://devices/").device.isEmpty());
    CHECK(dev("sanecopy://devices").device.isEmpty());
    CHECK(dev("sanecopy://devices/STICK").device == "STICK");
    CHECK(dev("sanecopy://devices/STICK/").rest.isEmpty());
    CHECK(dev("sanecopy://devices/My%20Stick/DCIM//a%23b/").device == "My Stick");
    CHECK(dev("sanecopy://devices/My%20Stick/DCIM//a%23b/").rest == "/DCIM/a#b");
    CHECK(dev("sanecopy://devices/caf%C3%A9/latin1-%E9").rest == "/latin1-\xE9");
    // Not the device list: today's local-path URLs, other hosts and schemes.
    CHECK_FALSE(devicePathFromUrl(QUrl(QStringLiteral("sanecopy:///devices/STICK"))));
    CHECK_FALSE(devicePathFromUrl(QUrl(QStringLiteral("sanecopy://other/STICK"))));
    CHECK_FALSE(devicePathFromUrl(QUrl(QStringLiteral("file://devices/STICK"))));
    // Nothing climbs out of a stick, and nothing is half a name.
    CHECK_FALSE(devicePathFromUrl(QUrl(QStringLiteral("sanecopy://devices/STICK/../../etc"))));
    CHECK_FALSE(devicePathFromUrl(QUrl(QStringLiteral("sanecopy://devices/STICK/a%2F..%2F..%2Fetc"))));
    CHECK_FALSE(devicePathFromUrl(QUrl(QStringLiteral("sanecopy://devices/STICK/a%00b"))));
    CHECK_FALSE(devicePathFromUrl(QUrl(QStringLiteral("sanecopy://devices/STICK/a?b"))));
    // And sanecopy:///abs/path is still a local path, while the device list is none.
    CHECK(pathOf("sanecopy:///devices/STICK") == "/devices/STICK");
    CHECK(rejected("sanecopy://devices/STICK"));
    // Back to a URL: a name with a space and a '#' survives.
    CHECK(devicesUrl().toString() == QStringLiteral("sanecopy://devices/"));
    CHECK(dev(devicesUrl("A #1").toEncoded().constData()).device == "A #1");
    CHECK(dev(devicesUrl("caf\xC3\xA9 \xE9").toEncoded().constData()).device == "caf\xC3\xA9 \xE9");
    // The URL KIO gives a listed folder: the list's URL and the folder's name. A KDirNotify signal about a device
    // must name it exactly so, "(" and all, or Dolphin's views don't see which item it is.
    QUrl listed = devicesUrl();
    listed.setPath(listed.path() + QStringLiteral("STICK (sdb1)"));
    CHECK(devicesUrl("STICK (sdb1)") == listed);
}
