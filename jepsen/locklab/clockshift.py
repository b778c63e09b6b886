"""The lab's side of libraftlock-clockshift.so (jepsen/clockshift/clockshift.c): one small file per
process whose wall clock the lab may move. The process maps it read-only; the lab rewrites it under
a seqlock, so a reader never sees half a change."""

import mmap
import os
import struct
import time

MAGIC = 0x314B434F4C43524C  # "RLCLOCK1", as clockshift.c expects
LAYOUT = struct.Struct("<QQqqq")  # magic, seq, base_real_ns, base_fake_ns, rate_ppm
TRUE_RATE_PPM = 1_000_000


class ClockFile:
    """fake(real) = base_fake + (real - base_real) * rate_ppm / 1e6, for the processes started
    with RAFTLOCK_CLOCKSHIFT_FILE=path. Starts on the true clock."""

    def __init__(self, path):
        self.path = path
        with open(path, "wb") as f:
            f.write(LAYOUT.pack(MAGIC, 0, 0, 0, TRUE_RATE_PPM))
        self._fd = os.open(path, os.O_RDWR)
        self._map = mmap.mmap(self._fd, LAYOUT.size)
        self._seq = 0
        self._base_real = self._base_fake = 0
        self._rate_ppm = TRUE_RATE_PPM

    def close(self):
        self._map.close()
        os.close(self._fd)

    def env(self, library):
        """The environment entries that make a process read this file."""
        return [f"LD_PRELOAD={library}", f"RAFTLOCK_CLOCKSHIFT_FILE={self.path}"]

    def now_ns(self, real_ns=None):
        """What the shifted process's wall clock reads now (or at real_ns)."""
        real = time.time_ns() if real_ns is None else real_ns
        return self._base_fake + (real - self._base_real) * self._rate_ppm // TRUE_RATE_PPM

    def step(self, seconds):
        """The clock jumps by `seconds` (forward if positive) and keeps its rate."""
        real = time.time_ns()
        self._write(real, self.now_ns(real) + int(seconds * 1e9), self._rate_ppm)

    def run_at(self, rate):
        """From now on the clock advances `rate` seconds per real second, from where it is."""
        real = time.time_ns()
        self._write(real, self.now_ns(real), int(rate * TRUE_RATE_PPM))

    def reset(self):
        """Back to the true time and rate (an NTP step)."""
        real = time.time_ns()
        self._write(real, real, TRUE_RATE_PPM)

    def _write(self, base_real, base_fake, rate_ppm):
        assert rate_ppm > 0, "a clock that stops or runs backwards is not a clock fault we model"
        self._seq += 1  # odd: readers retry until the write is whole
        self._map[8:16] = struct.pack("<Q", self._seq)
        self._map[16:40] = struct.pack("<qqq", base_real, base_fake, rate_ppm)
        self._seq += 1
        self._map[8:16] = struct.pack("<Q", self._seq)
        self._base_real, self._base_fake, self._rate_ppm = base_real, base_fake, rate_ppm
