"""The ZooKeeper layer: paths, JSON payloads and the kazoo-backed client (docs/architecture.md)."""
