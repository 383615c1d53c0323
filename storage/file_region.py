"""FileRegion: a byte range of a segment file, handed to the network layer.

A fetch never copies record bytes into Python: the log returns where they are, and the
broker passes ``fileno()``, ``position`` and ``len()`` to ``os.sendfile``. Replicas' tests
and tools that want the bytes call :meth:`read`.

The file descriptor belongs to the segment. A segment that retention or truncation removes
is renamed at once but closed only after ``file.delete.delay.ms`` (the delete-logs task),
so a region handed out just before stays readable for a fetch in flight.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from storage.errors import StorageError


@dataclass(frozen=True, slots=True)
class FileRegion:
    fd: int
    position: int
    length: int

    def __len__(self) -> int:
        return self.length

    def fileno(self) -> int:
        return self.fd

    def read(self) -> bytes:
        """The region's bytes (for replicas, tools and tests; not the fetch path)."""
        try:
            data = os.pread(self.fd, self.length, self.position)
            if len(data) == self.length:
                return data
            parts = [data]
            got = len(data)
            while got < self.length:
                chunk = os.pread(self.fd, self.length - got, self.position + got)
                if not chunk:
                    raise StorageError(f"file ended {self.length - got} bytes early")
                parts.append(chunk)
                got += len(chunk)
            return b"".join(parts)
        except OSError as exc:
            if isinstance(exc, StorageError):
                raise
            raise StorageError(f"reading {self.length} bytes at {self.position}: {exc}") from exc
