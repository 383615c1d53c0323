"""The ZooKeeper layer: paths, JSON payloads and the kazoo-backed client (DESIGN.md s.3)."""
