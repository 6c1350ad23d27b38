# SPDX-License-Identifier: GPL-2.0-or-later
# sanecopy_gettext_domain(DOMAIN SOURCES files... LANGUAGES langs...): one gettext domain, as KDE's translators work
# in it.
#   - Its template, DOMAIN.pot, is extracted from SOURCES at every build that changes them (xgettext, with KDE's
#     keywords i18n, i18nc, i18np, i18ncp: KI18n's in the KIO worker, base/i18n.h's in the engine and sanecp),
#     into the calling folder's build folder; tests/packaging/test_translations.py holds each catalogue to it.
#   - Each LANG.po of the calling folder becomes LANG/LC_MESSAGES/DOMAIN.mo (msgfmt --check) in the build folder's
#     locale/, and is installed under share/locale.
# English needs no catalogue: gettext's own English plural rule is the one the sources are written in.
find_program(SANECOPY_XGETTEXT xgettext)
find_program(SANECOPY_MSGFMT msgfmt)
if(NOT SANECOPY_XGETTEXT OR NOT SANECOPY_MSGFMT)
    message(FATAL_ERROR "gettext's xgettext and msgfmt are needed for the translations "
                        "(Debian: apt install gettext; packaging/dev.sh installs it)")
endif()

function(sanecopy_gettext_domain domain)
    cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LANGUAGES")
    set(template ${CMAKE_CURRENT_BINARY_DIR}/${domain}.pot)
    add_custom_command(OUTPUT ${template}
                       COMMAND ${SANECOPY_XGETTEXT} --c++ --kde --from-code=UTF-8 --no-location --sort-output
                               -ki18n:1 -ki18nc:1c,2 -ki18np:1,2 -ki18ncp:1c,2,3 --package-name=SaneCopy
                               --package-version=${PROJECT_VERSION}
                               --msgid-bugs-address=https://github.com/sanecopy/sanecopy/issues
                               -o ${template} ${arg_SOURCES}
                       DEPENDS ${arg_SOURCES}
                       COMMENT "Extracting the strings of ${domain}.pot"
                       VERBATIM)
    set(catalogues ${template})
    foreach(lang IN LISTS arg_LANGUAGES)
        set(mo ${SANECOPY_LOCALE_BUILD_DIR}/${lang}/LC_MESSAGES/${domain}.mo)
        add_custom_command(OUTPUT ${mo}
                           COMMAND ${CMAKE_COMMAND} -E make_directory ${SANECOPY_LOCALE_BUILD_DIR}/${lang}/LC_MESSAGES
                           COMMAND ${SANECOPY_MSGFMT} --check -o ${mo} ${CMAKE_CURRENT_SOURCE_DIR}/${lang}.po
                           DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${lang}.po
                           COMMENT "Catalogue ${lang} of ${domain}"
                           VERBATIM)
        install(FILES ${mo} DESTINATION ${CMAKE_INSTALL_LOCALEDIR}/${lang}/LC_MESSAGES)
        list(APPEND catalogues ${mo})
    endforeach()
    add_custom_target(${domain}_translations ALL DEPENDS ${catalogues})
endfunction()
