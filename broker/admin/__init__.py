"""Administration: replica assignment (pure), topic writes to ZooKeeper, dynamic configs,
and the rules of users' SCRAM credential requests (pure)."""
