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

Transactions are offered only while ``minikafka.transactions.enable`` is true. The key is
temporary and off by default: the coordinator here and the partition leaders' side
(WriteTxnMarkers, read_committed reads, pending transactional offsets) are built apart,
and transactional producers stay refused (TRANSACTIONAL_ID_AUTHORIZATION_FAILED from
InitProducerId, FindCoordinator and Produce) until both are in and the switch is turned
on; then the key goes away.
"""

from __future__ import annotations

from broker.config import BrokerConfig

#: the temporary switch: off, transactional producers are refused as before
SWITCH_KEY = "minikafka.transactions.enable"


def transactions_enabled(config: BrokerConfig) -> bool:
    """Whether this broker offers transactions (``minikafka.transactions.enable``)."""
    return config.get_bool(SWITCH_KEY)
