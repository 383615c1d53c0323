"""The ZooKeeper layer: Kafka's znode layout, its JSON payloads, and the client over kazoo.

asyncio code talks to ZooKeeper through one object, ``zk.facade.ZkFacade``: each of its
coroutines runs one blocking call of a znode family on a worker thread. Below it:

- ``paths``, ``codec``, ``model``, ``errors``: znode paths, payloads, value types, errors.
- ``session``: ZkSession (the kazoo connection, shared reads), persistent paths, cluster id.
- ``transactions``: typed multi-op operations, plain and fenced (epoch-checked) commits.
- one module per znode family, each a set of blocking functions over a ZkSession:
  ``brokers`` (/brokers/ids, /brokers/seqid), ``topics`` (/brokers/topics/<t>),
  ``partition_states`` (.../partitions/<p>/state), ``configs`` (/config/<type>/<name>,
  /config/changes), ``controller_election`` (/controller, /controller_epoch),
  ``producer_ids`` (/latest_producer_id_block), ``isr_notifications``
  (/isr_change_notification), ``admin`` (/admin/delete_topics, /admin/reassign_partitions,
  /admin/preferred_replica_election), ``scram`` (SCRAM credentials under
  /config/users/<user>, an entity type of the ``configs`` layout; its payload and name
  encoding in ``scram_codec``, pure).
- ``store``: the controller's PartitionStateStore over the facade; ``latency``: the
  ZooKeeperRequestLatencyMs probe.

Families still to come each get a module of their own here, with their coroutines added
to the facade the same way: ACLs under /kafka-acl/<type>/<name> and
/kafka-acl-extended/prefixed/... with their change notifications (``acls``), and v0
consumer offsets under /consumers/<group>/offsets/<topic>/<partition>
(``consumer_offsets``).
"""
