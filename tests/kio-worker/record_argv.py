#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Stands in for a program a service menu runs (sanecopy, dolphin): appends its argv, as hex of the raw bytes,
one JSON line per run, to the file named by $RECORD_ARGV_TO."""
import json
import os
import sys

with open(os.environ["RECORD_ARGV_TO"], "a") as f:
    f.write(json.dumps([os.fsencode(a).hex() for a in sys.argv]) + "\n")
