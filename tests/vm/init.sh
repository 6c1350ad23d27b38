#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# PID 1 of the USB test guest: the kernel's own drivers for the stick, then the scenarios, then power off.
# Everything the scenarios print goes to the serial console, which the host reads (tests/vm/run.py).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 LC_ALL=C.UTF-8 HOME=/root
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sys /sys
mountpoint -q /dev || mount -t devtmpfs dev /dev
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
mountpoint -q /run || mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t debugfs none /sys/kernel/debug
# The guest's clock starts from the host's; nothing here needs more.
modprobe -a xhci_pci usb_storage sd_mod vfat exfat ntfs3 nls_cp437 nls_iso8859_1 nls_utf8 fuse 2>&1
# Quiet the console: kernel messages about the pulled stick would interleave with the scenario lines.
echo 1 >/proc/sys/kernel/printk
python3 -u /sanecopy-vm/guest.py
echo "@@SANECOPY END rc=$?@@"
sync
echo o >/proc/sysrq-trigger
# Power-off shuts the disks down first: a new program could no longer be read, and PID 1 dying would panic.
# The shell waits on its own builtins.
while :; do :; done
