"""The transaction coordinator (Kafka's TransactionCoordinator), shaped like broker.group.

- :mod:`broker.txn.states`: the state machine as a table of valid previous states;
- :mod:`broker.txn.model`: a transactional id's metadata and the transit a record writes;
- :mod:`broker.txn.records`: TransactionLogKey/Value as Kafka 3.x writes them;
- :mod:`broker.txn.rules`: what each request does to the metadata (pure);
- :mod:`broker.txn.topic`: ``__transaction_state`` created on first use;
- :mod:`broker.txn.store`: the partitions of ``__transaction_state`` led here (load,
  unload, appends);
- :mod:`broker.txn.markers`: the channel that sends WriteTxnMarkers to partition leaders;
- :mod:`broker.txn.coordinator`: the runtime tying them together, and the timeouts.

Transactions are offered only when ``minikafka.transactions.enable`` (a temporary key,
:func:`transactions_enabled`) is true.
"""

from __future__ import annotations

from broker.config import BrokerConfig

#: the temporary switch: off, transactional producers are refused as before
SWITCH_KEY = "minikafka.transactions.enable"


def transactions_enabled(config: BrokerConfig) -> bool:
    """Whether this broker offers transactions (``minikafka.transactions.enable``)."""
    return config.get_bool(SWITCH_KEY)
