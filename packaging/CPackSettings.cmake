# SPDX-License-Identifier: GPL-2.0-or-later
#
# A native Debian package of everything the build installs: `cpack -G DEB` in the build folder, then
# `apt install ./sanecopy_*.deb`. Included at the very end of the root CMakeLists.txt, because CPack packs
# the install rules of the whole tree and reads these variables when include(CPack) runs.
#
# One package, no components: the install rules (app/, icons/, packaging/, kio-worker/) carry no COMPONENT, and
# a single .deb holds whatever they install: sanecopy, sanecp, the desktop file, the metainfo, the icons and,
# when kio-worker/ is built, the KIO worker plugin, its helper and the Dolphin service menus.
#
# Configure with -DCMAKE_INSTALL_PREFIX=/usr for a package: the package installs at the build's own prefix
# (the KIO worker's service menu holds the helper's absolute path, so the two must agree), and Qt 5 looks for
# KIO workers only under its own plugin folder, /usr/lib/<triplet>/qt5/plugins.

set(SANECOPY_PACKAGE_MAINTAINER "SaneCopy developers <sanecopy@users.noreply.github.com>"
    CACHE STRING "Maintainer field of the .deb (Name <email>)")

# Write the values below into CPackConfig.cmake escaped, as given: the description has quotes and newlines.
set(CPACK_VERBATIM_VARIABLES ON)
set(CPACK_PACKAGE_NAME sanecopy)
set(CPACK_PACKAGE_VENDOR "SaneCopy")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "file copier that copies at the device's own speed")
set(CPACK_PACKAGE_HOMEPAGE_URL "https://github.com/sanecopy/sanecopy")
set(CPACK_PACKAGE_CONTACT "${SANECOPY_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${SANECOPY_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # sanecopy_<version>_<arch>.deb
# The extended description under the summary line; CPack indents it and turns the empty line into " .".
set(CPACK_PACKAGE_DESCRIPTION "SaneCopy copies files to USB sticks, SD cards and slow disks at the pace the
device really takes the data, so that 100 % means the data is on the device
and it is safe to unplug. Progress and speed count only bytes on the device,
the copy never piles up gigabytes of unwritten data in memory, and every file
is renamed into place only once it is safe.

This package contains the Qt 6 window (sanecopy), the command-line copier
(sanecp) and, when built, the KIO worker and the \"Safe Copy To…\" entry for
Dolphin's context menu.")
# Libraries the binaries link come from dpkg-shlibdeps (dpkg-dev). What it can't see, because Qt loads it at
# run time as a plugin: the SVG icon engine that draws the app icon (libqt6svg6).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libqt6svg6")
# Eject, and the drive names in the destination list, go through UDisks2; without it the app still copies.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "udisks2")

if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    message(STATUS "CPack: the .deb will install under ${CMAKE_INSTALL_PREFIX}; "
                   "configure with -DCMAKE_INSTALL_PREFIX=/usr for a Debian package")
endif()

include(CPack)
