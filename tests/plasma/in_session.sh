#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs inside the Plasma session of plasma_check.py: SaneCopy's window copies /tmp/src/big.bin onto /media/stick (a
# throttled loop stick), as a user starts it with --to. Every Notify call and every job view call on the session
# bus is logged to /mnt/out/bus.log, and the screen is photographed while it copies and once it is done.
set -u
rm -f /media/stick/big.bin
dbus-monitor --session "interface='org.freedesktop.Notifications',member='Notify'" \
    "interface='org.kde.JobViewServer',member='requestView'" "interface='org.kde.JobViewV2'" >/mnt/out/bus.log 2>&1 &
monitor=$!
sleep 1
sanecopy --to /media/stick /tmp/src/big.bin >/mnt/out/sanecopy.log 2>&1 &
app=$!
sleep 5
import -window root /mnt/out/plasma-job-running.png
for _ in $(seq 60); do
    [ -f /media/stick/big.bin ] && break
    sleep 1
done
sleep 2
import -window root /mnt/out/plasma-job-done.png
kill "$app" "$monitor" 2>/dev/null
wait
cmp /tmp/src/big.bin /media/stick/big.bin
