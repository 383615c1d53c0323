"""The transaction coordinator (Kafka's TransactionCoordinator), shaped like broker.group.

- :mod:`broker.txn.states`: the state machine as a table of valid previous states;
- :mod:`broker.txn.model`: a transactional id's metadata and the transit a record writes;
- :mod:`broker.txn.records`: TransactionLogKey/Value as Kafka 3.x writes them;
- :mod:`broker.txn.rules`: what each request does to the metadata (pure);
- :mod:`broker.txn.topic`: ``__transaction_state`` created on first use;
- :mod:`broker.txn.store`: the partitions of ``__transaction_state`` led here (load,
  unload, appends);
- :mod:`broker.txn.markers`: the channel that sends WriteTxnMarkers to partition leaders
  (:mod:`broker.txn.sender`: over the inter-broker listener);
- :mod:`broker.txn.coordinator`: the runtime tying them together, and the timeouts;
- :mod:`broker.txn.wiring`: how the broker's assembly builds it.

Transactions are offered while ``minikafka.transactions.enable`` is true (the default).
Set to false, a broker refuses transactional producers as it did before transactions
existed (TRANSACTIONAL_ID_AUTHORIZATION_FAILED from InitProducerId, FindCoordinator and
Produce): a way to keep exactly-once clients off a cluster, as an ACL on transactional ids
would in Kafka.
"""

from __future__ import annotations

from broker.config import BrokerConfig

#: the switch: false, transactional producers are refused
SWITCH_KEY = "minikafka.transactions.enable"


def transactions_enabled(config: BrokerConfig) -> bool:
    """Whether this broker offers transactions (``minikafka.transactions.enable``)."""
    return config.get_bool(SWITCH_KEY)
