"""minikafka controller package: controller election, state machines, requests to brokers.

The ZooKeeper data layer (znode paths, codecs, the ``ZkFacade`` client and the value types
TopicPartition, LeaderAndIsr, BrokerInfo, TopicAssignment) is the top-level ``zk``
package; the connections to brokers are the top-level ``client`` package's.

Modules, by concept:

- ``model``: the controller's own value type, PartitionReplica.
- ``states``: replica (7) and partition (4) states as transition tables; ``check_transition``.
- ``election_strategies``: the four leader-election strategies, pure functions.
- ``context``: ControllerContext, the controller's in-memory view (pure).
- ``replica_state_machine`` / ``partition_state_machine``: drive the context through the
  tables; persist decisions through ``store.PartitionStateStore``.
- ``request_batch`` collects the requests one event causes; ``request_bodies`` builds the
  LeaderAndIsr (v5), UpdateMetadata (v7) and StopReplica (v3) bodies (pure).
- ``channel``: the ControllerChannelManager interface and a recording fake;
  ``tcp_channel.TcpChannelManager``: the real one (a queue, a ``client.Connection``, retries
  per broker).
- ``events``: the controller's events and its single-consumer ControllerEventManager.
- ``controller``: KafkaController, the owner that wires the handler modules below to the
  event queue (its event table), and the broker-facing API; ``parts``: the bundle of
  shared parts (context, state machines, events, channel, ZooKeeper) each handler gets.
- ``election_lifecycle``: registration, session states, the election, failover and
  resignation (``election_step``: the pure decision after reading /controller).
- ``broker_changes``: brokers starting and dying, replicas on failed log directories,
  controlled shutdown.
- ``topic_changes``: new topics and partitions, the deletion queue (owning the
  ``topic_deletion.TopicDeletionManager``), StopReplica answers.
- ``preferred_leaders``: the leader-imbalance check, /admin/preferred_replica_election,
  ElectLeaders; ``preferred_leader_rules``: which partitions go back to their preferred
  leader (pure).
- ``isr_changes``: /isr_change_notification.
- ``reassigner`` carries out partition reassignments; ``reassignment_rules``: their pure
  plan (replica sets, validation, phases).
- ``store``: the PartitionStateStore interface (``zk.store.ZkPartitionStateStore`` is the
  real one) and an in-memory fake.

What the broker assembly calls::

    zk = await ZkFacade.connect(config.zookeeper_connect, session_timeout_s)
    await zk.ensure_persistent_paths(); cluster_id = await zk.get_or_create_cluster_id()
    broker_id = configured_id if configured_id >= 0 else await zk.generate_broker_id()
    # the listener brokers are reached on, and the broker's ClientSecurity for it
    channel_config = ChannelConfig(security, listener_name=control_plane_listener)
    controller = KafkaController(
        zk, BrokerInfo(broker_id, endpoints, rack), TcpChannelManager(broker_id,
        channel_config), clock,
        ControllerConfig(unclean_leader_election_enable=..., auto_leader_rebalance_enable=...,
        leader_imbalance_check_interval_ms=..., leader_imbalance_per_broker_percentage=...),
        scheduler=scheduler)      # timer.Scheduler: runs the periodic leader-imbalance check
    broker_epoch = await controller.start()   # registers /brokers/ids/<id>, joins election
    ...
    # ControlledShutdown (7) handler on the control plane:
    result = await controller.controlled_shutdown(body.broker_id, body.broker_epoch)
    response_body = controlled_shutdown_response(result)
    # on SIGTERM, before closing listeners:
    await request_controlled_shutdown(zk, broker_id, controller.broker_epoch, config=channel_config)
    await controller.shutdown(); await zk.close()  # closing the session drops /brokers/ids/<id>

Topic admin (CreateTopics/CreatePartitions handlers) writes through the same client:
``await zk.create_topic(TopicAssignment(...), config)``, ``await zk.get_topic(name)``,
``await zk.set_topic_assignment(assignment, version)``; InitProducerId takes blocks with
``await zk.allocate_producer_id_block(broker_id)``. Each runs on a worker thread of the
facade's, so the event loop never waits on ZooKeeper.
"""
