#!/usr/bin/env python3
"""list-cache.py DIR [--corrupt]: prints each emulator entry of a fusec cache
directory with its files (lock and temporary files would show too), then
the count; --corrupt overwrites every precompiled header with garbage."""
import os
import sys

root = sys.argv[1]
entries = sorted(os.listdir(root)) if os.path.isdir(root) else []
for entry in entries:
    files = sorted(os.listdir(os.path.join(root, entry)))
    if "--corrupt" in sys.argv:
        for name in files:
            if name.endswith(".gch"):
                with open(os.path.join(root, entry, name), "wb") as f:
                    f.write(b"not a precompiled header\n" * 100)
    print("entry %s: %s" % (entry, " ".join(files)))
print("%d entries" % len(entries))
