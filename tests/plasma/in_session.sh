#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs inside the Plasma session of plasma_check.py. Every Notify and CloseNotification call and every job view
# call on the session bus is logged to /mnt/out/bus.log.
#
#   in_session.sh window     SaneCopy's window copies /tmp/src/big.bin onto /media/stick (a throttled loop stick),
#                            as a user starts it with --to; the screen is photographed while it copies and once done.
#   in_session.sh kio-stall  the same file dropped through SaneCopy's KIO worker (kioclient --interactive copy
#                            onto sanecopy:/, as Dolphin's "Safe Copy" place does); /mnt/out/copying tells
#                            plasma_check.py to stall the stick, which it lifts again and says so in
#                            /mnt/out/restored. The screen is photographed during the stall and once done.
set -u
mode=${1:-window}
rm -f /media/stick/big.bin /mnt/out/copying /mnt/out/restored
dbus-monitor --session "interface='org.freedesktop.Notifications',member='Notify'" \
    "interface='org.freedesktop.Notifications',member='CloseNotification'" \
    "interface='org.kde.JobViewServer',member='requestView'" "interface='org.kde.JobViewV2'" \
    "interface='org.kde.JobViewServerV2',member='requestView'" "interface='org.kde.JobViewV3'" \
    >/mnt/out/bus.log 2>&1 &
monitor=$!
sleep 1

wait_for_copy() {
    for _ in $(seq "$1"); do
        [ -f /media/stick/big.bin ] && return
        sleep 1
    done
}

if [ "$mode" = kio-stall ]; then
    kioclient --interactive copy file:///tmp/src/big.bin sanecopy:///media/stick/big.bin \
        >/mnt/out/kioclient.log 2>&1 &
    app=$!
    # A stall counts only once the copy has moved: wait for its first 8 MiB on the stick.
    for _ in $(seq 60); do
        [ -n "$(find /media/stick -name '*.part' -size +8M)" ] && break
        sleep 0.5
    done
    touch /mnt/out/copying
    sleep 12 # the stick stalls as this file appears, and the worker says so 5-7 s into it
    import -window root /mnt/out/plasma-kio-stalled.png
    for _ in $(seq 60); do
        [ -f /mnt/out/restored ] && break
        sleep 1
    done
    wait "$app"
    echo "kioclient exited $?"
    sleep 2
    import -window root /mnt/out/plasma-kio-done.png
else
    sanecopy --to /media/stick /tmp/src/big.bin >/mnt/out/sanecopy.log 2>&1 &
    app=$!
    sleep 5
    import -window root /mnt/out/plasma-job-running.png
    wait_for_copy 60
    sleep 2
    import -window root /mnt/out/plasma-job-done.png
fi
kill "$app" "$monitor" 2>/dev/null
wait
cmp /tmp/src/big.bin /media/stick/big.bin
