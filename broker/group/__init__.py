"""The group coordinator: consumer groups and their committed offsets.

A broker is the coordinator of the groups whose offsets partition it leads (the
partition of ``__consumer_offsets`` a group id hashes to). The package splits as Kafka's
coordinator does:

- ``model``: the shared vocabulary -- a group's state, its members, its committed offsets;
- ``store``: the seam between the two halves below, as a Protocol;
- the coordinator half: the classic group protocol (join, sync, heartbeat, leave) as a
  state machine -- what each request changes (``coordinator``), carried out over time by
  the join phase, the assignment and the session timers (``rebalance``) over per-group
  runtime state (``runtime``) -- the committed offsets (``offsets``: who may commit,
  OffsetFetch, OffsetDelete), and the requests and results the handlers exchange with
  them (``results``);
- the metadata-manager half: ``__consumer_offsets`` itself -- which partition a group
  lives in (``partitioner``), the record formats (``records``), creating the topic
  (``offsets_topic``), appending with acks=all, loading a partition's groups when this
  broker becomes its leader (``load``) and dropping them when it stops being one
  (``manager``), expiring old commits (``expiry``).

Everything here runs on the broker's event loop.
"""
