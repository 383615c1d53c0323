"""Client quotas (byte rates per user and client id): see ``zk.quota_entities``
for the entities and their precedence, ``rate`` for the measurement, ``manager`` for the
per-broker table and ``enforce`` for how a Produce or Fetch answer is throttled."""
