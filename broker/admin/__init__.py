"""Topic administration: replica assignment (pure) and topic writes to ZooKeeper."""
